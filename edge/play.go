package edge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The public play flow lets a browser page start a match without the admin
// token (Config.PublicPlay, off by default):
//
//	POST /api/play/matches {"name":"Ann","deck":"S1","opponent":"bot"|"friend"}
//	  → 201 {"matchId":…, "seat":0, "seatKey":…, "friendSeatKey":…}
//	POST /api/play/tickets {"matchId":…, "seat":0, "seatKey":…}
//	  → 200 {"ticket":…, "matchId":…, "seat":0, "expiresAt":…}
//
// The creator always holds seat 0; seat 1 is the server's bot or a friend.
// A seat key is HMAC-SHA256(seat-link key, match id, seat) where the
// seat-link key is derived from the ticket key: unguessable, checkable by
// every edge of the cluster without any shared state, and valid for the
// match's life. Whoever holds a seat's key may take the seat (the newer
// connection replaces the older one, 4409): a join link is a bearer secret
// and the page keeps it in the URL fragment, which browsers never send to
// a server. Bot seats get no key. Creation is rate limited per client
// address and for the whole edge; ticket requests per client address.

// Public play defaults.
const (
	DefaultPublicCreatesPerMinute       = 10
	DefaultPublicCreatesGlobalPerMinute = 120
	publicTicketsPerMinute              = 120
	publicTicketBurst                   = 20
	// maxLimitedAddrs bounds the per-address buckets kept; past it they are
	// all forgotten (the global creation bucket still holds).
	maxLimitedAddrs = 10000
)

// botOpponentName and friendName name seat 1 of a public match.
const (
	botOpponentName = "Trainer (bot)"
	friendName      = "Friend"
)

type playLimits struct {
	mu      sync.Mutex
	creates map[string]*bucket
	tickets map[string]*bucket
	global  bucket
	perAddr float64 // creations per second per address
}

func newPlayLimits(cfg *Config, now time.Time) *playLimits {
	g := cfg.PublicCreatesGlobalPerMinute / 60
	return &playLimits{
		creates: map[string]*bucket{},
		tickets: map[string]*bucket{},
		global:  newBucket(g, max(cfg.PublicCreatesGlobalPerMinute/6, 1), now),
		perAddr: cfg.PublicCreatesPerMinute / 60,
	}
}

// allow spends a token of addr's bucket in m (and of the global bucket for
// creations).
func (l *playLimits) allow(create bool, addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, rate, burst := l.tickets, float64(publicTicketsPerMinute)/60, float64(publicTicketBurst)
	if create {
		m, rate, burst = l.creates, l.perAddr, max(l.perAddr*60/3, 1)
	}
	b := m[addr]
	if b == nil {
		if len(m) >= maxLimitedAddrs {
			clear(m)
		}
		nb := newBucket(rate, burst, now)
		b = &nb
		m[addr] = b
	}
	if !b.take(now) {
		return false
	}
	return !create || l.global.take(now)
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func tooMany() *httpError {
	return &httpError{http.StatusTooManyRequests, "rate_limited", "too many requests; wait a little"}
}

// seatKey returns the join secret of seat in matchID.
func (s *Server) seatKey(matchID string, seat int) string {
	m := hmac.New(sha256.New, s.seatLinkKey)
	m.Write([]byte(matchID))
	m.Write([]byte{0, byte('0' + seat)})
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// seatLinkKeyFrom derives the seat-link key from the ticket key, so a
// ticket signature and a seat key can never be confused.
func seatLinkKeyFrom(ticketKey []byte) []byte {
	m := hmac.New(sha256.New, ticketKey)
	m.Write([]byte("matchgrain seat-link key v1"))
	return m.Sum(nil)
}

type playMatchRequest struct {
	Name     string `json:"name"`
	Deck     string `json:"deck"`
	Opponent string `json:"opponent"`
}

type playMatchResponse struct {
	MatchID       string `json:"matchId"`
	Seat          int    `json:"seat"`
	SeatKey       string `json:"seatKey"`
	FriendSeatKey string `json:"friendSeatKey,omitempty"`
}

func (s *Server) playCreate(ctx context.Context, r *http.Request) (int, any, error) {
	if !s.play.allow(true, clientAddr(r), time.Now()) {
		return 0, nil, tooMany()
	}
	var req playMatchRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if err := validateName(req.Name); err != nil {
		return 0, nil, badRequest("bad_name", "name: %v", err)
	}
	decks := s.cfg.Decks
	if decks == nil || len(decks()) == 0 {
		return 0, nil, &httpError{http.StatusServiceUnavailable, "no_decks", "this server lists no decks"}
	}
	list := decks()
	other := ""
	found := false
	for _, d := range list {
		if d.ID == req.Deck {
			found = true
		} else if other == "" {
			other = d.ID
		}
	}
	if !found {
		return 0, nil, badRequest("unknown_deck", "deck %q is not a known deck (see GET /api/play/decks)", req.Deck)
	}
	if other == "" {
		other = req.Deck
	}
	spec := MatchSpec{Names: [2]string{req.Name, ""}, Decks: [2]string{req.Deck, other}}
	switch req.Opponent {
	case "bot":
		spec.Names[1], spec.Bots[1] = botOpponentName, true
	case "friend":
		spec.Names[1] = friendName
	default:
		return 0, nil, badRequest("bad_opponent", `opponent must be "bot" or "friend"`)
	}
	id, err := s.matches.CreateMatch(ctx, spec)
	if err != nil {
		return 0, nil, fmt.Errorf("create public match: %w", err)
	}
	s.metrics.matchesCreated.Add(1)
	s.log.Info("edge: public match created", "match", id, "opponent", req.Opponent)
	resp := playMatchResponse{MatchID: id, Seat: 0, SeatKey: s.seatKey(id, 0)}
	if !spec.Bots[1] {
		resp.FriendSeatKey = s.seatKey(id, 1)
	}
	return http.StatusCreated, resp, nil
}

type playTicketRequest struct {
	MatchID string       `json:"matchId"`
	Seat    *json.Number `json:"seat"`
	SeatKey string       `json:"seatKey"`
}

func (s *Server) playTicket(_ context.Context, r *http.Request) (int, any, error) {
	if !s.play.allow(false, clientAddr(r), time.Now()) {
		return 0, nil, tooMany()
	}
	var req playTicketRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if err := ValidateMatchID(req.MatchID); err != nil {
		return 0, nil, badRequest("bad_match_id", "matchId must be 1..%d printable ASCII characters", MaxMatchIDLen)
	}
	if req.Seat == nil {
		return 0, nil, badRequest("bad_seat", "seat is required (0 or 1)")
	}
	seat, err := strconv.Atoi(req.Seat.String())
	if err != nil || (seat != 0 && seat != 1) {
		return 0, nil, badRequest("bad_seat", "seat must be 0 or 1")
	}
	want := s.seatKey(req.MatchID, seat)
	if !hmac.Equal([]byte(want), []byte(req.SeatKey)) {
		return 0, nil, &httpError{http.StatusForbidden, "bad_seat_key", "this link does not open that seat"}
	}
	t, err := s.tickets.Issue(req.MatchID, seat)
	if err != nil {
		return 0, nil, fmt.Errorf("issue ticket: %w", err)
	}
	s.metrics.ticketsIssued.Add(1)
	return http.StatusOK, ticketResponse{Ticket: t.Token, MatchID: t.MatchID, Seat: t.Seat, ExpiresAt: t.ExpiresAt.UnixMilli()}, nil
}
