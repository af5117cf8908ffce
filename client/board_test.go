package client_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

func ref(id int) protocol.CardRef { return protocol.CardRef{InstanceID: id, PrintingID: "P"} }

func TestBoardApply(t *testing.T) {
	view := &protocol.MatchView{EventSeq: 10, TurnNumber: 2, Winner: protocol.NoWinner}
	view.Players[0].Vanguard = &protocol.CardView{InstanceID: 1}
	view.Players[1].RearGuards[3] = &protocol.CardView{InstanceID: 30}
	view.Players[1].FaceDownDamage = 1
	view.Players[1].FaceUpDamage = []protocol.CardView{{InstanceID: 40}}

	b := client.BoardFromView(view)
	if b.Players[0].Vanguard != 1 || b.Players[1].RearGuards[3] != 30 || b.Players[1].Damage != 2 {
		t.Fatalf("from view: %+v", b)
	}
	events := []protocol.Event{
		&protocol.TurnStartedEvent{TurnNumber: 3, Player: 0},
		&protocol.RideEvent{Player: 0, Card: ref(5), Previous: ref(1)},
		&protocol.CallEvent{Player: 0, Card: ref(6), Slot: 3},
		&protocol.CallEvent{Player: 0, Card: ref(7), Slot: 0},
		&protocol.MoveEvent{Player: 0, Card: ref(6), FromSlot: 3, ToSlot: 0, Swapped: &protocol.CardRef{InstanceID: 7}},
		&protocol.GuardEvent{Player: 1, Card: ref(30), FromZone: protocol.ZoneRC, FromSlot: 3},
		&protocol.DamageEvent{Player: 1, Card: ref(41), DamageCount: 3},
		&protocol.TriggerResolvedEvent{Player: 1, Card: ref(42), Healed: &protocol.CardRef{InstanceID: 40}},
		&protocol.RetireEvent{Player: 0, Card: ref(7), FromZone: protocol.ZoneRC, FromSlot: 3},
		&protocol.CallEvent{Player: 9, Card: ref(8), Slot: 1},  // bad player: ignored
		&protocol.CallEvent{Player: 0, Card: ref(8), Slot: 12}, // bad slot: ignored
		&protocol.GameFinishedEvent{Winner: 0, Reason: protocol.FinishDamage},
	}
	for i, ev := range events {
		b.Apply(protocol.EventEnvelope{Seq: int64(11 + i), Event: ev})
	}
	want := client.Board{EventSeq: 22, TurnNumber: 3, Finished: true, Winner: 0}
	want.Players[0] = client.BoardPlayer{Vanguard: 5, RearGuards: [5]int{6, 0, 0, 0, 0}}
	want.Players[1] = client.BoardPlayer{Damage: 2}
	if d := b.Diff(want); len(d) != 0 {
		t.Fatalf("board after events differs: %v", d)
	}
}

func TestBoardDiff(t *testing.T) {
	a := client.Board{EventSeq: 5, Winner: -1}
	b := a
	if d := a.Diff(b); len(d) != 0 {
		t.Fatalf("equal boards differ: %v", d)
	}
	b.Players[1].RearGuards[2] = 9
	b.Players[0].Damage = 1
	b.EventSeq = 6
	d := a.Diff(b)
	if len(d) != 3 || !strings.Contains(strings.Join(d, ";"), "players[1].rearGuards") {
		t.Fatalf("diff %v", d)
	}
	// An unknown vanguard (0, the opponent's face-down starter) is no difference.
	b = a
	b.Players[1].Vanguard = 12
	if d := a.Diff(b); len(d) != 0 {
		t.Fatalf("unknown vanguard reported: %v", d)
	}
}

// A snapshot gives face-down damage only as a count, so a Board started
// from one cannot know where a face-down card sits among the face-up ones;
// when it is flipped face up its place is a guess. ViewDiff then compares
// the face-up damage as cards, not as an order; a Board that saw every
// damage card arrive still compares the order, and wrong cards are always
// reported.
func TestBoardDamageOrderFromSnapshot(t *testing.T) {
	reversed := func(v protocol.MatchView, p int) protocol.MatchView {
		v.Players[p].FaceUpDamage = slices.Clone(v.Players[p].FaceUpDamage)
		slices.Reverse(v.Players[p].FaceUpDamage)
		return v
	}
	snap := protocol.MatchView{You: 0, Winner: protocol.NoWinner, ActivePlayer: 0, EventSeq: 10}
	for p := range snap.Players {
		snap.Players[p].Index = p
	}
	snap.Players[1].FaceDownDamage = 1
	snap.Players[1].FaceUpDamage = []protocol.CardView{{InstanceID: 24, PrintingID: "S1-008", FaceUp: true}}
	b := client.BoardFromView(&snap)
	// The face-down card (really the second in the zone) is flipped up.
	b.Apply(protocol.EventEnvelope{Seq: 11, Event: &protocol.DamageFlippedEvent{Player: 1, FaceUp: true,
		Cards: []protocol.CardRef{{InstanceID: 52, PrintingID: "S1-006"}}}})
	guess := b.View()
	if got := guess.Players[1].FaceUpDamage; len(got) != 2 || got[0].InstanceID != 52 {
		t.Fatalf("face-up damage after the flip: %+v, want the flipped card placed first", got)
	}
	server := reversed(guess, 1) // the server's order: 24, then 52
	if d := b.ViewDiff(&server); len(d) > 0 {
		t.Fatalf("guessed damage order reported as a difference: %v", d)
	}
	wrong := reversed(guess, 1)
	wrong.Players[1].FaceUpDamage[1].InstanceID = 53
	if d := b.ViewDiff(&wrong); len(d) == 0 {
		t.Fatal("a different face-up damage card was not reported")
	}

	// A Board that saw both damage cards arrive knows their order.
	known := client.BoardFromView(&protocol.MatchView{You: 0, Winner: protocol.NoWinner, EventSeq: 10,
		Players: [2]protocol.PlayerView{{Index: 0}, {Index: 1}}})
	known.Apply(protocol.EventEnvelope{Seq: 11, Event: &protocol.DamageEvent{Player: 1, Card: protocol.CardRef{InstanceID: 52, PrintingID: "S1-006"}}})
	known.Apply(protocol.EventEnvelope{Seq: 12, Event: &protocol.DamageEvent{Player: 1, Card: protocol.CardRef{InstanceID: 24, PrintingID: "S1-008"}}})
	swapped := reversed(known.View(), 1)
	if d := known.ViewDiff(&swapped); len(d) == 0 {
		t.Fatal("a known damage order that differs was not reported")
	}
}
