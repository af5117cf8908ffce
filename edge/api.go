package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPlayerNameLen bounds a player's display name in bytes.
const MaxPlayerNameLen = 64

// apiError is the body of every HTTP error (docs/protocol.md §9.13).
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// httpError is an error that knows its HTTP answer.
type httpError struct {
	status  int
	code    string
	message string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func badRequest(code, format string, args ...any) *httpError {
	return &httpError{http.StatusBadRequest, code, fmt.Sprintf(format, args...)}
}

// WriteJSON answers status with v as JSON, never cached: the one way every
// HTTP API of a node (the edge's, the operations API) writes an answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// The client may have gone; there is no one left to tell.
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers status with the JSON error shape of every HTTP API of a
// node: {"error": code, "message": message} (docs/protocol.md §9.13).
func WriteError(w http.ResponseWriter, status int, code, message string) {
	WriteJSON(w, status, apiError{Error: code, Message: message})
}

// route is one endpoint: its method, whether it needs the admin token, and
// a handler that returns the status it answered.
type route struct {
	name   string
	method string
	auth   bool
	serve  func(w http.ResponseWriter, r *http.Request) int
}

func (s *Server) routes() http.Handler {
	table := map[string]route{
		"/game":                       {"game", http.MethodGet, false, s.serveGame},
		"/healthz":                    {"healthz", http.MethodGet, false, s.serveHealth},
		"/metrics":                    {"metrics", http.MethodGet, false, s.serveMetrics},
		"/api/matches":                {"api_matches", http.MethodPost, true, s.apiHandler(s.createMatch)},
		"/api/game/tickets":           {"api_tickets", http.MethodPost, true, s.apiHandler(s.issueTicket)},
		"/api/decks":                  {"api_decks", http.MethodGet, true, s.apiHandler(s.listDecks)},
		"/api/game/spectator-tickets": {"api_spectator_tickets", http.MethodPost, true, s.apiHandler(s.issueSpectatorTicket)},
	}
	if s.cfg.PublicPlay {
		table["/api/play/matches"] = route{"play_matches", http.MethodPost, false, s.apiHandler(s.playCreate)}
		table["/api/play/tickets"] = route{"play_tickets", http.MethodPost, false, s.apiHandler(s.playTicket)}
		table["/api/play/invites"] = route{"play_invites", http.MethodPost, false, s.apiHandler(s.playRedeem)}
		table["/api/play/decks"] = route{"play_decks", http.MethodGet, false, s.apiHandler(s.listDecks)}
		table["/api/play/spectate"] = route{"play_spectate", http.MethodPost, false, s.apiHandler(s.playSpectate)}
	}
	if s.cfg.SeparateMetrics {
		delete(table, "/metrics") // served by MetricsHandler on its own listener
	}
	var admin route
	if s.cfg.Admin != nil {
		admin = route{"admin", http.MethodGet, true, func(w http.ResponseWriter, r *http.Request) int {
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			s.cfg.Admin.ServeHTTP(rec, r)
			return rec.status
		}}
	}
	var replays route
	if s.cfg.PublicPlay && s.cfg.Replays != nil {
		replays = route{"play_replays", http.MethodGet, false, s.publicHandler(s.cfg.Replays)}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt, ok := table[r.URL.Path]
		if !ok && admin.serve != nil && strings.HasPrefix(r.URL.Path, AdminPrefix) {
			rt, ok = admin, true
		}
		if !ok && replays.serve != nil && strings.HasPrefix(r.URL.Path, ReplaysPrefix) {
			rt, ok = replays, true
		}
		if !ok && s.cfg.PublicPlay && s.cfg.Live != nil && r.URL.Path == LivePath {
			rt, ok = route{"play_live", http.MethodGet, false, s.publicHandler(s.cfg.Live)}, true
		}
		if !ok && s.cfg.Fallback != nil && !strings.HasPrefix(r.URL.Path, "/api/") {
			s.cfg.Fallback.ServeHTTP(w, r)
			return
		}
		if !ok {
			WriteError(w, http.StatusNotFound, "not_found", "no such endpoint")
			s.metrics.httpRequest("other", http.StatusNotFound)
			return
		}
		status := s.serveRoute(rt, w, r)
		s.metrics.httpRequest(rt.name, status)
	})
}

func (s *Server) serveRoute(rt route, w http.ResponseWriter, r *http.Request) int {
	if r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead && rt.name != "game") {
		w.Header().Set("Allow", rt.method)
		WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use "+rt.method)
		return http.StatusMethodNotAllowed
	}
	if rt.name != "healthz" && rt.name != "metrics" && s.notAdmitted() != nil {
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "not_admitted", "this node is not part of its cluster; try another")
		return http.StatusServiceUnavailable
	}
	if rt.auth && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="matchgrain"`)
		WriteError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
		return http.StatusUnauthorized
	}
	return rt.serve(w, r)
}

// AdminPrefix is where Config.Admin is mounted.
const AdminPrefix = "/api/admin/"

// authorized checks "Authorization: Bearer <admin token>" against the
// current and previous admin tokens in constant time: hashing first, so that
// not even the length leaks, and comparing with every token, so that the
// time does not say which one matched.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, t := range s.adminTokens {
		match |= subtle.ConstantTimeCompare(got[:], t[:])
	}
	return match == 1
}

// notAdmitted returns why this node is not part of its cluster, or nil.
func (s *Server) notAdmitted() error {
	if s.cfg.Admitted == nil {
		return nil
	}
	return s.cfg.Admitted()
}

func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) int {
	if err := s.notAdmitted(); err != nil {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_admitted", "reason": err.Error()})
		return http.StatusServiceUnavailable
	}
	if s.isDraining() {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return http.StatusServiceUnavailable
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return http.StatusOK
}

// MetricsHandler serves GET /metrics alone, for a listener of its own (see
// Config.SeparateMetrics). Requests are counted like Handler's.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			WriteError(w, http.StatusNotFound, "not_found", "no such endpoint")
			s.metrics.httpRequest("other", http.StatusNotFound)
			return
		}
		rt := route{"metrics", http.MethodGet, false, s.serveMetrics}
		s.metrics.httpRequest(rt.name, s.serveRoute(rt, w, r))
	})
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) int {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	s.metricsHandler.ServeHTTP(rec, r)
	return rec.status
}

// statusRecorder remembers the status a handler wrote, for the request counter.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// apiHandler runs a JSON endpoint: it bounds the call's time, and turns a
// returned error into the JSON error answer.
func (s *Server) apiHandler(h func(ctx context.Context, r *http.Request) (int, any, error)) func(http.ResponseWriter, *http.Request) int {
	return func(w http.ResponseWriter, r *http.Request) int {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		status, body, err := h(ctx, r)
		if err == nil {
			WriteJSON(w, status, body)
			return status
		}
		var he *httpError
		switch {
		case errors.As(err, &he):
			if he.status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "10")
			}
		case errors.Is(err, ErrBadRequest):
			he = &httpError{http.StatusBadRequest, "bad_request", "the match cluster refused the request"}
		case errors.Is(err, ErrMatchNotFound):
			he = &httpError{http.StatusNotFound, "match_not_found", "no such match"}
		case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
			w.Header().Set("Retry-After", "1")
			he = &httpError{http.StatusServiceUnavailable, "unavailable", "the match cluster is unavailable; retry"}
		default:
			s.log.Error("edge: api request failed", "path", r.URL.Path, "err", err)
			he = &httpError{http.StatusInternalServerError, "internal", "internal error"}
		}
		WriteError(w, he.status, he.code, he.message)
		return he.status
	}
}

// decodeBody reads one JSON object from the request body into v.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("request body over %d bytes", mbe.Limit)}
		}
		return badRequest("bad_body", "cannot read request body")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("invalid_json", "request body is not the expected JSON object: %s", jsonProblem(err))
	}
	if dec.More() {
		return badRequest("invalid_json", "trailing data after the JSON object")
	}
	// encoding/json keeps the last of two equal keys; two parsers may keep
	// different ones, so a body that says two things is refused.
	if key, ok := duplicateKey(data); ok {
		return badRequest("invalid_json", "request body has the key %q twice", key)
	}
	return nil
}

// duplicateKey finds a key that appears twice in one object of a valid JSON
// document (keys are compared after unescaping, as a decoder sees them).
func duplicateKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// One set of keys per open object, and nil for an open array.
	var stack []map[string]bool
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // io.EOF; the document was decoded before
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = true
				continue
			case '[':
				stack = append(stack, nil)
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if expectKey {
				top := stack[len(stack)-1]
				if top[t] {
					return t, true
				}
				top[t] = true
				expectKey = false
				continue
			}
		}
		// A value ended (or an array opened): inside an object the next
		// token is a key.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// jsonProblem describes a JSON error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no type for it; the field name is the client's
		// own and quoted by the decoder.
		return strings.TrimPrefix(err.Error(), "json: ")
	case errors.Is(err, io.EOF):
		return "empty body"
	default:
		return "invalid JSON"
	}
}

type createMatchRequest struct {
	Players []struct {
		Name string `json:"name"`
		Deck string `json:"deck"`
		// Bot makes the match play this seat itself (a training match).
		Bot bool `json:"bot"`
	} `json:"players"`
	// Seed is a JSON number or a decimal string (JavaScript clients cannot
	// write integers above 2^53 as numbers).
	Seed *json.RawMessage `json:"seed"`
}

type createMatchResponse struct {
	MatchID string `json:"matchId"`
}

func (s *Server) createMatch(ctx context.Context, r *http.Request) (int, any, error) {
	var req createMatchRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if len(req.Players) != 2 {
		return 0, nil, badRequest("bad_players", "players must list exactly 2 players, got %d", len(req.Players))
	}
	var spec MatchSpec
	known := s.deckIDs()
	for i, p := range req.Players {
		if err := validateName(p.Name); err != nil {
			return 0, nil, badRequest("bad_name", "players[%d].name: %v", i, err)
		}
		if p.Deck == "" || len(p.Deck) > 32 {
			return 0, nil, badRequest("bad_deck", "players[%d].deck must be a deck id", i)
		}
		if known != nil && !known[p.Deck] {
			return 0, nil, badRequest("unknown_deck", "players[%d].deck %q is not a known deck (see GET /api/decks)", i, p.Deck)
		}
		spec.Names[i], spec.Decks[i], spec.Bots[i] = p.Name, p.Deck, p.Bot
	}
	if req.Seed != nil && string(*req.Seed) != "null" {
		v, err := parseSeed(*req.Seed)
		if err != nil {
			return 0, nil, badRequest("bad_seed", "seed must be an integer in 0..18446744073709551615")
		}
		spec.Seed = &v
	}
	id, err := s.matches.CreateMatch(ctx, spec)
	if err != nil {
		return 0, nil, fmt.Errorf("create match: %w", err)
	}
	s.metrics.matchesCreated.Add(1)
	s.log.Info("edge: match created", "match", id, "decks", spec.Decks, "bots", spec.Bots)
	return http.StatusCreated, createMatchResponse{MatchID: id}, nil
}

func parseSeed(raw json.RawMessage) (uint64, error) {
	text := strings.TrimSpace(string(raw))
	if unq, err := strconv.Unquote(text); err == nil {
		text = unq
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse seed: %w", err)
	}
	return v, nil
}

func validateName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > MaxPlayerNameLen:
		return fmt.Errorf("longer than %d bytes", MaxPlayerNameLen)
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return errors.New("contains control characters")
		case unicode.Is(unicode.Cf, r):
			// Bidi overrides, zero-width joiners and the like make one
			// name look like another.
			return fmt.Errorf("contains the invisible format character U+%04X", r)
		}
	}
	return nil
}

func (s *Server) deckIDs() map[string]bool {
	if s.cfg.Decks == nil {
		return nil
	}
	ids := make(map[string]bool)
	for _, d := range s.cfg.Decks() {
		ids[d.ID] = true
	}
	return ids
}

type ticketRequest struct {
	MatchID string       `json:"matchId"`
	Seat    *json.Number `json:"seat"`
}

type ticketResponse struct {
	Ticket  string `json:"ticket"`
	MatchID string `json:"matchId"`
	Seat    int    `json:"seat"`
	// ExpiresAt is Unix milliseconds (UTC), like every time on the wire.
	ExpiresAt int64 `json:"expiresAt"`
}

func (s *Server) issueTicket(ctx context.Context, r *http.Request) (int, any, error) {
	var req ticketRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if err := ValidateMatchID(req.MatchID); err != nil {
		return 0, nil, badRequest("bad_match_id", "matchId must be 1..%d printable ASCII characters", MaxMatchIDLen)
	}
	if req.Seat == nil {
		return 0, nil, badRequest("bad_seat", "seat is required (0 or 1)")
	}
	seat, err := req.Seat.Int64()
	if err != nil || (seat != 0 && seat != 1) {
		return 0, nil, badRequest("bad_seat", "seat must be 0 or 1")
	}
	ok, err := s.matches.MatchExists(ctx, req.MatchID)
	if err != nil {
		return 0, nil, fmt.Errorf("match exists: %w", err)
	}
	if !ok {
		return 0, nil, &httpError{http.StatusNotFound, "match_not_found", "no such match"}
	}
	t, err := s.tickets.Issue(req.MatchID, int(seat))
	if err != nil {
		return 0, nil, fmt.Errorf("issue ticket: %w", err)
	}
	s.metrics.ticketsIssued.Add(1)
	return http.StatusOK, ticketResponse{
		Ticket:    t.Token,
		MatchID:   t.MatchID,
		Seat:      t.Seat,
		ExpiresAt: t.ExpiresAt.UnixMilli(),
	}, nil
}

type decksResponse struct {
	Decks []DeckInfo `json:"decks"`
}

func (s *Server) listDecks(context.Context, *http.Request) (int, any, error) {
	decks := []DeckInfo{}
	if s.cfg.Decks != nil {
		decks = append(decks, s.cfg.Decks()...)
	}
	return http.StatusOK, decksResponse{Decks: decks}, nil
}
