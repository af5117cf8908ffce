package actors

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
	"github.com/matchgrain/matchgrain/protocol"
)

// coreHost drives one Core by hand against a real embedded store, as a host
// does: it makes each store call the core asks for only when the test says.
type coreHost struct {
	t     *testing.T
	store persistence.Store
	core  *Core
	now   time.Time
}

func newCoreHost(t *testing.T, store persistence.Store, cores func() *Core) *coreHost {
	return &coreHost{t: t, store: store, core: cores()}
}

// settle answers every store call of rd at once and returns the Ready that
// ends the step.
func (h *coreHost) settle(rd Ready) Ready {
	h.t.Helper()
	for rd.Store != nil {
		if len(rd.Sends) > 0 || rd.Stop || rd.Tick {
			h.t.Fatalf("a Ready with a %v call also asks for %d sends, stop %v, tick %v", rd.Store.Op, len(rd.Sends), rd.Stop, rd.Tick)
		}
		rd = h.core.StoreDone(rd.Store.Do(context.Background(), h.store))
	}
	return rd
}

func (h *coreHost) finishStep(rd Ready) Ready {
	h.t.Helper()
	rd = h.settle(rd)
	h.settle(h.core.Advance())
	return rd
}

func replyOf(t *testing.T, rd Ready) *Reply {
	t.Helper()
	for _, s := range rd.Sends {
		if s.To == nil {
			return s.Msg.(*Reply)
		}
	}
	t.Fatalf("no reply among %d sends", len(rd.Sends))
	return nil
}

// resultsIn returns the intent results the seats were sent in rd.
func resultsIn(t *testing.T, rd Ready) []*protocol.ServerIntentResult {
	t.Helper()
	var out []*protocol.ServerIntentResult
	for _, s := range rd.Sends {
		sf, ok := s.Msg.(*SeatFrames)
		if !ok {
			continue
		}
		for _, f := range sf.Frames {
			fr, err := protocol.DecodeServerFrame(f.Data)
			if err != nil {
				t.Fatalf("decode frame: %v", err)
			}
			if r, ok := fr.(*protocol.ServerIntentResult); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestCoreStoreAnswersAreInputs drives a core through the store protocol
// of Ready.Store: each call is an answer away, nothing is sent while one is
// outstanding, another input then is refused, and an append whose answer
// timed out (it landed later) halts the activation without acknowledging
// the intent, which the next activation then answers as a duplicate.
func TestCoreStoreAnswersAreInputs(t *testing.T) {
	store := storetest.Embedded(t)
	now := time.UnixMilli(1_700_000_000_000)
	cores, err := NewCores(GrainDeps{Store: store, Rules: ToyRules{Turns: 12}, Timing: DefaultTiming(),
		Owner: func() string { return "m1" }, Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := EncodeMatchMeta([2]string{"a", "b"}, [2]string{"S1", "S2"}, 7, now.UnixMilli(), [2]bool{}, ToyRules{Turns: 12})
	if err != nil {
		t.Fatal(err)
	}
	const id = "core-store-1"
	if err := store.CreateMatch(context.Background(), id, meta); err != nil {
		t.Fatal(err)
	}

	h := newCoreHost(t, store, cores)
	rd := h.core.Activate(id)
	if rd.Store == nil || rd.Store.Op != StoreClaim || rd.Store.MatchID != id || rd.Store.Owner != "m1" {
		t.Fatalf("activation asks for %+v, want the claim of %q by m1", rd.Store, id)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a request while the claim was outstanding was taken")
			}
		}()
		h.core.Handle(&Wake{})
	}()
	h.finishStep(rd)

	// Attach the deciding seat: its ticket, then its presence, each an
	// answer away.
	seat := h.core.engine.Decider()
	rd = h.core.Handle(&AttachSeat{Seat: seat, TicketID: "t0", TicketExpiresMs: now.UnixMilli() + 60_000, SessionAddr: "edge", SessionID: "s0"})
	if rd.Store == nil || rd.Store.Op != StoreConsumeTicket || rd.Store.TicketID != "t0" {
		t.Fatalf("a first attach asks for %+v, want its ticket consumed", rd.Store)
	}
	rd = h.finishStep(rd)
	if r := replyOf(t, rd); r.Code != ReplyOK {
		t.Fatalf("attach answered %v %q", r.Code, r.Message)
	}

	frame, err := protocol.EncodeClientFrame(&protocol.ClientIntent{IntentID: "i1", BasedOnSeq: h.core.engine.LastSeq(), Intent: protocol.EndTurn{}})
	if err != nil {
		t.Fatal(err)
	}
	intent := &SubmitIntent{Seat: seat, SessionID: "s0", Frame: frame}
	rd = h.core.Handle(intent)
	if rd.Store == nil || rd.Store.Op != StoreAppend || len(rd.Store.Entries) != 1 {
		t.Fatalf("an intent asks for %+v, want its append", rd.Store)
	}
	// The append travels slowly: the host's timeout answers first, and the
	// request lands afterwards.
	late := *rd.Store
	rd = h.core.StoreDone(StoreResult{Err: fmt.Errorf("append: %w", context.DeadlineExceeded)})
	if rd.Store != nil || !rd.Stop || rd.Halt != HaltAppendUnknown {
		t.Fatalf("after a timed-out append: store %v, stop %v, halt %v; want a halt append_unknown", rd.Store, rd.Stop, rd.Halt)
	}
	if rs := resultsIn(t, rd); len(rs) != 0 {
		t.Fatalf("an intent whose append timed out was answered %+v", rs[0])
	}
	if r := replyOf(t, rd); r.Code != ReplyUnavailable {
		t.Fatalf("the intent's request answered %v, want Unavailable (the edge re-sends it)", r.Code)
	}
	if res := late.Do(context.Background(), store); res.Err != nil {
		t.Fatalf("the late append: %v", res.Err)
	}

	// The next activation finds the late entry: the re-sent intent is a
	// duplicate with its seq, not applied twice.
	h2 := newCoreHost(t, store, cores)
	h2.finishStep(h2.core.Activate(id))
	h2.finishStep(h2.core.Handle(&AttachSeat{Seat: seat, TicketExpiresMs: now.UnixMilli() + 60_000, Reattach: true, SessionAddr: "edge", SessionID: "s0"}))
	rd = h2.finishStep(h2.core.Handle(intent))
	rs := resultsIn(t, rd)
	if len(rs) != 1 || !rs[0].Accepted || !rs[0].Duplicate || rs[0].EventSeq == 0 {
		t.Fatalf("the re-sent intent was answered %+v, want one accepted duplicate with its seq", rs)
	}
	if r := replyOf(t, rd); r.Code != ReplyOK {
		t.Fatalf("the re-sent intent's request answered %v", r.Code)
	}
	// A ticket's refusal is a store answer too.
	rd = h2.finishStep(h2.core.Handle(&AttachSeat{Seat: 1 - seat, TicketID: "t0", TicketExpiresMs: now.UnixMilli() + 60_000,
		SessionAddr: "edge", SessionID: "s1"}))
	if r := replyOf(t, rd); r.Code != ReplyTicketUsed {
		t.Fatalf("an attach with a used ticket answered %v %q, want TicketUsed", r.Code, r.Message)
	}
}
