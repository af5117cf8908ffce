package actors

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// finishByConcession plays a few turns, has seat 1 concede, and returns the
// last seq before the end (what a seat whose connection moved just before
// it last saw) and the GameFinished that seat 0 got live.
func finishByConcession(t *testing.T, tn *testNode, id string) (before int64, fin finished) {
	t.Helper()
	seats, sinks := tn.openBoth(t, id)
	before = endTurns(t, seats, sinks, 1, 3, nil)
	sendIntent(t, seats[1], "concede", before, protocol.Concede{})
	if res := expectResult(t, sinks[1], "concede"); !res.Accepted {
		t.Fatalf("concede: %+v, want accepted", res)
	}
	fin = waitFinished(t, sinks[0])
	if fin.Winner != 0 || fin.Reason != protocol.FinishConceded {
		t.Fatalf("finished = %+v, want seat 0 winning by concession", fin)
	}
	return before, fin
}

// expectResumedToEnd reads a resuming hello from after seq from and the
// events up to the end, and checks that they end with fin.
func expectResumedToEnd(t *testing.T, k *frameSink, from int64, fin finished) {
	t.Helper()
	if h := expectFrame[*protocol.ServerHello](t, k); !h.Resumed || h.EventSeq != fin.seq {
		t.Fatalf("hello resuming from %d after the end: %+v, want resumed at seq %d", from, h, fin.seq)
	}
	var got *protocol.GameFinishedEvent
	for last := from; last < fin.seq; {
		ev := expectFrame[*protocol.ServerEvents](t, k)
		if ev.FromSeq != last+1 {
			t.Fatalf("resumed events %d..%d after %d", ev.FromSeq, ev.ToSeq, last)
		}
		for _, e := range ev.Events {
			if g, ok := e.Event.(*protocol.GameFinishedEvent); ok {
				if e.Seq != fin.seq {
					t.Fatalf("GameFinished at seq %d, live at %d", e.Seq, fin.seq)
				}
				got = g
			}
		}
		last = ev.ToSeq
	}
	if got == nil || *got != fin.GameFinishedEvent {
		t.Fatalf("resumed events from %d ended with GameFinished %+v, want %+v", from, got, fin.GameFinishedEvent)
	}
}

// expectFinishedSnapshot reads a non-resuming hello and the snapshot that
// must carry the finish reason.
func expectFinishedSnapshot(t *testing.T, k *frameSink, fin finished) {
	t.Helper()
	if h := expectFrame[*protocol.ServerHello](t, k); h.Resumed {
		t.Fatalf("hello %+v, want a snapshot (resumed false)", h)
	}
	v := expectFrame[*protocol.ServerSnapshot](t, k).View
	if !v.IsFinished || v.Winner != fin.Winner || v.FinishReason == nil || *v.FinishReason != fin.Reason {
		t.Fatalf("snapshot of the finished match: finished=%v winner=%d reason=%v, want winner %d reason %v",
			v.IsFinished, v.Winner, v.FinishReason, fin.Winner, fin.Reason)
	}
}

// A seat that comes back after the end from the seq it last saw gets the
// events it missed, GameFinished with its reason last, on the member that
// ended the match and on another one after it died; a hello with no resume
// gets a snapshot that carries the reason.
func TestGrainResumeAfterEnd(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			inner := sk.open(t)
			tn := startTestNodeOn(t, fastTiming(), inner)
			id := tn.create(t, 0)
			before, fin := finishByConcession(t, tn, id)

			_, k := tn.open(t, id, 0, before)
			expectResumedToEnd(t, k, before, fin)
			_, k = tn.open(t, id, 1, 0)
			expectFinishedSnapshot(t, k, fin)

			// The member dies once the match is marked finished (its final
			// snapshot is written first): the next member recovers it from
			// that snapshot and replays the log for the missing events.
			waitFor(t, "the match to be marked finished", func() bool { return !unfinished(t, inner, id) })
			tn.node.Kill()
			again := startTestNodeOn(t, fastTiming(), inner)
			_, k = again.open(t, id, 0, before)
			expectResumedToEnd(t, k, before, fin)
			if n := testutil.ToFloat64(again.metrics.JournalRebuilds); n != 1 {
				t.Fatalf("%v journal rebuilds on the new member, want 1 (the resume replayed the log)", n)
			}
			// Resuming from the end itself: resumed, with nothing to catch up.
			_, k = again.open(t, id, 1, fin.seq)
			if h := expectFrame[*protocol.ServerHello](t, k); !h.Resumed || h.EventSeq != fin.seq {
				t.Fatalf("hello resuming from the last seq: %+v", h)
			}
			if ev := expectFrame[*protocol.ServerEvents](t, k); ev.FromSeq != fin.seq+1 || ev.ToSeq != fin.seq || len(ev.Events) != 0 {
				t.Fatalf("resume from the last seq: events %d..%d (%d), want none", ev.FromSeq, ev.ToSeq, len(ev.Events))
			}
			_, k = again.open(t, id, 0, 0)
			expectFinishedSnapshot(t, k, fin)
		})
	}
}

// Once retention has pruned a finished match's log, a seat resuming from
// before the end can no longer get the events: it gets a snapshot, which
// still says why the match ended.
func TestGrainResumeAfterEndPrunedLog(t *testing.T) {
	var inner persistence.Store
	for _, sk := range storeKinds {
		if sk.name == "postgres" {
			inner = sk.open(t) // the only store with retention
		}
	}
	tn := startTestNodeOn(t, fastTiming(), inner)
	id := tn.create(t, 0)
	before, fin := finishByConcession(t, tn, id)
	waitFor(t, "the match to be marked finished", func() bool { return !unfinished(t, inner, id) })
	tn.node.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m, _, err := inner.(persistence.Retention).PruneFinishedLogs(ctx, time.Now().Add(time.Hour), 10); err != nil || m != 1 {
		t.Fatalf("prune: %d matches, %v; want the finished match pruned", m, err)
	}
	again := startTestNodeOn(t, fastTiming(), inner)
	_, k := again.open(t, id, 0, before)
	expectFinishedSnapshot(t, k, fin)
}
