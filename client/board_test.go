package client_test

import (
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
