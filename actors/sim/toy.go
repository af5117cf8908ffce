package sim

import (
	"errors"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/protocol"
)

// toyRules is a small deterministic game behind actors.Rules: the simulator
// tests the grain (durability, idempotency, clocks, seats), not the card
// game, and a short game makes a million matches affordable. Players
// alternate EndTurn; each turn draws a card that only its owner may see
// (the other seat gets the count) and emits an event only the owner sees,
// so redaction is exercised; turn toyTurns ends the match.
type toyRules struct{}

const toyTurns = 12

type toyEngine struct {
	Seq      int64
	Next     int
	Turn     int
	Finished bool
	Winner   int
}

var errToyIllegal = errors.New("toy: illegal")

func (toyRules) New(seed uint64, _ [2]string) (actors.Engine, []protocol.EventEnvelope, error) {
	e := &toyEngine{Next: int(seed % 2), Winner: -1}
	return e, []protocol.EventEnvelope{e.emit(&protocol.GameStartedEvent{FirstPlayer: e.Next, DeckSize: [2]int{50, 50}})}, nil
}

func (toyRules) Restore(state []byte) (actors.Engine, error) {
	var e toyEngine
	if err := msgpack.Unmarshal(state, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func (toyRules) Project(viewer int, ev protocol.Event) (protocol.Event, bool) {
	if d, ok := ev.(*protocol.CardsDrawnEvent); ok && d.Player != viewer {
		return &protocol.CardsDrawnEvent{Player: d.Player, Count: d.Count}, true
	}
	if s, ok := ev.(*protocol.SearchFailedViewEvent); ok && s.Player != viewer {
		return nil, false
	}
	return ev, true
}

func (toyRules) RejectCode(err error) (protocol.IntentRejectCode, string) {
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
		e.emit(&protocol.CardsDrawnEvent{Player: e.Next, Count: 1, Cards: []protocol.CardRef{{InstanceID: 40 + e.Turn, PrintingID: "S1-002"}}}),
		e.emit(&protocol.SearchFailedViewEvent{Player: e.Next, Query: "grade=1"}),
	}
	if e.Turn >= toyTurns {
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
