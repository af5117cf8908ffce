package client

import (
	"fmt"
	"slices"

	"github.com/matchgrain/matchgrain/protocol"
)

// Board is what a client keeps of a match from events. Its summary fields
// (who stands on which circle, damage counts, turn and result) follow the
// public events of any engine; View is the seat's whole MatchView kept from
// the events of the bundled game (docs/protocol.md §13), legal intents
// included, so a client acts without asking for a snapshot. A Session keeps
// one from the last snapshot (or from seq 0) plus the events after it, and
// compares it with every later snapshot at the same eventSeq; a difference
// means a lost, duplicated or misordered event (or a server bug), which is
// what the acceptance tests look for.
type Board struct {
	// EventSeq is the last event applied.
	EventSeq   int64
	TurnNumber int
	Finished   bool
	// Winner is protocol.NoWinner while the match runs and on a draw.
	Winner int
	// Reason is why the match ended: nil while it runs, and after a
	// snapshot from a server that predates MatchView.finishReason.
	Reason  *protocol.FinishReason
	Players [2]BoardPlayer

	view viewState
}

// BoardPlayer is one player's circles and damage.
type BoardPlayer struct {
	// Vanguard is the instance id on the vanguard circle; 0 when unknown
	// (the opponent's face-down starter before stand-up).
	Vanguard int
	// RearGuards are the instance ids on circles 0..4; 0 is empty.
	RearGuards [5]int
	// Damage counts face-up and face-down damage cards.
	Damage int
}

// NewBoard is seat's Board before the first event (a match followed from
// seq 1 without any snapshot).
func NewBoard(seat int) Board {
	return Board{Winner: protocol.NoWinner, view: newViewState(seat)}
}

// BoardFromView extracts the Board of a snapshot.
func BoardFromView(v *protocol.MatchView) Board {
	b := Board{EventSeq: v.EventSeq, TurnNumber: v.TurnNumber, Finished: v.IsFinished, Winner: v.Winner, Reason: v.FinishReason, view: viewStateFrom(v)}
	for i := range v.Players {
		p := &v.Players[i]
		bp := &b.Players[i]
		if p.Vanguard != nil {
			bp.Vanguard = p.Vanguard.InstanceID
		}
		for slot, c := range p.RearGuards {
			if c != nil {
				bp.RearGuards[slot] = c.InstanceID
			}
		}
		bp.Damage = p.FaceDownDamage + len(p.FaceUpDamage)
	}
	return b
}

func validPlayer(p int) bool { return p == 0 || p == 1 }
func validSlot(s int) bool   { return s >= 0 && s < 5 }

// Apply applies one event. Events that do not touch the Board are ignored;
// so are events naming players or circles out of range (the Board then
// disagrees with the next snapshot, which is how such a bug shows).
func (b *Board) Apply(e protocol.EventEnvelope) {
	if e.Seq > b.EventSeq {
		b.EventSeq = e.Seq
	}
	b.view.apply(e)
	switch ev := e.Event.(type) {
	case *protocol.TurnStartedEvent:
		b.TurnNumber = ev.TurnNumber
	case *protocol.StandUpEvent:
		for i, c := range ev.Vanguards {
			b.Players[i].Vanguard = c.InstanceID
		}
	case *protocol.RideEvent:
		if validPlayer(ev.Player) {
			b.Players[ev.Player].Vanguard = ev.Card.InstanceID
		}
	case *protocol.CallEvent:
		if validPlayer(ev.Player) && validSlot(ev.Slot) {
			b.Players[ev.Player].RearGuards[ev.Slot] = ev.Card.InstanceID
		}
	case *protocol.MoveEvent:
		if validPlayer(ev.Player) && validSlot(ev.FromSlot) && validSlot(ev.ToSlot) {
			rg := &b.Players[ev.Player].RearGuards
			rg[ev.ToSlot] = ev.Card.InstanceID
			rg[ev.FromSlot] = 0
			if ev.Swapped != nil {
				rg[ev.FromSlot] = ev.Swapped.InstanceID
			}
		}
	case *protocol.RetireEvent:
		if validPlayer(ev.Player) && ev.FromZone == protocol.ZoneRC && validSlot(ev.FromSlot) {
			b.Players[ev.Player].RearGuards[ev.FromSlot] = 0
		}
	case *protocol.GuardEvent:
		// An intercept moves a rear-guard to the guardian circle.
		if validPlayer(ev.Player) && ev.FromZone == protocol.ZoneRC && validSlot(ev.FromSlot) {
			b.Players[ev.Player].RearGuards[ev.FromSlot] = 0
		}
	case *protocol.DamageEvent:
		if validPlayer(ev.Player) {
			b.Players[ev.Player].Damage = ev.DamageCount
		}
	case *protocol.TriggerResolvedEvent:
		if validPlayer(ev.Player) && ev.Healed != nil && b.Players[ev.Player].Damage > 0 {
			b.Players[ev.Player].Damage--
		}
	case *protocol.GameFinishedEvent:
		b.Finished = true
		b.Winner = ev.Winner
		reason := ev.Reason
		b.Reason = &reason
	}
}

// Diff lists the differences from o, empty when they agree.
func (b Board) Diff(o Board) []string {
	var d []string
	add := func(field string, mine, theirs any) {
		d = append(d, fmt.Sprintf("%s: local %v, server %v", field, mine, theirs))
	}
	if b.EventSeq != o.EventSeq {
		add("eventSeq", b.EventSeq, o.EventSeq)
	}
	if b.TurnNumber != o.TurnNumber {
		add("turnNumber", b.TurnNumber, o.TurnNumber)
	}
	if b.Finished != o.Finished {
		add("finished", b.Finished, o.Finished)
	}
	if b.Winner != o.Winner {
		add("winner", b.Winner, o.Winner)
	}
	if b.Reason != nil && o.Reason != nil && *b.Reason != *o.Reason {
		add("finishReason", *b.Reason, *o.Reason)
	}
	for i := range b.Players {
		p, q := b.Players[i], o.Players[i]
		if p.Vanguard != q.Vanguard && p.Vanguard != 0 && q.Vanguard != 0 {
			add(fmt.Sprintf("players[%d].vanguard", i), p.Vanguard, q.Vanguard)
		}
		if p.RearGuards != q.RearGuards {
			add(fmt.Sprintf("players[%d].rearGuards", i), p.RearGuards, q.RearGuards)
		}
		if p.Damage != q.Damage {
			add(fmt.Sprintf("players[%d].damage", i), p.Damage, q.Damage)
		}
	}
	return d
}

// SetSeq records that every event up to seq was applied (a batch's toSeq
// covers events this seat may not see).
func (b *Board) SetSeq(seq int64) {
	if seq > b.EventSeq {
		b.EventSeq = seq
	}
	if seq > b.view.v.EventSeq {
		b.view.v.EventSeq = seq
	}
}

// SetClock records the latest ServerClock (the clock is not an event).
func (b *Board) SetClock(c protocol.ClockView) { b.view.v.Clock = c }

// SetMatch records what the ServerHello says and no event does: the match
// id and the seat.
func (b *Board) SetMatch(matchID string, seat int) {
	b.view.v.MatchID, b.view.v.You = matchID, seat
}

// View is the seat's whole view as kept from events: after every complete
// batch it equals a fresh snapshot at the same eventSeq (but the clock and
// the players' names, which no event carries).
func (b *Board) View() protocol.MatchView { return cloneView(&b.view.v) }

// LegalIntents is what this seat may send now, from the last Decision.
func (b *Board) LegalIntents() []protocol.Intent { return b.view.v.LegalIntents }

// ViewDiff lists where View differs from a snapshot v of the same seq
// (clock and names aside), empty when they agree. A Board started from a
// snapshot that had face-down damage cannot know those cards' places among
// the face-up ones (a snapshot gives only their count), so once one of them
// is face up, that player's face-up damage is compared as cards, not order.
func (b *Board) ViewDiff(v *protocol.MatchView) []string { return b.view.diff(v) }

// clone is a deep copy (the Session hands copies out while it keeps applying).
func (b Board) clone() Board {
	b.view.v = cloneView(&b.view.v)
	for p := range b.view.damage {
		b.view.damage[p] = slices.Clone(b.view.damage[p])
	}
	return b
}
