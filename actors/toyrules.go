package actors

import (
	"errors"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/protocol"
)

// ToyRules is a tiny deterministic game behind the Rules interface, so the
// grain's durability, idempotency, clocks and routing are tested without the
// card game's details (this package's tests, the simulator actors/sim):
// players alternate EndTurn; each turn draws a card only its owner may see
// (the other seat gets the count) and emits an event only its owner sees,
// so projections are exercised; turn Turns (20 when 0) ends the match.
// Its decks are "S1" and "S2".
type ToyRules struct {
	Turns int
}

type toyEngine struct {
	Limit    int
	Seq      int64
	Next     int
	Turn     int
	Finished bool
	Winner   int
	Reason   int
}

var errToyIllegal = errors.New("toy: illegal")

// New implements Rules.
func (r ToyRules) New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error) {
	for _, d := range decks {
		if d != "S1" && d != "S2" {
			return nil, nil, errors.New("toy: unknown deck " + d)
		}
	}
	e := &toyEngine{Limit: r.Turns, Next: int(seed % 2), Winner: -1}
	if e.Limit <= 0 {
		e.Limit = 20
	}
	return e, []protocol.EventEnvelope{e.emit(&protocol.GameStartedEvent{FirstPlayer: e.Next, DeckSize: [2]int{50, 50}})}, nil
}

// Restore implements Rules.
func (ToyRules) Restore(state []byte) (Engine, error) {
	var e toyEngine
	if err := msgpack.Unmarshal(state, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Project implements Rules.
func (ToyRules) Project(viewer int, ev protocol.Event) (protocol.Event, bool) {
	if d, ok := ev.(*protocol.CardsDrawnEvent); ok && d.Player != viewer {
		return &protocol.CardsDrawnEvent{Player: d.Player, Count: d.Count}, true
	}
	if s, ok := ev.(*protocol.SearchFailedViewEvent); ok && s.Player != viewer {
		return nil, false
	}
	return ev, true
}

// RejectCode implements Rules.
func (ToyRules) RejectCode(err error) (protocol.IntentRejectCode, string) {
	return protocol.RejectIllegal, err.Error()
}

func (e *toyEngine) emit(ev protocol.Event) protocol.EventEnvelope {
	e.Seq++
	return protocol.EventEnvelope{Seq: e.Seq, Event: ev}
}

func (e *toyEngine) Execute(player int, in protocol.Intent) ([]protocol.EventEnvelope, error) {
	if e.Finished || player != e.Next {
		return nil, errToyIllegal
	}
	if _, ok := in.(protocol.EndTurn); !ok {
		return nil, errToyIllegal
	}
	e.Turn++
	e.Next = 1 - e.Next
	evs := []protocol.EventEnvelope{
		e.emit(&protocol.TurnStartedEvent{TurnNumber: e.Turn, Player: e.Next}),
		// A private draw (redacted for the other seat) and an owner-only
		// event, so projections are exercised.
		e.emit(&protocol.CardsDrawnEvent{Player: e.Next, Count: 1, Cards: []protocol.CardRef{{InstanceID: 40 + e.Turn, PrintingID: "S1-002"}}}),
		e.emit(&protocol.SearchFailedViewEvent{Player: e.Next, Query: "grade=1"}),
	}
	if e.Turn >= e.Limit {
		evs = append(evs, e.Finish(1-e.Next, protocol.FinishDamage)...)
	}
	return evs, nil
}

func (e *toyEngine) Finish(loser int, reason protocol.FinishReason) []protocol.EventEnvelope {
	if e.Finished {
		return nil
	}
	e.Finished = true
	e.Winner = -1
	if loser >= 0 {
		e.Winner = 1 - loser
	}
	e.Reason = int(reason)
	return []protocol.EventEnvelope{e.emit(&protocol.GameFinishedEvent{Winner: e.Winner, Reason: reason})}
}

func (e *toyEngine) Decider() int {
	if e.Finished {
		return -1
	}
	return e.Next
}

func (e *toyEngine) View(player int) protocol.MatchView {
	v := protocol.MatchView{You: player, ActivePlayer: e.Next, TurnNumber: e.Turn, IsFinished: e.Finished, Winner: e.Winner}
	v.Players[0].Index, v.Players[1].Index = 0, 1
	if !e.Finished && player == e.Next {
		v.LegalIntents = []protocol.Intent{protocol.EndTurn{}}
	}
	return v
}

func (e *toyEngine) LastSeq() int64                { return e.Seq }
func (e *toyEngine) IsFinished() bool              { return e.Finished }
func (e *toyEngine) MarshalState() ([]byte, error) { return msgpack.Marshal(e) }
