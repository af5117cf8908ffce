package actors

import (
	"errors"

	"github.com/matchgrain/matchgrain/protocol"
)

// Engine is what the grain needs from a rules engine. game.Engine satisfies
// it; the grain depends on nothing else of the engine's details, so the rules
// can change without touching durability or routing.
type Engine interface {
	// Execute applies one intent of player; an error is a rejection that
	// changed nothing.
	Execute(player int, in protocol.Intent) ([]protocol.EventEnvelope, error)
	// Finish ends the match on a server decision; loser -1 is a draw.
	Finish(loser int, reason protocol.FinishReason) []protocol.EventEnvelope
	// Decider is the seat whose decision the engine waits for; -1 when finished.
	Decider() int
	// View is player's projection of the state.
	View(player int) protocol.MatchView
	// LastSeq is the seq of the last event produced.
	LastSeq() int64
	// IsFinished reports whether the match ended.
	IsFinished() bool
	// MarshalState serialises the whole engine state, RNG included.
	MarshalState() ([]byte, error)
}

// Rules builds engines and knows the engine-specific pieces the grain cannot
// derive itself: how to restore a state, project an event for a seat, and
// classify a rejection.
type Rules interface {
	// New sets a match up and returns the events up to the first decision.
	New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error)
	// Restore rebuilds an engine from MarshalState bytes.
	Restore(state []byte) (Engine, error)
	// Project returns ev as viewer may see it, or false if viewer must not see it.
	Project(viewer int, ev protocol.Event) (protocol.Event, bool)
	// RejectCode maps an Execute error to the wire code and a short reason.
	RejectCode(err error) (protocol.IntentRejectCode, string)
}

// Versioned is implemented by Rules that name their version. A match
// records the version it was created with and only activates on a member
// whose Rules report the same one, so that replaying its log reproduces the
// same events (docs/operations.md).
type Versioned interface {
	Version() string
}

// RulesVersion is the version of r, or "" when r does not name one.
func RulesVersion(r Rules) string {
	if v, ok := r.(Versioned); ok {
		return v.Version()
	}
	return ""
}

// ErrVersionMismatch: the match is pinned to rules this member does not run.
var ErrVersionMismatch = errors.New("match pinned to other rules")
