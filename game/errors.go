package game

import (
	"errors"
	"fmt"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// Sentinel errors callers branch on. A *Rejection matches the sentinel of its
// code under errors.Is.
var (
	// ErrIllegal: the command is not among the decider's legal commands.
	ErrIllegal = errors.New("game: illegal command")
	// ErrNotYourTurn: the command came from the player who is not deciding.
	ErrNotYourTurn = errors.New("game: not your turn")
	// ErrMatchFinished: the match has ended; no command is accepted.
	ErrMatchFinished = errors.New("game: match finished")
	// ErrInvalidDeck: a deck list breaks the construction rules
	// (docs/rules.md §1 (D2)); the catalog's own error, which New returns.
	ErrInvalidDeck = catalog.ErrInvalidDeck
	// ErrBadState: MarshalState bytes are corrupt, truncated or of an unknown version.
	ErrBadState = errors.New("game: bad state")
)

// Rejection is the error Execute returns for a command it refuses. A
// rejection changes nothing: no state, no RNG, no seq.
type Rejection struct {
	// Code is the wire code: RejectIllegal, RejectNotYourTurn or RejectMatchFinished.
	Code protocol.IntentRejectCode
	// Reason is a short human-readable explanation, never parsed by clients.
	Reason string
}

// Error implements error.
func (r *Rejection) Error() string {
	return fmt.Sprintf("game: rejected (%v): %s", r.Code, r.Reason)
}

// Is makes errors.Is(r, ErrIllegal) (and the other codes' sentinels) true.
func (r *Rejection) Is(target error) bool {
	switch target {
	case ErrIllegal:
		return r.Code == protocol.RejectIllegal
	case ErrNotYourTurn:
		return r.Code == protocol.RejectNotYourTurn
	case ErrMatchFinished:
		return r.Code == protocol.RejectMatchFinished
	}
	return false
}

func illegal(reason string) *Rejection {
	return &Rejection{Code: protocol.RejectIllegal, Reason: reason}
}
