package actors

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
	"github.com/matchgrain/matchgrain/protocol"
)

func fullView(t *testing.T, s *testSeat, k *frameSink) protocol.MatchView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Resync(ctx, 0, true); err != nil {
		t.Fatalf("resync: %v", err)
	}
	for {
		if snap, ok := k.next(t).(*protocol.ServerSnapshot); ok {
			return snap.View
		}
	}
}

// A write that landed but whose acknowledgement was lost: the activation
// halts and answers Unavailable, the cluster request re-sends the intent to a new
// activation rebuilt from the log, and there it is a duplicate, not a second
// application.
func TestGrainLostAppendAckIsNotAppliedTwice(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) { testLostAppendAck(t, startTestNodeOn(t, fastTiming(), sk.open(t))) })
	}
}

func testLostAppendAck(t *testing.T, tn *testNode) {
	id := tn.create(t, 0)
	s0, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	expectFrame[*protocol.ServerSnapshot](t, k0)

	tn.store.LoseReplyNext(persistence.MethodAppend, 1, nil)
	sendIntent(t, s0, "x", 1, protocol.EndTurn{})
	// The halted activation answers Unavailable; the request re-sends "x"
	// to a new activation, which finds it in the rebuilt journal.
	res := expectResult(t, k0, "x")
	if !res.Accepted || !res.Duplicate || res.EventSeq != 4 {
		t.Fatalf("intent whose append ack was lost: %+v, want a duplicate of seq 4", res)
	}
	sendIntent(t, s0, "x", 1, protocol.EndTurn{})
	res = expectResult(t, k0, "x")
	if !res.Accepted || !res.Duplicate || res.EventSeq != 4 {
		t.Fatalf("re-sent intent: %+v, want a duplicate of seq 4", res)
	}
	if v := fullView(t, s0, k0); v.TurnNumber != 1 || v.EventSeq != 4 {
		t.Fatalf("after recovery: turn %d seq %d, want turn 1 seq 4 (applied once)", v.TurnNumber, v.EventSeq)
	}
}

// Another activation claims the match: the old one is fenced at its next
// write and halts (Unavailable, no result), and the seat continues on a newer
// activation where the intent is applied exactly once.
func TestGrainFencedActivationStops(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) { testFenced(t, startTestNodeOn(t, fastTiming(), sk.open(t))) })
	}
}

func testFenced(t *testing.T, tn *testNode) {
	id := tn.create(t, 0)
	s0, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	expectFrame[*protocol.ServerSnapshot](t, k0)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := tn.store.Inner().Claim(ctx, id, "intruder")
	if err != nil {
		t.Fatalf("intruding claim: %v", err)
	}
	sendIntent(t, s0, "y", 1, protocol.EndTurn{})
	// The fenced activation's write fails and it answers Unavailable; the
	// request re-sends "y" to a newer activation, which applies it once.
	res := expectResult(t, k0, "y")
	if !res.Accepted || res.Duplicate || res.EventSeq != 4 {
		t.Fatalf("intent sent to the fenced activation: %+v, want accepted once at seq 4", res)
	}
	if e := tn.seatEpoch(s0); e <= rec.Epoch {
		t.Fatalf("seat still on epoch %d, intruder claimed %d", e, rec.Epoch)
	}
	// The refused write is counted and exported: the chaos tests read the
	// same counter from a real member that woke up stale.
	if n := tn.metrics.FencedWrites(); n != 1 {
		t.Fatalf("fenced writes counted: %d, want 1 (the stale activation's append)", n)
	}
	mfs, err := tn.registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	exported := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "matchgrain_store_fenced_writes_total" && len(mf.GetMetric()) == 1 {
			exported = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if exported != 1 {
		t.Fatalf("matchgrain_store_fenced_writes_total exported as %v, want 1", exported)
	}
	// The halt is counted under its typed reason, the other reasons at 0.
	halts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "matchgrain_grain_halts_total" {
			for _, m := range mf.GetMetric() {
				halts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if halts[HaltFenced.String()] != 1 || halts[HaltAppendUnknown.String()] != 0 || len(halts) != len(haltReasonNames)-1 {
		t.Fatalf("matchgrain_grain_halts_total: %v, want fenced 1 and every other reason at 0", halts)
	}
	sendIntent(t, s0, "y", 1, protocol.EndTurn{})
	if res := expectResult(t, k0, "y"); !res.Accepted || !res.Duplicate || res.EventSeq != 4 {
		t.Fatalf("re-sent intent: %+v, want a duplicate of seq 4", res)
	}
}

// A member that does not own a match in its view (protoactor's placement
// activates whatever a caller with an older view asks for) neither claims
// nor serves it, and a running activation stops once its member's view
// moves the match away; the seat carries on when an owner takes it back.
func TestGrainServesOnlyWhereOwned(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	s0, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	expectFrame[*protocol.ServerSnapshot](t, k0)
	s1, k1 := tn.open(t, id, 1, 0)
	expectFrame[*protocol.ServerHello](t, k1)
	sendIntent(t, s0, "owned", 1, protocol.EndTurn{})
	if res := expectResult(t, k0, "owned"); !res.Accepted {
		t.Fatalf("intent while owned: %+v", res)
	}
	epoch := tn.seatEpoch(s0)

	tn.notOwner.Store(true)
	claims := tn.store.Calls(persistence.MethodClaim)
	// The running activation stops at its next tick (every keep-alive,
	// 100 ms here); a new one refuses and waits without claiming. A resync (it
	// changes nothing) tells when the grain stopped serving.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := s1.Resync(rctx, 1, false)
		rcancel()
		if errors.Is(err, errUnavailable) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the activation still serves 10 s after its member stopped owning the match (resync: %v)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s1.Intent(ctx, "elsewhere", 4, protocol.EndTurn{}); !errors.Is(err, errUnavailable) {
		t.Fatalf("intent while another member owns the match: %v, want errUnavailable", err)
	}
	if n := tn.store.Calls(persistence.MethodClaim) - claims; n != 0 {
		t.Fatalf("%d claims by a member that does not own the match", n)
	}

	tn.notOwner.Store(false)
	sendIntent(t, s1, "elsewhere", 4, protocol.EndTurn{})
	if res := expectResult(t, k1, "elsewhere"); !res.Accepted || res.Duplicate {
		t.Fatalf("intent once owned again: %+v, want accepted once", res)
	}
	if e := tn.seatEpoch(s1); e != epoch+1 {
		t.Fatalf("seat on epoch %d after the match came back, want one new activation (%d)", e, epoch+1)
	}
}

// An activation that a seat knows to be older than one it has had frames
// from stops at once instead of answering from its old state, which the
// seat would drop (frames of an older epoch): a resync through it would
// never be answered.
func TestGrainSupersededBySeatsEpoch(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	s0, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	expectFrame[*protocol.ServerSnapshot](t, k0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Another activation claimed the match and reached this seat; this one
	// has not written since, so the fence has not stopped it.
	rec, err := tn.store.Inner().Claim(ctx, id, "elsewhere")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	s0.epoch.Store(rec.Epoch)
	if err := s0.Resync(ctx, 1, true); err != nil {
		t.Fatalf("resync: %v", err)
	}
	var snap *protocol.ServerSnapshot
	for snap == nil {
		snap, _ = k0.next(t).(*protocol.ServerSnapshot) // the re-attach's resume frames come first
	}
	if e := tn.seatEpoch(s0); e <= rec.Epoch || snap.View.EventSeq != 1 {
		t.Fatalf("resync answered on epoch %d at seq %d, want a newer activation than %d at seq 1", e, snap.View.EventSeq, rec.Epoch)
	}
}

// expectResult skips other frames until the result of intent id.
func expectResult(t *testing.T, k *frameSink, id string) *protocol.ServerIntentResult {
	t.Helper()
	for {
		if r, ok := k.next(t).(*protocol.ServerIntentResult); ok && r.IntentID == id {
			return r
		}
	}
}

func (tn *testNode) seatEpoch(s *testSeat) int64 { return s.epoch.Load() }

func TestGrainDecisionTimeoutEndsMatch(t *testing.T) {
	timing := fastTiming()
	timing.DecisionTime = 150 * time.Millisecond
	timing.BankTime = 200 * time.Millisecond
	tn := startTestNode(t, timing)
	// The first decider's clock runs from the match's creation
	// (docs/protocol.md), so the lower bound is measured from before it:
	// measured from after, a slow CreateMatch under load made it look early.
	start := time.Now()
	id := tn.create(t, 0)
	_, k0 := tn.open(t, id, 0, 0)
	_, k1 := tn.open(t, id, 1, 0)
	for _, k := range []*frameSink{k0, k1} {
		fin := waitFinished(t, k)
		if fin.Winner != 1 || fin.Reason != protocol.FinishTimeout {
			t.Fatalf("finished = %+v, want seat 1 winning on timeout", fin)
		}
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("timeout fired after %v, before decision+bank (350 ms)", el)
	}
}

func TestGrainAbsenceEndsMatch(t *testing.T) {
	timing := fastTiming()
	timing.AbsenceTimeout = 400 * time.Millisecond
	tn := startTestNode(t, timing)
	id := tn.create(t, 1)
	_, k0 := tn.open(t, id, 0, 0) // seat 1 never connects
	fin := waitFinished(t, k0)
	if fin.Winner != 0 || fin.Reason != protocol.FinishAbsence {
		t.Fatalf("finished = %+v, want seat 0 winning by absence", fin)
	}
	// A finished match still answers a hello: a fresh one gets a snapshot
	// with isFinished and the reason.
	s1, k1 := tn.open(t, id, 1, 0)
	h := expectFrame[*protocol.ServerHello](t, k1)
	snap := expectFrame[*protocol.ServerSnapshot](t, k1)
	if h.Resumed || !snap.View.IsFinished || snap.View.Winner != 0 || snap.View.FinishReason == nil || *snap.View.FinishReason != protocol.FinishAbsence {
		t.Fatalf("hello %+v / view finished=%v winner=%d reason=%v", h, snap.View.IsFinished, snap.View.Winner, snap.View.FinishReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s1.Intent(ctx, "late", snap.View.EventSeq, protocol.EndTurn{}); err != nil {
		t.Fatalf("late intent: %v", err)
	}
	if r := expectFrame[*protocol.ServerIntentResult](t, k1); r.Code != protocol.RejectMatchFinished {
		t.Fatalf("late intent result %+v, want MatchFinished", r)
	}
}

func TestGrainSendsClockPeriodically(t *testing.T) {
	timing := fastTiming()
	timing.ClockInterval = 100 * time.Millisecond
	// A seat that misses 3 keep-alives is dropped and re-attached, and the
	// re-attach sends a ServerClock of its own: with the 100 ms keep-alive
	// of fastTiming that happens on a loaded machine under -race, so keep
	// the seat's keep-alive out of this test's way.
	timing.SeatKeepAlive = 2 * time.Second
	tn := startTestNode(t, timing)
	id := tn.create(t, 0)
	_, k0 := tn.open(t, id, 0, 0)
	// The attach sends one ServerClock, then five periodic ones follow,
	// each at least an interval after the previous by the server's own
	// time; the 10 s bound (20 intervals per clock) only keeps a broken
	// timer from hanging the test on a loaded machine.
	var clocks []protocol.ClockView
	deadline := time.After(10 * time.Second)
	for len(clocks) < 6 {
		select {
		case f := <-k0.frames:
			if c, ok := f.(*protocol.ServerClock); ok {
				clocks = append(clocks, c.Clock)
			}
		case <-deadline:
			t.Fatalf("%d ServerClock frames in 10 s at a 100 ms interval", len(clocks))
		}
	}
	// The periodic clock keeps its phase like a ticker: one that fires late
	// is followed by one that comes early, so a single gap may be shorter
	// than the interval, and server times are truncated to milliseconds.
	// So: no gap shorter than half an interval (no spurious extra clocks),
	// and the periodic ones span at least their intervals, less 1 ms of
	// truncation at each end.
	interval := timing.ClockInterval.Milliseconds()
	for i := 2; i < len(clocks); i++ {
		if gap := clocks[i].ServerTimeMs - clocks[i-1].ServerTimeMs; gap < interval/2 {
			t.Fatalf("ServerClock %d came %d ms after the previous one, interval %v", i, gap, timing.ClockInterval)
		}
	}
	if span, want := clocks[len(clocks)-1].ServerTimeMs-clocks[1].ServerTimeMs, int64(len(clocks)-2)*interval-2; span < want {
		t.Fatalf("%d periodic ServerClocks spanned %d ms, want at least %d at a %v interval", len(clocks)-1, span, want, timing.ClockInterval)
	}
	last := clocks[len(clocks)-1]
	if !last.IsRunning || last.DecisionPlayer != 0 || last.TurnDeadlineMs == 0 || last.Bank0Ms != timing.BankTime.Milliseconds() {
		t.Fatalf("clock = %+v", last)
	}
}

type finished struct {
	protocol.GameFinishedEvent
	seq int64
}

func waitFinished(t *testing.T, k *frameSink) finished {
	t.Helper()
	for {
		if evs, ok := k.next(t).(*protocol.ServerEvents); ok {
			for _, e := range evs.Events {
				if g, ok := e.Event.(*protocol.GameFinishedEvent); ok {
					return finished{*g, e.Seq}
				}
			}
		}
	}
}

// A reactivated grain rebuilds its event journal from the durable log, so a
// client far behind the snapshot point resumes from events, not from a
// snapshot: its hello says resumed=true and the events follow from its seq.
func TestGrainJournalRebuiltAfterReactivation(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			timing := fastTiming()
			timing.SnapshotEvery = 2
			testJournalRebuilt(t, startTestNodeOn(t, timing, sk.open(t)))
		})
	}
}

// openBoth attaches both seats of match id afresh and reads their hellos.
func (tn *testNode) openBoth(t *testing.T, id string) ([2]*testSeat, [2]*frameSink) {
	t.Helper()
	var seats [2]*testSeat
	var sinks [2]*frameSink
	for s := range 2 {
		seats[s], sinks[s] = tn.open(t, id, s, 0)
		expectFrame[*protocol.ServerHello](t, sinks[s])
	}
	return seats, sinks
}

// endTurns plays n EndTurn intents, seat 0 first, from event seq seq; after
// each accepted one it calls then (if set) with the new seq, and it returns
// the last seq.
func endTurns(t *testing.T, seats [2]*testSeat, sinks [2]*frameSink, seq int64, n int, then func(seq int64)) int64 {
	t.Helper()
	for i := range n {
		s := i % 2
		sendIntent(t, seats[s], fmt.Sprintf("end-%d", i), seq, protocol.EndTurn{})
		res := expectResult(t, sinks[s], fmt.Sprintf("end-%d", i))
		if !res.Accepted {
			t.Fatalf("intent %d: %+v", i, res)
		}
		seq = res.EventSeq
		if then != nil {
			then(seq)
		}
	}
	return seq
}

// appendEncoded appends each event of evs as its seq and its encoding, so
// two event lists compare byte for byte.
func appendEncoded(t *testing.T, dst [][]byte, evs []protocol.EventEnvelope) [][]byte {
	t.Helper()
	for _, e := range evs {
		b, err := protocol.AppendEvent(binary.AppendVarint(nil, e.Seq), e.Event)
		if err != nil {
			t.Fatalf("encode event %d: %v", e.Seq, err)
		}
		dst = append(dst, b)
	}
	return dst
}

func testJournalRebuilt(t *testing.T, tn *testNode) {
	id := tn.create(t, 0)
	seats, sinks := tn.openBoth(t, id)
	seq := endTurns(t, seats, sinks, 1, 5, nil)
	// Another activation takes the match over: the next intent finds this
	// one fenced and lands on a new activation, rebuilt from snapshot + log.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := tn.store.Inner().Claim(ctx, id, "intruder"); err != nil {
		t.Fatalf("intruding claim: %v", err)
	}
	sendIntent(t, seats[1], "after", seq, protocol.EndTurn{})
	if res := expectResult(t, sinks[1], "after"); !res.Accepted || res.Duplicate {
		t.Fatalf("intent on the new activation: %+v", res)
	} else {
		seq = res.EventSeq
	}
	// Seat 0 comes back from seq 2, long before the snapshot point.
	_, k := tn.open(t, id, 0, 2)
	if h := expectFrame[*protocol.ServerHello](t, k); !h.Resumed || h.EventSeq != seq {
		t.Fatalf("hello after reactivation: %+v, want resumed at seq %d", h, seq)
	}
	ev := expectFrame[*protocol.ServerEvents](t, k)
	if ev.FromSeq != 3 || ev.ToSeq != seq || len(ev.Events) == 0 || ev.Events[0].Seq != 3 {
		t.Fatalf("resume from 2 after reactivation: events %d..%d (%d), want 3..%d", ev.FromSeq, ev.ToSeq, len(ev.Events), seq)
	}
}

// A grain keeps only its latest Timing.ResumeWindow events in memory: a
// hello resuming from before them gets every event since, rebuilt from the
// durable log and identical to what the seat saw live; a resync from before
// them gets a snapshot; a resume inside the window needs no replay.
func TestGrainResumeBeyondWindow(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			timing := fastTiming()
			timing.ResumeWindow = 4
			testResumeBeyondWindow(t, startTestNodeOn(t, timing, sk.open(t)))
		})
	}
}

func testResumeBeyondWindow(t *testing.T, tn *testNode) {
	id := tn.create(t, 0)
	seats, sinks := tn.openBoth(t, id)
	// Seat 0's events as they arrived live, encoded, from seq 2 on.
	var live [][]byte
	seq := endTurns(t, seats, sinks, 1, 12, func(seq int64) {
		for {
			ev, ok := sinks[0].next(t).(*protocol.ServerEvents)
			if !ok {
				continue
			}
			live = appendEncoded(t, live, ev.Events)
			if ev.ToSeq == seq {
				return
			}
		}
	})
	if seq < 3*4 {
		t.Fatalf("only %d events: the test needs many more than the window", seq)
	}
	rebuilds := func() float64 { return testutil.ToFloat64(tn.metrics.JournalRebuilds) }

	// A resync from seq 2 is long before the window: a snapshot.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := seats[0].Resync(ctx, 2, false); err != nil {
		t.Fatalf("resync: %v", err)
	}
	if snap := expectFrame[*protocol.ServerSnapshot](t, sinks[0]); snap.View.EventSeq != seq {
		t.Fatalf("resync snapshot at %d, want %d", snap.View.EventSeq, seq)
	}
	if n := rebuilds(); n != 0 {
		t.Fatalf("a resync replayed the log (%v rebuilds)", n)
	}

	// A hello from seq 1: every event from 2, as seat 0 saw them live.
	_, k := tn.open(t, id, 0, 1)
	if h := expectFrame[*protocol.ServerHello](t, k); !h.Resumed || h.EventSeq != seq {
		t.Fatalf("hello resuming from 1: %+v, want resumed at seq %d", h, seq)
	}
	var resumed [][]byte
	for last := int64(1); last < seq; {
		ev := expectFrame[*protocol.ServerEvents](t, k)
		if ev.FromSeq != last+1 {
			t.Fatalf("resumed events %d..%d after %d", ev.FromSeq, ev.ToSeq, last)
		}
		resumed = appendEncoded(t, resumed, ev.Events)
		last = ev.ToSeq
	}
	if !slices.EqualFunc(live, resumed, bytes.Equal) {
		t.Fatalf("resumed events differ from the live ones: %d live, %d resumed", len(live), len(resumed))
	}
	if n := rebuilds(); n != 1 {
		t.Fatalf("%v journal rebuilds after a resume from before the window, want 1", n)
	}

	// A hello from two events back is inside the window: no replay.
	_, k = tn.open(t, id, 0, seq-2)
	if h := expectFrame[*protocol.ServerHello](t, k); !h.Resumed {
		t.Fatalf("hello resuming inside the window: %+v", h)
	}
	ev := expectFrame[*protocol.ServerEvents](t, k)
	if ev.FromSeq != seq-1 || ev.ToSeq != seq {
		t.Fatalf("resume inside the window: events %d..%d, want %d..%d", ev.FromSeq, ev.ToSeq, seq-1, seq)
	}
	if got := appendEncoded(t, nil, ev.Events); !slices.EqualFunc(live[len(live)-len(got):], got, bytes.Equal) {
		t.Fatalf("events %d..%d resumed from the window differ from the live ones", ev.FromSeq, ev.ToSeq)
	}
	if n := rebuilds(); n != 1 {
		t.Fatalf("%v journal rebuilds after a resume inside the window, want still 1", n)
	}
}

// An intent re-sent after its match moved is a duplicate when the new
// activation learnt of it from the snapshot rather than the log tail, and
// whether that snapshot stores digests (version 2, written today) or intent
// ids (version 1, written by earlier releases): an upgrade must not let a
// duplicate be applied twice.
func TestGrainDuplicateAfterReactivationFromSnapshot(t *testing.T) {
	for _, sk := range storeKinds {
		for _, version := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/v%d", sk.name, version), func(t *testing.T) {
				testDuplicateFromSnapshot(t, startTestNodeOn(t, fastTiming(), sk.open(t)), version)
			})
		}
	}
}

func testDuplicateFromSnapshot(t *testing.T, tn *testNode, version int) {
	id := tn.create(t, 0)
	seats, sinks := tn.openBoth(t, id)
	type played struct {
		seat int
		id   string
		seq  int64
	}
	var intents []played
	seq := endTurns(t, seats, sinks, 1, 7, func(seq int64) {
		i := len(intents)
		intents = append(intents, played{i % 2, fmt.Sprintf("end-%d", i), seq})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The intruder's claim fences this activation; the next intent lands on
	// a new one, rebuilt from the snapshot the intruder leaves.
	rec, err := tn.store.Inner().Claim(ctx, id, "intruder")
	if err != nil {
		t.Fatalf("intruding claim: %v", err)
	}
	if rec.Snapshot == nil {
		t.Fatal("no snapshot after 7 intents with a snapshot every 4 entries")
	}
	var ss grainSnapshot
	if err := decodeInternal(rec.Snapshot.Data, &ss); err != nil {
		t.Fatal(err)
	}
	journal, err := ss.journal()
	if err != nil || ss.Version != 2 {
		t.Fatalf("snapshot written: version %d, journal %v", ss.Version, err)
	}
	var covered []played
	for _, p := range intents {
		if s, ok := journal.lookup(p.seat, p.id); ok {
			if s != p.seq {
				t.Fatalf("snapshot journal: %s at seq %d, want %d", p.id, s, p.seq)
			}
			covered = append(covered, p)
		}
	}
	if len(covered) == 0 || len(covered) == len(intents) {
		t.Fatalf("the snapshot covers %d of %d intents; the test needs some in it and some in the tail", len(covered), len(intents))
	}
	if version == 1 {
		// The same state as an earlier release wrote it.
		old := grainSnapshot{Version: 1, Engine: ss.Engine, Clock: ss.Clock, Absent: ss.Absent}
		for _, p := range covered {
			old.Journal = append(old.Journal, journalEntry{p.seat, p.id, p.seq})
		}
		data, err := encodeInternal(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := tn.store.Inner().SaveSnapshot(ctx, id, rec.Epoch, persistence.Snapshot{Seq: rec.Snapshot.Seq, Data: data}); err != nil {
			t.Fatalf("write the version 1 snapshot: %v", err)
		}
	}
	s := len(intents) % 2
	sendIntent(t, seats[s], "after", seq, protocol.EndTurn{})
	if res := expectResult(t, sinks[s], "after"); !res.Accepted || res.Duplicate {
		t.Fatalf("intent on the new activation: %+v", res)
	}
	for _, p := range []played{covered[0], intents[len(intents)-1]} {
		sendIntent(t, seats[p.seat], p.id, 1, protocol.EndTurn{})
		if res := expectResult(t, sinks[p.seat], p.id); !res.Accepted || !res.Duplicate || res.EventSeq != p.seq {
			t.Fatalf("re-sent %s after reactivation: %+v, want a duplicate of seq %d", p.id, res, p.seq)
		}
	}
}

// TestGrainMarksFinishedMatchOnReactivation: a match whose last entry ended
// it but whose finished mark never landed (here the mark fails; a member
// killed between the append and the mark leaves the same) is still listed
// as unfinished, so the reclaimer would wake it again and again. Its next
// activation marks it.
func TestGrainMarksFinishedMatchOnReactivation(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			inner := sk.open(t)
			tn := startTestNodeOn(t, fastTiming(), inner)
			id := tn.create(t, 0)
			seats, sinks := tn.openBoth(t, id)
			tn.store.FailNext(persistence.MethodMarkFinished, 1, nil)
			sendIntent(t, seats[0], "concede", 1, protocol.Concede{})
			if res := expectResult(t, sinks[0], "concede"); !res.Accepted {
				t.Fatalf("concede: %+v, want accepted", res)
			}
			waitFor(t, "the finished mark to be tried", func() bool {
				return tn.store.Calls(persistence.MethodMarkFinished) == 1
			})
			if !unfinished(t, inner, id) {
				t.Fatal("the failed mark marked the match finished")
			}
			tn.node.Kill()

			again := startTestNodeOn(t, fastTiming(), inner)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if ok, err := again.matchExists(ctx, id); err != nil || !ok {
				t.Fatalf("the finished match on a new member: exists=%v err=%v", ok, err)
			}
			waitFor(t, "the new activation to mark the match finished", func() bool { return !unfinished(t, inner, id) })
			if n := again.store.Calls(persistence.MethodMarkFinished); n != 1 {
				t.Fatalf("the new activation marked the match %d times, want once", n)
			}
		})
	}
}

// createFriendMatch creates a match whose seat 1 is a guest's (a friend
// match), Ann against "Friend".
func (tn *testNode) createFriendMatch(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seed := uint64(0)
	id, err := CreateMatch(ctx, tn.store, tn.rules, MatchSpec{Names: [2]string{"Ann", "Friend"}, Decks: [2]string{"S1", "S2"},
		Guests: [2]bool{false, true}, Seed: &seed})
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	if _, err := tn.call(ctx, id, &Wake{}); err != nil {
		t.Fatalf("wake match: %v", err)
	}
	return id
}

// A friend match's first decision clock is held until the guest's seat
// has attached once (docs/protocol.md §9, point 9): the creator may wait
// for a friend far longer than decision time and bank together without
// anyone losing on time, and once the friend is there the clock runs as in
// any match.
func TestGrainGuestClockWaitsForFirstAttach(t *testing.T) {
	timing := fastTiming()
	timing.DecisionTime = 150 * time.Millisecond
	timing.BankTime = 200 * time.Millisecond
	timing.ClockInterval = 50 * time.Millisecond
	timing.SeatKeepAlive = 2 * time.Second // no re-attach noise in the clock frames
	tn := startTestNode(t, timing)
	created := time.Now().UnixMilli()
	id := tn.createFriendMatch(t)
	_, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	snap := expectFrame[*protocol.ServerSnapshot](t, k0)
	decider := snap.View.Clock.DecisionPlayer
	if c := snap.View.Clock; c.IsRunning || c.TurnDeadlineMs != 0 || decider < 0 {
		t.Fatalf("creator's clock before the friend joined = %+v, want held (not running, no deadline, a decider)", c)
	}
	// The server's own clock frames say how long it has waited: three times
	// decision time and bank together, with the clock held all along.
	waitUntil := created + 3*(timing.DecisionTime+timing.BankTime).Milliseconds()
	deadline := time.After(10 * time.Second)
	for waited := false; !waited; {
		select {
		case f := <-k0.frames:
			switch f := f.(type) {
			case *protocol.ServerClock:
				if f.Clock.IsRunning || f.Clock.TurnDeadlineMs != 0 {
					t.Fatalf("clock ran before the friend joined: %+v", f.Clock)
				}
				waited = f.Clock.ServerTimeMs >= waitUntil
			case *protocol.ServerEvents:
				t.Fatalf("events before the friend joined: %+v", f.Events)
			}
		case <-deadline:
			t.Fatalf("no ServerClock at or after %d within 10 s", waitUntil)
		}
	}
	joined := time.Now()
	_, k1 := tn.open(t, id, 1, 0)
	expectFrame[*protocol.ServerHello](t, k1)
	c := expectFrame[*protocol.ServerSnapshot](t, k1).View.Clock
	if !c.IsRunning || c.DecisionPlayer != decider || c.TurnDeadlineMs < joined.UnixMilli()+timing.DecisionTime.Milliseconds() ||
		c.Bank0Ms != timing.BankTime.Milliseconds() || c.Bank1Ms != timing.BankTime.Milliseconds() {
		t.Fatalf("clock once the friend joined = %+v, want seat %d's full decision time from %d and full banks", c, decider, joined.UnixMilli())
	}
	for _, k := range []*frameSink{k0, k1} {
		fin := waitFinished(t, k)
		if fin.Winner != 1-decider || fin.Reason != protocol.FinishTimeout {
			t.Fatalf("finished = %+v, want seat %d winning on timeout", fin, 1-decider)
		}
	}
	if el := time.Since(joined); el < timing.DecisionTime+timing.BankTime {
		t.Fatalf("timeout fired %v after the friend joined, before decision+bank (%v)", el, timing.DecisionTime+timing.BankTime)
	}
}

// A guest names its seat once (NameSeat); the name and a still-held clock
// come back on a new activation, from the log and from a snapshot alike.
func TestGrainGuestNameAndHeldClockSurviveReactivation(t *testing.T) {
	for _, every := range []int{1, 100} {
		t.Run(fmt.Sprintf("snapshot-every-%d", every), func(t *testing.T) {
			timing := fastTiming()
			timing.SnapshotEvery = every
			tn := startTestNode(t, timing)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			id := tn.createFriendMatch(t)
			first, k0 := tn.open(t, id, 0, 0)
			expectFrame[*protocol.ServerHello](t, k0)
			if v := expectFrame[*protocol.ServerSnapshot](t, k0).View; v.Players[1].Name != "Friend" {
				t.Fatalf("friend's name before naming: %q", v.Players[1].Name)
			}
			if _, err := tn.call(ctx, id, &NameSeat{Seat: 1, Name: "Bea"}); err != nil {
				t.Fatalf("name seat 1: %v", err)
			}
			if v := expectFrame[*protocol.ServerSnapshot](t, k0).View; v.Players[1].Name != "Bea" || v.Players[0].Name != "Ann" {
				t.Fatalf("the creator's view after naming: %q", []string{v.Players[0].Name, v.Players[1].Name})
			}
			if _, err := tn.call(ctx, id, &NameSeat{Seat: 1, Name: "Cleo"}); err != nil {
				t.Fatalf("name seat 1 again: %v", err)
			}
			if _, err := tn.call(ctx, id, &NameSeat{Seat: 0, Name: "Mallory"}); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("naming the creator's seat: %v, want ErrBadRequest", err)
			}
			// Another activation claims the match before the friend has come;
			// the creator leaves, and that write finds this activation fenced.
			// The creator's next visit meets a new one, rebuilt from the store.
			if _, err := tn.store.Inner().Claim(ctx, id, "intruder"); err != nil {
				t.Fatalf("intruding claim: %v", err)
			}
			first.Close(true)
			s0, k0 := tn.open(t, id, 0, 0)
			expectFrame[*protocol.ServerHello](t, k0)
			v := expectFrame[*protocol.ServerSnapshot](t, k0).View
			if v.Players[1].Name != "Bea" || v.Clock.IsRunning || v.Clock.TurnDeadlineMs != 0 {
				t.Fatalf("after reactivation: friend %q, clock %+v; want Bea and a held clock", v.Players[1].Name, v.Clock)
			}
			_, k1 := tn.open(t, id, 1, 0)
			expectFrame[*protocol.ServerHello](t, k1)
			if v := expectFrame[*protocol.ServerSnapshot](t, k1).View; v.Players[1].Name != "Bea" || !v.Clock.IsRunning {
				t.Fatalf("the friend's own view: name %q, clock %+v; want Bea and a running clock", v.Players[1].Name, v.Clock)
			}
			if v := fullView(t, s0, k0); !v.Clock.IsRunning {
				t.Fatalf("the creator's clock once the friend came: %+v", v.Clock)
			}
		})
	}
}

// A member that refuses an activation because another member owns the match
// in its view says so in its replies (Reply.NotOwner, cluster.ViewRefusal),
// for the caller to retry quickly while the views differ, and waits for its
// view to name it (Core.OwnedNow) instead of halting; any stopped
// activation answers only that the match is moving.
func TestRefusalByViewIsMarked(t *testing.T) {
	store := storetest.Embedded(t)
	var owns atomic.Bool
	cores, err := NewCores(GrainDeps{
		Store: store, Rules: GameRules{}, Timing: DefaultTiming(), Owner: func() string { return "m1" },
		Owns: func(string) bool { return owns.Load() }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	byView := cores()
	if rd := byView.Activate("m_elsewhere"); rd.Stop || rd.Store != nil || !rd.IdleStop {
		t.Fatalf("activation not owned in this view: %+v, want no stop, no store call and an idle stop", rd)
	}
	if byView.OwnedNow() {
		t.Fatalf("the refused activation reports its match owned while the view names another member")
	}
	owns.Store(true)
	if !byView.OwnedNow() {
		t.Fatalf("the refused activation does not report its match owned once the view names this member")
	}
	fenced := cores()
	fenced.halt(HaltFenced)
	for _, c := range []struct {
		name   string
		core   *Core
		byView bool
	}{{"refused by view", byView, true}, {"fenced", fenced, false}} {
		var reply *Reply
		for _, s := range c.core.Handle(&Wake{}).Sends {
			if m, ok := s.Msg.(*Reply); ok && s.To == nil {
				reply = m
			}
		}
		if reply == nil {
			t.Fatalf("%s: no reply", c.name)
		}
		if _, moving := reply.ActivationMoving(); !moving || reply.RefusedByView() != c.byView {
			t.Errorf("%s: reply %+v moving %v, refused by view %v; want moving, refused by view %v",
				c.name, reply, moving, reply.RefusedByView(), c.byView)
		}
	}
}

// Requests that reach a member whose view names another owner are all
// answered, however many arrive at once: an activation refused by the view
// waits there, answering each (Reply.NotOwner), instead of halting. A halt
// stops the actor behind a poison pill, and protoactor drops unanswered
// whatever request lands in its mailbox after the pill and before the actor
// leaves the registry; its caller then waits out its whole attempt (seen
// as a 5 s stall of a ticket request during a failover). Once the view
// names this member the owner, the waiting activation starts.
func TestRefusedActivationAnswersEveryRequest(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	tn.node.ForgetPID(id, MatchKind)
	tn.notOwner.Store(true)
	// Let the running activation stop (its next tick sees the view).
	refused := func(r *Reply) bool { return r.NotOwner }
	tn.awaitAnswer(t, id, refused, "no refusal by view since the member stopped owning the match")
	claims := tn.store.Calls(persistence.MethodClaim)
	if err := tn.askFromMany(id, refused, false); err != nil {
		t.Fatalf("a request to a member that does not own the match: %v", err)
	}
	if n := tn.store.Calls(persistence.MethodClaim) - claims; n != 0 {
		t.Fatalf("%d claims by a member that does not own the match", n)
	}
	tn.notOwner.Store(false)
	if r, err := tn.askOnce(id, &Wake{}); err != nil || r.Code != ReplyOK {
		t.Fatalf("wake once the view names this member the owner: %+v, %v", r, err)
	}
	if n := tn.store.Calls(persistence.MethodClaim) - claims; n != 1 {
		t.Fatalf("%d claims once the member owns the match, want 1", n)
	}
}

// Requests that reach a grain while it stops are answered, not dropped:
// here every activation is refused by its member's gate (as while the
// member drains) and so halts at once, behind a poison pill, while 8
// callers keep asking. protoactor drops what an actor's mailbox holds when
// it stops; the grain's mailbox answers it "moving" instead, so no caller
// waits out its attempt.
func TestStoppingGrainAnswersEveryRequest(t *testing.T) {
	var draining atomic.Bool
	tn := startTestNodeRules(t, fastTiming(), storetest.Embedded(t), ToyRules{}, func(d *GrainDeps) {
		d.MayActivate = func() error {
			if draining.Load() {
				return errors.New("draining")
			}
			return nil
		}
	})
	id := tn.create(t, 0)
	draining.Store(true)
	pid := tn.node.Cluster().Get(id, MatchKind)
	if pid == nil {
		t.Fatalf("no activation of %s", id)
	}
	tn.node.System().Root.Poison(pid)
	unavailable := func(r *Reply) bool { return r.Code == ReplyUnavailable }
	tn.awaitAnswer(t, id, unavailable, "activations still start since the gate closed")
	// Dead letters (the activation had left the registry, its placement
	// did not know yet) come back at once: answered too.
	if err := tn.askFromMany(id, unavailable, true); err != nil {
		t.Fatalf("a request to a grain that keeps stopping: %v", err)
	}
}

// awaitAnswer asks the grain of id to wake (askOnce) until its reply is
// one that ok accepts, failing with what after 10 s.
func (tn *testNode) awaitAnswer(t *testing.T, id string, ok func(*Reply) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := tn.askOnce(id, &Wake{})
		if err == nil && ok(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (10 s): %+v, %v", what, r, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// askFromMany has 8 callers ask the grain of id to wake 100 times each, all
// at once (askOnce), and returns the first request no activation answered
// or whose reply ok refuses; a dead letter is an answer if deadLetters,
// else an error too.
func (tn *testNode) askFromMany(id string, ok func(*Reply) bool, deadLetters bool) error {
	const callers, calls = 8, 100
	errs := make(chan error, callers)
	for range callers {
		go func() {
			for range calls {
				r, err := tn.askOnce(id, &Wake{})
				switch {
				case err != nil && (deadLetters && !errors.Is(err, errNoReply)):
					continue
				case err != nil:
					errs <- err
					return
				case !ok(r):
					errs <- fmt.Errorf("unexpected reply %+v", r)
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range callers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
