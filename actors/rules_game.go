package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/matchgrain/matchgrain/game"
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// GameRules is the Rules of the card game in package game.
type GameRules struct{}

var _ Rules = GameRules{}

// RulesRevision numbers the behaviour of the rules engine and of the bot
// policy (game/botpolicy). Bump it with any change that can make one log
// replay into other events, or a bot seat choose otherwise at the same log
// position: matches pin the version they were created with (Versioned), and
// TestBotPolicyPinnedToRulesRevision holds the policy to the revision.
const RulesRevision = 1

// gameRulesVersion is "rules/<revision>+catalog/<hash>": the catalog part
// changes by itself whenever a printing or a deck list changes.
var gameRulesVersion = func() string {
	h := sha256.New()
	fmt.Fprintf(h, "%+v\n%+v\n", catalog.Printings(), catalog.Decks())
	for _, d := range catalog.Decks() {
		l, _ := catalog.DeckList(d.ID) // ids from Decks exist
		fmt.Fprintf(h, "%s:%v\n", d.ID, l)
	}
	return fmt.Sprintf("rules/%d+catalog/%s", RulesRevision, hex.EncodeToString(h.Sum(nil))[:12])
}()

// Version implements Versioned.
func (GameRules) Version() string { return gameRulesVersion }

// New implements Rules: decks are deck ids such as "S1".
func (GameRules) New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error) {
	var lists [2][]string
	for i, id := range decks {
		l, err := catalog.DeckList(catalog.DeckID(id))
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
