package edge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The public play flow lets a browser page start a match without the admin
// token (Config.PublicPlay, off by default):
//
//	POST /api/play/matches {"name":"Ann","deck":"S1","opponent":"bot"|"friend"}
//	  → 201 {"matchId":…, "seat":0, "seatKey":…, "invite":…}
//	POST /api/play/invites {"matchId":…, "invite":…, "claim":…, "name":…}
//	  → 200 {"matchId":…, "seat":1, "seatKey":…}
//	POST /api/play/tickets {"matchId":…, "seat":0, "seatKey":…}
//	  → 200 {"ticket":…, "matchId":…, "seat":0, "expiresAt":…, "seatKey":…}
//
// The creator always holds seat 0; seat 1 is the server's bot or a friend.
// A seat key opens one seat of one match (seatkey.go): whoever holds it may
// take the seat (the newer connection replaces the older one, 4409), so
// the page keeps it in the URL fragment, which browsers never send to a
// server. The creator of a friend match gets an invite, not the friend's
// seat key: the friend's page redeems the invite once with a claim secret it
// drew itself and gets a seat key derived from that claim. An invite is
// single use (Config.UseOnce records it), so if anyone else redeems it
// first, the friend is told "invite_used" and knows the link leaked; a
// retry with the same claim (an answer lost on the way) succeeds again.
// A ticket answer carries the seat key signed with the current ticket key,
// so a page that stores it keeps its seat across a key rotation.
//
// Every POST needs a JSON body ("Content-Type: application/json", which a
// cross-site form cannot send without a CORS preflight) and, from a browser,
// an Origin of this site (the Host, or one of Config.AllowedOrigins; "*"
// does not count here): another site cannot make its visitors create
// matches. Creation is rate limited per client address (an IPv4 address
// or an IPv6 /64) and for the whole edge; ticket and invite requests per
// client address.

// Public play defaults.
const (
	DefaultPublicCreatesPerMinute       = 10
	DefaultPublicCreatesGlobalPerMinute = 120
	publicTicketsPerMinute              = 120
	publicTicketBurst                   = 20
	// maxLimitedAddrs bounds the per-address buckets kept; past it they are
	// all forgotten (the global creation buckets still hold).
	maxLimitedAddrs = 10000
	// reserveShare is the part of the global creation budget kept for
	// addresses that created nothing within reserveWindow: a flood from many
	// addresses that each keep creating empties the shared part only, and a
	// new visitor still gets a match.
	reserveShare  = 0.25
	reserveWindow = 10 * time.Minute
)

// botOpponentName and friendName name seat 1 of a public match.
const (
	botOpponentName = "Trainer (bot)"
	friendName      = "Friend"
)

// addrLimit is one client address's (or /64's) creation and request budget.
type addrLimit struct {
	creates     bucket
	requests    bucket
	lastCreated time.Time
}

type playLimits struct {
	mu      sync.Mutex
	addrs   map[string]*addrLimit
	shared  bucket
	reserve bucket
	perAddr float64 // creations per second per address
}

func newPlayLimits(cfg *Config, now time.Time) *playLimits {
	g := cfg.PublicCreatesGlobalPerMinute / 60
	burst := max(cfg.PublicCreatesGlobalPerMinute/6, 1)
	return &playLimits{
		addrs:   map[string]*addrLimit{},
		shared:  newBucket(g*(1-reserveShare), max(burst*(1-reserveShare), 1), now),
		reserve: newBucket(g*reserveShare, max(burst*reserveShare, 1), now),
		perAddr: cfg.PublicCreatesPerMinute / 60,
	}
}

func (l *playLimits) addr(key string, now time.Time) *addrLimit {
	a := l.addrs[key]
	if a == nil {
		if len(l.addrs) >= maxLimitedAddrs {
			clear(l.addrs)
		}
		a = &addrLimit{
			creates:  newBucket(l.perAddr, max(l.perAddr*60/3, 1), now),
			requests: newBucket(float64(publicTicketsPerMinute)/60, publicTicketBurst, now),
		}
		l.addrs[key] = a
	}
	return a
}

// allowCreate spends a creation of key's bucket and one of the global
// budget: the shared part, or the reserve if key created nothing lately.
func (l *playLimits) allowCreate(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addr(key, now)
	if !a.creates.take(now) {
		return false
	}
	fresh := a.lastCreated.IsZero() || now.Sub(a.lastCreated) >= reserveWindow
	if !l.shared.take(now) && !(fresh && l.reserve.take(now)) {
		return false
	}
	a.lastCreated = now
	return true
}

// allowRequest spends a ticket or invite request of key's bucket.
func (l *playLimits) allowRequest(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr(key, now).requests.take(now)
}

// clientKey is the rate-limit key of r's client: its IPv4 address or IPv6 /64.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	return addrKey(&net.IPAddr{IP: ip})
}

func tooMany() *httpError {
	return &httpError{http.StatusTooManyRequests, "rate_limited", "too many requests; wait a little"}
}

// checkPublicPost refuses what a foreign web page could make its visitors'
// browsers send: a body that is not JSON, or another site's Origin.
func (s *Server) checkPublicPost(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &httpError{http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be JSON (Content-Type: application/json)"}
	}
	if !s.sameSite(r) {
		return &httpError{http.StatusForbidden, "origin_not_allowed", "requests from another site are refused"}
	}
	return nil
}

// publicRequest runs what every public request but a creation shares: a
// JSON body from this site, the client address's request budget, and the
// body decoded into v.
func (s *Server) publicRequest(r *http.Request, v any) error {
	if err := s.checkPublicPost(r); err != nil {
		return err
	}
	if !s.play.allowRequest(clientKey(r), time.Now()) {
		return tooMany()
	}
	return decodeBody(r, v)
}

// sameSite reports whether a browser request comes from this site's own
// pages: its Origin is the Host or listed in AllowedOrigins. A request
// without Origin is not from a browser's cross-site fetch or form (both
// send it on POST), unless Sec-Fetch-Site says so.
func (s *Server) sameSite(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	n, err := parseOrigin(origin)
	if err != nil {
		return false
	}
	if s.origins[n] {
		return true
	}
	_, host, _ := strings.Cut(n, "://")
	return strings.EqualFold(host, r.Host)
}

type playMatchRequest struct {
	Name     string `json:"name"`
	Deck     string `json:"deck"`
	Opponent string `json:"opponent"`
}

type playMatchResponse struct {
	MatchID string `json:"matchId"`
	Seat    int    `json:"seat"`
	SeatKey string `json:"seatKey"`
	// Invite is the friend's single-use invite (friend matches only).
	Invite string `json:"invite,omitempty"`
}

func (s *Server) playCreate(ctx context.Context, r *http.Request) (int, any, error) {
	if err := s.checkPublicPost(r); err != nil {
		return 0, nil, err
	}
	if !s.play.allowCreate(clientKey(r), time.Now()) {
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
		spec.Names[1], spec.Guests[1] = friendName, true
	default:
		return 0, nil, badRequest("bad_opponent", `opponent must be "bot" or "friend"`)
	}
	nonce := make([]byte, seatNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return 0, nil, fmt.Errorf("seat key nonce: %w", err)
	}
	id, err := s.matches.CreateMatch(ctx, spec)
	if err != nil {
		return 0, nil, fmt.Errorf("create public match: %w", err)
	}
	s.metrics.matchesCreated.Add(1)
	s.log.Info("edge: public match created", "match", id, "opponent", req.Opponent)
	resp := playMatchResponse{MatchID: id, Seat: 0, SeatKey: s.tickets.seatKey(id, 0, nonce)}
	if !spec.Bots[1] {
		resp.Invite = s.tickets.invite(id, time.Now().Add(DefaultInviteTTL))
	}
	return http.StatusCreated, resp, nil
}

type playInviteRequest struct {
	MatchID string `json:"matchId"`
	Invite  string `json:"invite"`
	// Claim is a secret the friend's page drew (at least 16 random bytes,
	// base64url); the seat key is derived from it.
	Claim string `json:"claim"`
	// Name is the name the friend chose, checked like the creator's; empty
	// keeps "Friend". The first redemption's name stands.
	Name string `json:"name,omitempty"`
}

type playInviteResponse struct {
	MatchID string `json:"matchId"`
	Seat    int    `json:"seat"`
	SeatKey string `json:"seatKey"`
}

func (s *Server) playRedeem(ctx context.Context, r *http.Request) (int, any, error) {
	var req playInviteRequest
	if err := s.publicRequest(r, &req); err != nil {
		return 0, nil, err
	}
	if err := ValidateMatchID(req.MatchID); err != nil {
		return 0, nil, badRequest("bad_match_id", "matchId must be 1..%d printable ASCII characters", MaxMatchIDLen)
	}
	if len(req.Claim) < minClaimLen || len(req.Claim) > maxClaimLen {
		return 0, nil, badRequest("bad_claim", "claim must be %d..%d characters of a random secret", minClaimLen, maxClaimLen)
	}
	if req.Name != "" {
		if err := validateName(req.Name); err != nil {
			return 0, nil, badRequest("bad_name", "name: %v", err)
		}
	}
	expires, err := s.tickets.checkInvite(time.Now(), req.MatchID, req.Invite)
	if err != nil {
		return 0, nil, &httpError{http.StatusForbidden, "bad_invite", "this invite is not valid (expired, or not for that match)"}
	}
	// The record is the invite's; its claimant the hash of the claim, so a
	// retry with the same claim passes and any other claim is refused.
	inviteID := sha256.Sum256([]byte("invite\x00" + req.MatchID))
	claimant := sha256.Sum256([]byte(req.Claim))
	err = s.cfg.UseOnce(ctx, "invite-"+hex.EncodeToString(inviteID[:16]), expires, hex.EncodeToString(claimant[:]))
	switch {
	case errors.Is(err, ErrTicketUsed):
		s.log.Warn("edge: invite redeemed again with another claim", "match", req.MatchID)
		return 0, nil, &httpError{http.StatusConflict, "invite_used",
			"this invite was already used by someone else; ask for a new match"}
	case err != nil:
		return 0, nil, fmt.Errorf("redeem invite of match %s: %w: %w", req.MatchID, ErrUnavailable, err)
	}
	if req.Name != "" {
		// After the invite is ours: nobody else can name the seat, and a
		// retry with the same claim names it again, which changes nothing.
		if err := s.matches.NameSeat(ctx, req.MatchID, 1, req.Name); err != nil {
			return 0, nil, fmt.Errorf("name the friend's seat of match %s: %w", req.MatchID, err)
		}
	}
	return http.StatusOK, playInviteResponse{MatchID: req.MatchID, Seat: 1,
		SeatKey: s.tickets.seatKey(req.MatchID, 1, claimNonce(req.Claim))}, nil
}

type playTicketRequest struct {
	MatchID string       `json:"matchId"`
	Seat    *json.Number `json:"seat"`
	SeatKey string       `json:"seatKey"`
}

type playTicketResponse struct {
	ticketResponse
	// SeatKey is the presented seat key signed with the current ticket key:
	// a page that keeps it keeps its seat across a key rotation.
	SeatKey string `json:"seatKey"`
}

func (s *Server) playTicket(_ context.Context, r *http.Request) (int, any, error) {
	var req playTicketRequest
	if err := s.publicRequest(r, &req); err != nil {
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
	nonce, err := s.tickets.checkSeatKey(req.MatchID, seat, req.SeatKey)
	if err != nil {
		return 0, nil, &httpError{http.StatusForbidden, "bad_seat_key", "this link does not open that seat"}
	}
	t, err := s.tickets.Issue(req.MatchID, seat)
	if err != nil {
		return 0, nil, fmt.Errorf("issue ticket: %w", err)
	}
	s.metrics.ticketsIssued.Add(1)
	return http.StatusOK, playTicketResponse{
		ticketResponse: ticketResponse{Ticket: t.Token, MatchID: t.MatchID, Seat: t.Seat, ExpiresAt: t.ExpiresAt.UnixMilli()},
		SeatKey:        s.tickets.seatKey(req.MatchID, seat, nonce),
	}, nil
}

// memoryOnce is Config.UseOnce's default: single use within this process,
// which is enough for one edge (tests, a single node); a cluster's edges
// share the record through the store (matchd wires it).
type memoryOnce struct {
	mu   sync.Mutex
	used map[string]string
}

func (m *memoryOnce) use(_ context.Context, id string, _ time.Time, claimant string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.used[id]; ok && prev != claimant {
		return ErrTicketUsed
	}
	m.used[id] = claimant
	return nil
}
