package edge

import (
	"context"
	"errors"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// Matches is the edge's view of the match cluster. The edge holds no match
// state: everything it knows about a match comes through this interface, which
// edge/grains' Gateway satisfies. All methods are safe for concurrent
// use and may block until ctx is done.
type Matches interface {
	// CreateMatch creates the match spec describes and returns its id.
	// Errors: ErrBadRequest, ErrUnavailable (retry later), others internal.
	CreateMatch(ctx context.Context, spec MatchSpec) (string, error)
	// MatchExists reports whether matchID is known (for the ticket endpoint's 404).
	MatchExists(ctx context.Context, matchID string) (bool, error)
	// NameSeat gives a guest seat (MatchSpec.Guests) the name its player
	// chose; the first name stands, a later one changes nothing. Both
	// seats' views carry it from then on. Errors: ErrMatchNotFound,
	// ErrBadRequest (not a guest seat), ErrUnavailable.
	NameSeat(ctx context.Context, matchID string, seat int, name string) error
	// OpenSeat attaches a connection to a seat. The ticket (already verified
	// by the edge: signature, expiry, match, seat) is consumed here exactly
	// once, durably (ErrTicketUsed on reuse). On success the sink has ALREADY
	// been given, in order, the ServerHello and then either ServerEvents
	// (resume) or a ServerSnapshot, exactly as docs/protocol.md §4.2/§9.8 say;
	// afterwards every frame for this seat (intent results, events, clocks)
	// arrives through sink.Deliver in order. Seat protocol.SeatSpectator
	// opens a spectator's read-only session (docs/protocol.md §14). Errors:
	// ErrMatchNotFound, ErrTicketUsed, ErrSpectatorsFull, ErrUnavailable
	// (retry later), others internal.
	OpenSeat(ctx context.Context, req OpenSeatRequest, sink SeatSink) (Seat, error)
}

// MatchSpec describes a match to create.
type MatchSpec struct {
	// Names are the players' display names; Decks their deck ids ("S1", "S2").
	Names, Decks [2]string
	// Bots marks the seats the match plays itself (a training match): no
	// ticket opens such a seat.
	Bots [2]bool
	// Guests marks the seats left for a player who joins later through an
	// invite (a friend match): the decision clock waits for each one's
	// first connection (docs/protocol.md §9, point 9).
	Guests [2]bool
	// Seed is the engine seed; nil lets the cluster pick one.
	Seed *uint64
}

// OpenSeatRequest names the seat a verified ticket grants.
type OpenSeatRequest struct {
	// MatchID and Seat come from the ticket.
	MatchID string
	Seat    int
	// TicketID is the ticket's random 128-bit id (32 hex digits); the match
	// records it durably so that the ticket opens a seat at most once.
	TicketID string
	// TicketExpires is when the ticket stops being valid; a used-ticket record
	// can be forgotten after it.
	TicketExpires time.Time
	// ResumeFromSeq is ClientHello.resumeFromSeq (never negative).
	ResumeFromSeq int64
}

// Seat is one attached connection's handle. The edge calls its methods from
// the connection's reader goroutine only, one at a time.
type Seat interface {
	// Intent submits an intent; its ServerIntentResult (and ServerEvents if
	// accepted) arrive through the sink, in that order. Calls are made in
	// the order the client sent the intents and the implementation must keep
	// that order. It may block until the match has taken the intent in; an
	// error means the match could not be reached (the edge closes the
	// connection with 4500 so that the client resumes and retries the same
	// intentId). The edge itself answers only what it decides alone
	// (RateLimited, NotSupported for an unknown intent key, Malformed), using
	// LastSeq() for the result's eventSeq.
	//
	// ci is the frame as the edge decoded it, handed on as it is: the
	// implementation must not change it, and carries it to the match
	// without encoding it again where it can.
	Intent(ctx context.Context, ci *protocol.ClientIntent) error
	// Resync asks for events from fromSeq (inclusive) or a snapshot; the
	// frames arrive through the sink.
	Resync(ctx context.Context, fromSeq int64, full bool) error
	// LastSeq is the last eventSeq delivered to this seat. It must not block.
	LastSeq() int64
	// Close tells the match that the connection ended (leave: ClientLeave was
	// received). The edge calls it exactly once per successful OpenSeat, also
	// after the match detached the sink; for an attachment the match has
	// already dropped (replaced, say) it must be a no-op. It must not block
	// for long.
	Close(leave bool)
}

// SeatSink receives the frames of one seat. The edge's sink never blocks:
// Deliver enqueues and returns. It is called from one goroutine at a time.
type SeatSink interface {
	// Deliver hands over encoded server frames, in order. The edge keeps the
	// slices (the caller must not modify them afterwards). When the
	// connection's bounded queue is full the connection is closed instead.
	Deliver(frames [][]byte)
	// Detach tells the edge that the match dropped this attachment.
	Detach(reason DetachReason)
}

// DetachReason says why a match dropped an attachment.
type DetachReason int

// Detach reasons.
const (
	// DetachReplaced: another connection took the seat; the edge closes
	// with 4409 (TCP: ServerError SessionReplaced).
	DetachReplaced DetachReason = iota + 1
	// DetachUnavailable: the grain was lost and the attachment could not be
	// re-established; the edge closes with 4500/Internal so that the client
	// reconnects and resumes.
	DetachUnavailable
	// DetachShutdown: the match's node drains; the edge closes with 1001
	// (TCP: ServerError Internal) so that the client reconnects elsewhere.
	DetachShutdown
)

// String returns a short name for logs.
func (r DetachReason) String() string {
	switch r {
	case DetachReplaced:
		return "replaced"
	case DetachUnavailable:
		return "unavailable"
	case DetachShutdown:
		return "shutdown"
	default:
		return "unknown"
	}
}

// Errors a Matches implementation returns for the edge to branch on.
var (
	// ErrMatchNotFound: the match does not exist (or was deleted).
	ErrMatchNotFound = errors.New("edge: match not found")
	// ErrTicketUsed: the ticket already opened a seat once.
	ErrTicketUsed = errors.New("edge: ticket already used")
	// ErrUnavailable: the match cannot be reached right now; retry later.
	ErrUnavailable = errors.New("edge: match unavailable")
	// ErrBadRequest: CreateMatch refused its arguments (an unknown deck,
	// say); the HTTP API answers 400.
	ErrBadRequest = errors.New("edge: bad request")
	// ErrSpectatorsFull: the match has as many spectators as it allows
	// (docs/protocol.md §14.7); the ticket was not spent.
	ErrSpectatorsFull = errors.New("edge: spectators full")
)
