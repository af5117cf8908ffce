package actors

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
	"github.com/matchgrain/matchgrain/protocol"
)

// coreRun drives one Core as its host would, on a virtual clock: each step's
// sends are collected by recipient, its tick is fired when due.
type coreRun struct {
	t     testing.TB
	core  *Core
	store persistence.Store
	now   time.Time
	// got holds every frame sent to a session id, decoded, in order.
	got map[string][]protocol.ServerFrame
	// raw holds the same frames' bytes.
	raw     map[string][][]byte
	replies []*Reply
	tickIn  time.Duration
	// cores makes the next activation (failover).
	cores func() *Core
}

// failover drops the running activation, as a member's death does, and
// activates the match again on the same store (a newer epoch).
func (r *coreRun) failover() {
	r.t.Helper()
	r.core = r.cores()
	r.take(r.core.Activate("m_spect"))
}

// reattachSpectator is the edge's re-attach of a spectator whose match
// moved: no ticket, from the last seq the spectator got.
func (r *coreRun) reattachSpectator(id string) *Reply {
	r.t.Helper()
	return r.handle(&AttachSeat{Seat: protocol.SeatSpectator, TicketExpiresMs: r.now.Add(time.Minute).UnixMilli(),
		ResumeFromSeq: lastSeen(r.got[id]), Reattach: true, SessionAddr: "edge-1", SessionID: id})
}

// lastSeen is the last event seq a stream of frames brought its client to.
func lastSeen(frames []protocol.ServerFrame) int64 {
	var last int64
	for _, f := range frames {
		switch v := f.(type) {
		case *protocol.ServerEvents:
			last = max(last, v.ToSeq)
		case *protocol.ServerSnapshot:
			last = v.View.EventSeq
		}
	}
	return last
}

// startBotMatch activates a match between two bots (it plays itself on
// ticks) with the real game rules.
func startBotMatch(t testing.TB, maxSpectators int, tune ...func(*GrainDeps)) *coreRun {
	t.Helper()
	store := storetest.Embedded(t)
	r := &coreRun{t: t, store: store, now: time.UnixMilli(1_767_225_600_000), got: map[string][]protocol.ServerFrame{},
		raw: map[string][][]byte{}}
	timing := DefaultTiming()
	timing.BotThink = 200 * time.Millisecond
	rules := GameRules{}
	deps := GrainDeps{
		Store: store, Rules: rules, Timing: timing, Owner: func() string { return "m1" },
		Now: func() time.Time { return r.now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxSpectators: maxSpectators,
	}
	for _, f := range tune {
		f(&deps)
	}
	cores, err := NewCores(deps)
	if err != nil {
		t.Fatal(err)
	}
	r.cores = cores
	meta, err := EncodeMatchMeta([2]string{"Ann", "Bob"}, [2]string{"S1", "S2"}, 42, r.now.UnixMilli(), [2]bool{true, true}, rules)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.CreateMatch(ctx, "m_spect", meta); err != nil {
		t.Fatal(err)
	}
	r.core = cores()
	r.take(r.core.Activate("m_spect"))
	return r
}

// take carries out a step's Ready: frames are decoded and kept by session
// id, replies kept, the tick remembered, then the checkpoint written.
func (r *coreRun) take(rd Ready) {
	r.t.Helper()
	for rd.Store != nil { // answered at once, as the grain does
		rd = r.core.StoreDone(rd.Store.Do(context.Background(), r.store))
	}
	for _, s := range rd.Sends {
		switch m := s.Msg.(type) {
		case *Reply:
			r.replies = append(r.replies, m)
		case *SeatFrames:
			for _, f := range m.Frames {
				v, err := protocol.DecodeServerFrame(f.Data)
				if err != nil {
					r.t.Fatalf("frame to %s does not decode: %v", s.To.Id, err)
				}
				r.got[s.To.Id] = append(r.got[s.To.Id], v)
				r.raw[s.To.Id] = append(r.raw[s.To.Id], f.Data)
			}
		}
	}
	if rd.Tick {
		r.tickIn = rd.TickIn
	}
	if rd.Stop {
		r.t.Fatalf("the activation stopped: %v", rd.Halt)
	}
	if len(rd.Sends) > 0 || rd.Tick {
		r.take(r.core.Advance())
	}
}

// handle sends msg and returns the reply.
func (r *coreRun) handle(msg any) *Reply {
	r.t.Helper()
	n := len(r.replies)
	r.take(r.core.Handle(msg))
	if len(r.replies) != n+1 {
		r.t.Fatalf("%T: %d replies, want 1", msg, len(r.replies)-n)
	}
	return r.replies[n]
}

// attachSpectator attaches session id as a spectator resuming from resume.
func (r *coreRun) attachSpectator(id string, resume int64) *Reply {
	r.t.Helper()
	return r.handle(&AttachSeat{Seat: protocol.SeatSpectator, TicketID: "ticket-" + id, TicketExpiresMs: r.now.Add(time.Minute).UnixMilli(),
		ResumeFromSeq: resume, SessionAddr: "edge-1", SessionID: id})
}

// step advances the virtual clock to the next tick, keeping the named
// spectators attached with the edge's keep-alive first.
func (r *coreRun) step(keepAlive ...string) {
	r.t.Helper()
	for _, id := range keepAlive {
		if rep := r.handle(&SeatPing{Seat: protocol.SeatSpectator, SessionID: id}); rep.Code != ReplyOK || len(rep.NotAttached) != 0 {
			r.t.Fatalf("keep-alive of spectator %s: %+v", id, rep)
		}
	}
	r.now = r.now.Add(r.tickIn)
	r.take(r.core.Tick())
}

// playToEnd steps until the match finished.
func (r *coreRun) playToEnd(keepAlive ...string) {
	r.t.Helper()
	for i := 0; !r.core.engine.IsFinished(); i++ {
		if i > 20000 {
			r.t.Fatalf("the bots' match did not end in %d steps (event seq %d)", i, r.core.engine.LastSeq())
		}
		r.step(keepAlive...)
	}
}

// checkSpectatorStream checks everything one spectator received: a hello
// as seat 2, a snapshot or events, then contiguous event ranges to the end,
// and never a hidden card, an owner-only event, a choice or a legal intent.
// It returns the seq the stream started after and the GameFinished seen.
func checkSpectatorStream(t *testing.T, frames []protocol.ServerFrame, last int64) *protocol.GameFinishedEvent {
	t.Helper()
	if len(frames) == 0 {
		t.Fatalf("no frames")
	}
	h, ok := frames[0].(*protocol.ServerHello)
	if !ok || h.PlayerIndex != protocol.SeatSpectator {
		t.Fatalf("first frame %T %+v, want a ServerHello with playerIndex 2", frames[0], frames[0])
	}
	var fin *protocol.GameFinishedEvent
	seen := int64(-1)
	if h.Resumed {
		seen = h.EventSeq // checked below: the first events continue the client's seq
	}
	for i, f := range frames[1:] {
		switch v := f.(type) {
		case *protocol.ServerSnapshot:
			mv := v.View
			if mv.You != protocol.SeatSpectator || len(mv.LegalIntents) != 0 || mv.Choice != nil || mv.Ability != nil || mv.Order != nil || mv.OpponentChoosing {
				t.Fatalf("frame %d: spectator snapshot you=%d legal=%d choice=%v ability=%v order=%v", i+1, mv.You, len(mv.LegalIntents), mv.Choice, mv.Ability, mv.Order)
			}
			for p, pv := range mv.Players {
				if len(pv.Hand) != 0 {
					t.Fatalf("frame %d: the spectator's snapshot shows player %d's hand (%d cards)", i+1, p, len(pv.Hand))
				}
			}
			seen = mv.EventSeq
		case *protocol.ServerEvents:
			if seen >= 0 && v.FromSeq != seen+1 && !h.Resumed {
				t.Fatalf("frame %d: events %d..%d after seq %d: a gap", i+1, v.FromSeq, v.ToSeq, seen)
			}
			h.Resumed = false // only the first events may start where the client said
			for _, e := range v.Events {
				if e.Seq < v.FromSeq || e.Seq > v.ToSeq {
					t.Fatalf("event seq %d outside %d..%d", e.Seq, v.FromSeq, v.ToSeq)
				}
				switch ev := e.Event.(type) {
				case *protocol.CardsDrawnEvent:
					if len(ev.Cards) != 0 {
						t.Fatalf("seq %d: a spectator sees player %d draw %v", e.Seq, ev.Player, ev.Cards)
					}
				case *protocol.ReturnedToDeckEvent:
					if len(ev.Cards) != 0 {
						t.Fatalf("seq %d: a spectator sees cards returned to player %d's deck", e.Seq, ev.Player)
					}
				case *protocol.CardSearchedViewEvent, *protocol.SearchFailedViewEvent:
					t.Fatalf("seq %d: an owner-only event %T reaches a spectator", e.Seq, ev)
				case *protocol.DecisionEvent:
					if len(ev.LegalIntents) != 0 || ev.Choice != nil || ev.Ability != nil || ev.Order != nil {
						t.Fatalf("seq %d: a spectator's Decision holds legal intents %v or a choice", e.Seq, ev.LegalIntents)
					}
				case *protocol.GameFinishedEvent:
					fin = ev
				}
			}
			seen = v.ToSeq
		case *protocol.ServerIntentResult, *protocol.ServerClock:
		default:
			t.Fatalf("frame %d: unexpected %T", i+1, f)
		}
	}
	if seen != last {
		t.Fatalf("the spectator's stream ends at seq %d, the match at %d", seen, last)
	}
	return fin
}

// A spectator watches a whole match between two bots from its start, and a
// second one joins halfway resuming from a seq: both see every batch, in
// order and without a gap, to GameFinished, and neither ever sees a hidden
// card, an owner-only event or a legal intent.
func TestSpectatorsWatchAWholeMatch(t *testing.T) {
	r := startBotMatch(t, 4)
	if rep := r.attachSpectator("spec-a", 0); rep.Code != ReplyOK {
		t.Fatalf("attach spectator: %+v", rep)
	}
	for r.core.engine.LastSeq() < 60 {
		r.step("spec-a")
	}
	mid := r.core.engine.LastSeq() - 7
	if rep := r.attachSpectator("spec-b", mid); rep.Code != ReplyOK {
		t.Fatalf("attach spectator resuming from %d: %+v", mid, rep)
	}
	if h := r.got["spec-b"][0].(*protocol.ServerHello); !h.Resumed {
		t.Fatalf("a spectator resuming from %d got a snapshot: %+v", mid, h)
	}
	if ev, ok := r.got["spec-b"][1].(*protocol.ServerEvents); !ok || ev.FromSeq != mid+1 {
		t.Fatalf("a spectator resuming from %d got %T %+v first", mid, r.got["spec-b"][1], r.got["spec-b"][1])
	}
	r.playToEnd("spec-a", "spec-b")
	last := r.core.engine.LastSeq()
	for _, id := range []string{"spec-a", "spec-b"} {
		fin := checkSpectatorStream(t, r.got[id], last)
		if fin == nil {
			t.Fatalf("%s never saw GameFinished", id)
		}
		if fin.Winner != r.core.engine.View(0).Winner {
			t.Fatalf("%s saw winner %d", id, fin.Winner)
		}
	}
	// The events are built once: both spectators got the same bytes of
	// every batch since the second one joined.
	a, b := r.raw["spec-a"], r.raw["spec-b"]
	if n := 10; len(a) < n || len(b) < n || !bytes.Equal(a[len(a)-n], b[len(b)-n]) || !bytes.Equal(a[len(a)-1], b[len(b)-1]) {
		t.Fatalf("the spectators' frames differ: %d and %d frames", len(a), len(b))
	}
}

// Any intent from a spectator is refused with code Spectator and changes
// nothing: not the log, not the events, not the other seat's clock.
func TestSpectatorIntentIsRefused(t *testing.T) {
	r := startBotMatch(t, 4)
	r.attachSpectator("spec-a", 0)
	seq, logSeq := r.core.engine.LastSeq(), r.core.logSeq
	for _, in := range []protocol.Intent{protocol.Concede{}, protocol.FinishMulligan{}, protocol.EndTurn{}} {
		frame, err := protocol.EncodeClientFrame(&protocol.ClientIntent{IntentID: "spy-" + in.IntentKind().String(), BasedOnSeq: seq, Intent: in})
		if err != nil {
			t.Fatal(err)
		}
		if rep := r.handle(&SubmitIntent{Seat: protocol.SeatSpectator, SessionID: "spec-a", Frame: frame}); rep.Code != ReplyOK {
			t.Fatalf("%s from a spectator: reply %+v", in.IntentKind(), rep)
		}
		got := r.got["spec-a"]
		res, ok := got[len(got)-1].(*protocol.ServerIntentResult)
		if !ok || res.Accepted || res.Code != protocol.RejectSpectator || res.EventSeq != seq {
			t.Fatalf("%s from a spectator answered %T %+v, want refused with code Spectator at seq %d", in.IntentKind(), got[len(got)-1], got[len(got)-1], seq)
		}
	}
	if r.core.engine.LastSeq() != seq || r.core.logSeq != logSeq || r.core.engine.IsFinished() {
		t.Fatalf("spectator intents changed the match: seq %d→%d, log %d→%d", seq, r.core.engine.LastSeq(), logSeq, r.core.logSeq)
	}
	// An intent from a session that is not attached is not answered as a spectator's.
	if rep := r.handle(&SubmitIntent{Seat: protocol.SeatSpectator, SessionID: "nobody"}); rep.Code != ReplyNotAttached {
		t.Fatalf("intent from an unknown spectator: %+v", rep)
	}
}

// The cap: one spectator more than MaxSpectators is refused without its
// ticket being spent, and gets in once another one left; 0 turns
// spectating off. A spectator whose edge stops its keep-alives is dropped.
func TestSpectatorsCappedAndDropped(t *testing.T) {
	r := startBotMatch(t, 2)
	r.attachSpectator("spec-a", 0)
	r.attachSpectator("spec-b", 0)
	if rep := r.attachSpectator("spec-c", 0); rep.Code != ReplySpectatorsFull {
		t.Fatalf("a third spectator with a cap of 2: %+v, want SpectatorsFull", rep)
	}
	if rep := r.handle(&DetachSeat{Seat: protocol.SeatSpectator, SessionID: "spec-b"}); rep.Code != ReplyOK {
		t.Fatalf("detach: %+v", rep)
	}
	if rep := r.attachSpectator("spec-c", 0); rep.Code != ReplyOK {
		t.Fatalf("the refused spectator's ticket, once there is room: %+v (the refusal must not spend it)", rep)
	}
	// spec-c keeps its edge's keep-alive, spec-a does not: after three
	// missed keep-alives only spec-c still gets frames.
	for until := r.now.Add(4 * r.core.deps.Timing.SeatKeepAlive); r.now.Before(until); {
		r.step("spec-c")
	}
	if _, ok := r.core.spectators["spec-a"]; ok {
		t.Fatalf("a spectator without keep-alives is still attached")
	}
	if rep := r.handle(&SeatPing{Seat: protocol.SeatSpectator, SessionID: "spec-a"}); len(rep.NotAttached) != 1 {
		t.Fatalf("keep-alive of a dropped spectator: %+v, want it named not attached", rep)
	}
	if st := r.handle(&Inspect{}).Status; st == nil || st.Spectators != 1 {
		t.Fatalf("status after the drop: %+v, want 1 spectator", st)
	}

	off := startBotMatch(t, 0)
	if rep := off.attachSpectator("spec-a", 0); rep.Code != ReplySpectatorsFull {
		t.Fatalf("a spectator where none are allowed: %+v", rep)
	}
}

// A spectator follows its match through a failover: the edge re-attaches it
// to the new activation from the last seq it got, and its stream goes on to
// GameFinished without a gap or a repeat.
func TestSpectatorFollowsFailover(t *testing.T) {
	r := startBotMatch(t, 4)
	r.attachSpectator("spec-a", 0)
	for r.core.engine.LastSeq() < 50 {
		r.step("spec-a")
	}
	r.failover()
	if rep := r.reattachSpectator("spec-a"); rep.Code != ReplyOK {
		t.Fatalf("re-attach after the failover: %+v", rep)
	}
	r.playToEnd("spec-a")
	if fin := checkSpectatorStream(t, r.got["spec-a"], r.core.engine.LastSeq()); fin == nil {
		t.Fatalf("the spectator never saw GameFinished")
	}
}

// With a delay, spectators see a batch only once enough later events exist
// and it is old enough, always whole batches, never a clock; the end comes
// through; a failover holds them back longer, never shorter; and the stream
// has no gap.
func TestSpectatorDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int
		delay  time.Duration
	}{
		{"events", 12, 0},
		{"time", 0, 5 * time.Second},
		{"both", 6, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startBotMatch(t, 4, func(d *GrainDeps) { d.SpectatorDelayEvents, d.SpectatorDelay = tc.events, tc.delay })
			appended := map[int64]time.Time{}
			note := func() {
				for s := int64(1); s <= r.core.engine.LastSeq(); s++ {
					if _, ok := appended[s]; !ok {
						appended[s] = r.now
					}
				}
			}
			note()
			r.attachSpectator("spec-a", 0)
			check := func() {
				t.Helper()
				seen := lastSeen(r.got["spec-a"])
				if seen == 0 {
					return
				}
				if !r.core.engine.IsFinished() && r.core.engine.LastSeq()-seen < int64(tc.events) {
					t.Fatalf("the spectator sees seq %d of %d: fewer than %d events later", seen, r.core.engine.LastSeq(), tc.events)
				}
				if at := appended[seen]; r.now.Sub(at) < tc.delay {
					t.Fatalf("the spectator sees seq %d appended %v ago, want at least %v", seen, r.now.Sub(at), tc.delay)
				}
			}
			failedOver := false
			for i := 0; ; i++ {
				if i > 40000 {
					t.Fatalf("no end")
				}
				if !failedOver && r.core.engine.LastSeq() > 80 {
					failedOver = true
					r.failover()
					note()
					if rep := r.reattachSpectator("spec-a"); rep.Code != ReplyOK {
						t.Fatalf("re-attach: %+v", rep)
					}
				}
				if r.core.engine.IsFinished() && lastSeen(r.got["spec-a"]) == r.core.engine.LastSeq() {
					break
				}
				r.step("spec-a")
				note()
				check()
			}
			for _, f := range r.got["spec-a"] {
				if _, ok := f.(*protocol.ServerClock); ok {
					t.Fatalf("a delayed spectator got a ServerClock")
				}
				if _, ok := f.(*protocol.ServerSnapshot); ok {
					t.Fatalf("a delayed spectator got a snapshot while the match ran")
				}
			}
			if fin := checkSpectatorStream(t, r.got["spec-a"], r.core.engine.LastSeq()); fin == nil {
				t.Fatalf("the delayed spectator never saw GameFinished")
			}
		})
	}
}

// BenchmarkSpectatorFanout is the grain's cost of one batch for its
// spectators, with 1, 5 and 50 of them: the projection and encoding are
// paid once per batch, each spectator adds one send of the same message.
// The batch is a real one (a bot match's, mid-game).
func BenchmarkSpectatorFanout(b *testing.B) {
	for _, n := range []int{1, 5, 50} {
		b.Run(fmt.Sprintf("spectators=%d", n), func(b *testing.B) {
			r := startBotMatch(b, 64)
			for i := range n {
				r.attachSpectator(fmt.Sprintf("spec-%d", i), 0)
			}
			for r.core.engine.LastSeq() < 60 {
				r.step()
			}
			evs, err := r.core.recent.since(r.core.engine.LastSeq() - 5)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.core.begin()
				r.core.broadcastSpectators(evs, nil)
				if len(r.core.rd.Sends) != n {
					b.Fatalf("%d sends for %d spectators", len(r.core.rd.Sends), n)
				}
			}
		})
	}
}
