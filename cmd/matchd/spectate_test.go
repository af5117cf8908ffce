package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/protocol"
)

// spectatorWatch collects what one spectator's session receives and checks
// it as it comes: event ranges contiguous from the first state on, no
// hidden card, no owner-only event, no legal intent.
type spectatorWatch struct {
	mu       sync.Mutex
	seen     int64 // the last seq the spectator has, -1 before its state
	finished bool
	refused  int // intents refused with code Spectator
	problem  error
}

func watchSpectator(s *client.Session) *spectatorWatch {
	w := &spectatorWatch{seen: -1}
	go func() {
		for f := range s.Frames() {
			w.take(f)
		}
	}()
	return w
}

func (w *spectatorWatch) take(f protocol.ServerFrame) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fail := func(format string, args ...any) {
		if w.problem == nil {
			w.problem = fmt.Errorf(format, args...)
		}
	}
	switch v := f.(type) {
	case *protocol.ServerHello:
		if v.PlayerIndex != protocol.SeatSpectator {
			fail("hello as seat %d", v.PlayerIndex)
		}
	case *protocol.ServerIntentResult:
		if v.Accepted || v.Code != protocol.RejectSpectator {
			fail("a spectator's intent answered %+v", v)
		}
		w.refused++
	case *protocol.ServerSnapshot:
		if v.View.You != protocol.SeatSpectator || len(v.View.LegalIntents) != 0 || len(v.View.Players[0].Hand)+len(v.View.Players[1].Hand) != 0 {
			fail("a spectator's snapshot shows a hand or legal intents")
		}
		w.seen = v.View.EventSeq
		w.finished = v.View.IsFinished
	case *protocol.ServerEvents:
		if w.seen >= 0 && v.FromSeq > w.seen+1 {
			fail("events jump from seq %d to %d", w.seen, v.FromSeq)
		}
		for _, e := range v.Events {
			switch ev := e.Event.(type) {
			case *protocol.CardsDrawnEvent:
				if len(ev.Cards) != 0 {
					fail("seq %d: a drawn card reaches a spectator", e.Seq)
				}
			case *protocol.CardSearchedViewEvent, *protocol.SearchFailedViewEvent:
				fail("seq %d: an owner-only event reaches a spectator", e.Seq)
			case *protocol.DecisionEvent:
				if len(ev.LegalIntents) != 0 || ev.Choice != nil {
					fail("seq %d: a Decision with legal intents reaches a spectator", e.Seq)
				}
			case *protocol.GameFinishedEvent:
				w.finished = true
			}
		}
		w.seen = max(w.seen, v.ToSeq)
	}
}

func (w *spectatorWatch) state() (seen int64, finished bool, problem error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen, w.finished, w.problem
}

func (w *spectatorWatch) refusals() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

// TestChaosSpectatorFollowsOwnerKill: two spectators watch a bot match
// through the edge-only member, one from its start and one from a later
// seq; the member that owns the match is killed -9 midway. Both streams go
// on through the failover to GameFinished without a gap, and neither ever
// holds a hidden card; a spectator's intent is refused and changes nothing.
func TestChaosSpectatorFollowsOwnerKill(t *testing.T) {
	cc := startChaosCluster(t, append(slices.Clone(relaxedDetection), "--bot-think", "60ms", "--max-spectators", "4")...)
	var id string
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		seed := uint64(39)
		var err error
		id, err = cc.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1", Bot: true}, {Name: "B", Deck: "S2", Bot: true}}, &seed)
		return err
	})
	watch := func() (*client.Session, *spectatorWatch) {
		t.Helper()
		// The session lives as long as Start's context: the test's.
		s, err := client.Start(context.Background(), client.Config{
			Addr: "ws://" + cc.edge.http + "/game", Ticket: cc.admin.TicketFunc(id, protocol.SeatSpectator),
			ClientBuild: "spectator-test", Backoff: []time.Duration{0, 200 * time.Millisecond, time.Second},
		})
		if err != nil {
			t.Fatalf("spectator session: %v", err)
		}
		t.Cleanup(s.Close)
		return s, watchSpectator(s)
	}
	first, w1 := watch()
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if n := len(cc.logEpochs(t, id)); n < 15 {
			return fmt.Errorf("%d log entries so far", n)
		}
		return nil
	})
	_, w2 := watch()
	if _, err := first.SendIntent(protocol.Concede{}); err != nil {
		t.Fatalf("a spectator's intent: %v (session: %v)", err, first.Err())
	}
	ownerID, epoch := cc.owner(t, id)
	victim := cc.procByMember(ownerID)
	if victim == nil {
		t.Fatalf("owner %s is not a match member", ownerID)
	}
	before, _, _ := w1.state()
	victim.kill()
	clustertest.Eventually(t, 120*time.Second, 100*time.Millisecond, func() error {
		for i, w := range []*spectatorWatch{w1, w2} {
			seen, finished, problem := w.state()
			if problem != nil {
				t.Fatalf("spectator %d: %v", i+1, problem)
			}
			if !finished {
				return fmt.Errorf("spectator %d at seq %d, not finished", i+1, seen)
			}
		}
		return nil
	})
	newOwner, newEpoch := cc.owner(t, id)
	if newOwner == ownerID || newEpoch <= epoch {
		t.Fatalf("owner %s epoch %d after the kill (was %s, %d)", newOwner, newEpoch, ownerID, epoch)
	}
	seen, _, _ := w1.state()
	if seen <= before {
		t.Fatalf("the first spectator saw nothing after the kill (seq %d, %d before)", seen, before)
	}
	if n := w1.refusals(); n != 1 {
		t.Fatalf("the spectator's Concede was answered %d times with code Spectator, want once", n)
	}
	t.Logf("spectators followed the match from seq %d through the owner's kill to its end at seq %d (epoch %d on %s)", before, seen, newEpoch, newOwner)
}
