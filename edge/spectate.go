package edge

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// Spectator tickets (docs/protocol.md §14.1): a ticket of the usual format
// whose seat is protocol.SeatSpectator, through the admin API
//
//	POST /api/game/spectator-tickets {"matchId":…}
//
// and, with Config.PublicPlay, for anyone who knows the match id
//
//	POST /api/play/spectate {"matchId":…}
//
// Both answer {"ticket", "matchId", "seat": 2, "expiresAt", "delayEvents",
// "delayMs"}. A spectator sees only what both seats may see, so a match id
// is all it takes; the match caps its spectators when they connect.

// A spectator's connection is dropped once this many frames, or bytes,
// wait for it (a seat's bounds are Config.OutboundQueueFrames and
// OutboundQueueBytes, when lower): docs/protocol.md §14.8.
const (
	SpectatorQueueFrames = 64
	SpectatorQueueBytes  = 1 << 20
)

type spectatorTicketRequest struct {
	MatchID string `json:"matchId"`
}

type spectatorTicketResponse struct {
	ticketResponse
	// DelayEvents and DelayMs are the spectator delay of the match
	// (docs/protocol.md §14.5).
	DelayEvents int   `json:"delayEvents"`
	DelayMs     int64 `json:"delayMs"`
}

// issueSpectatorTicket is POST /api/game/spectator-tickets (admin).
func (s *Server) issueSpectatorTicket(ctx context.Context, r *http.Request) (int, any, error) {
	var req spectatorTicketRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	return s.spectatorTicket(ctx, req.MatchID)
}

// playSpectate is POST /api/play/spectate (public play).
func (s *Server) playSpectate(ctx context.Context, r *http.Request) (int, any, error) {
	var req spectatorTicketRequest
	if err := s.publicRequest(r, &req); err != nil {
		return 0, nil, err
	}
	return s.spectatorTicket(ctx, req.MatchID)
}

// spectatorTicket issues a spectator's ticket for an existing match.
func (s *Server) spectatorTicket(ctx context.Context, matchID string) (int, any, error) {
	if err := ValidateMatchID(matchID); err != nil {
		return 0, nil, badRequest("bad_match_id", "matchId must be 1..%d printable ASCII characters", MaxMatchIDLen)
	}
	if s.cfg.MaxSpectators <= 0 {
		return 0, nil, &httpError{http.StatusForbidden, "spectators_off", "this server allows no spectators"}
	}
	ok, err := s.matches.MatchExists(ctx, matchID)
	if err != nil {
		return 0, nil, fmt.Errorf("match exists: %w", err)
	}
	if !ok {
		return 0, nil, &httpError{http.StatusNotFound, "match_not_found", "no such match"}
	}
	t, err := s.tickets.Issue(matchID, protocol.SeatSpectator)
	if err != nil {
		return 0, nil, fmt.Errorf("issue spectator ticket: %w", err)
	}
	s.metrics.ticketsIssued.Add(1)
	return http.StatusOK, spectatorTicketResponse{
		ticketResponse: ticketResponse{Ticket: t.Token, MatchID: t.MatchID, Seat: t.Seat, ExpiresAt: t.ExpiresAt.UnixMilli()},
		DelayEvents:    s.cfg.SpectatorDelayEvents, DelayMs: s.cfg.SpectatorDelay.Milliseconds(),
	}, nil
}

// ReplaysPrefix is where Config.Replays serves public replays, LivePath
// where Config.Live lists the matches to watch.
const (
	ReplaysPrefix = "/api/play/replays/"
	LivePath      = "/api/play/live"
)

// publicHandler hands a public GET to h once the client address's request
// budget allows it: a replay rebuilds a whole match, a list asks every
// live match's grain.
func (s *Server) publicHandler(h http.Handler) func(http.ResponseWriter, *http.Request) int {
	return func(w http.ResponseWriter, r *http.Request) int {
		if !s.play.allowRequest(clientKey(r), time.Now()) {
			e := tooMany()
			w.Header().Set("Retry-After", "10")
			WriteError(w, e.status, e.code, e.message)
			return e.status
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		return rec.status
	}
}
