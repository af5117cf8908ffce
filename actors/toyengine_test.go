package actors

import (
	"errors"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/protocol"
)

// toyRules is a tiny deterministic engine behind the Rules interface, so the
// grain's durability, idempotency, clocks and routing are tested without the
// card game's details: players alternate EndTurn; turn 20 ends the match.
type toyRules struct{}

type toyEngine struct {
	Seq      int64
	Next     int
	Turn     int
	Finished bool
	Winner   int
	Reason   int
}

var errToyIllegal = errors.New("toy: illegal")

func (toyRules) New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error) {
	for _, d := range decks {
		if d != "S1" && d != "S2" {
			return nil, nil, errors.New("toy: unknown deck " + d)
		}
	}
	e := &toyEngine{Next: int(seed % 2), Winner: -1}
	return e, []protocol.EventEnvelope{e.emit(&protocol.GameStartedEvent{FirstPlayer: e.Next, DeckSize: [2]int{50, 50}})}, nil
}

func (toyRules) Restore(state []byte) (Engine, error) {
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
		// A private draw (redacted for the other seat) and an owner-only
		// event, so projections are exercised.
		e.emit(&protocol.CardsDrawnEvent{Player: e.Next, Count: 1, Cards: []protocol.CardRef{{InstanceID: 40 + e.Turn, PrintingID: "S1-002"}}}),
		e.emit(&protocol.SearchFailedViewEvent{Player: e.Next, Query: "grade=1"}),
	}
	if e.Turn >= 20 {
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
