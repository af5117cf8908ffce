package actors

import (
	"errors"

	"github.com/matchgrain/matchgrain/game"
	"github.com/matchgrain/matchgrain/protocol"
)

// GameRules is the Rules of the card game in package game.
type GameRules struct{}

var _ Rules = GameRules{}

// New implements Rules: decks are deck ids such as "S1".
func (GameRules) New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error) {
	var lists [2][]string
	for i, id := range decks {
		l, err := game.DeckList(game.DeckID(id))
		if err != nil {
			return nil, nil, err
		}
		lists[i] = l
	}
	e, evs, err := game.New(seed, lists)
	if err != nil {
		return nil, nil, err
	}
	return e, evs, nil
}

// Restore implements Rules.
func (GameRules) Restore(state []byte) (Engine, error) {
	e, err := game.UnmarshalState(state)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Project implements Rules.
func (GameRules) Project(viewer int, ev protocol.Event) (protocol.Event, bool) {
	return game.ProjectEvent(viewer, ev)
}

// RejectCode implements Rules.
func (GameRules) RejectCode(err error) (protocol.IntentRejectCode, string) {
	var r *game.Rejection
	if errors.As(err, &r) {
		return r.Code, r.Reason
	}
	return protocol.RejectIllegal, "rejected"
}
