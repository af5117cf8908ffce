package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// Admin is a client of the edge's HTTP API (create matches, issue tickets,
// list decks). It is safe for concurrent use.
type Admin struct {
	base  string
	token string
	hc    *http.Client
}

// NewAdmin returns an Admin for baseURL ("http://host:port") with the admin
// bearer token. hc nil means a client with a 10 s timeout.
func NewAdmin(baseURL, token string, hc *http.Client) *Admin {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Admin{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc}
}

// APIError is an error answer of the HTTP API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the machine-readable "error" field ("match_not_found").
	Code string
	// Message is the human-readable "message" field.
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	return fmt.Sprintf("api: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// PlayerSpec is one player of a new match.
type PlayerSpec struct {
	Name string `json:"name"`
	Deck string `json:"deck"`
	// Bot makes the server play this seat itself (a training match).
	Bot bool `json:"bot,omitempty"`
}

// TicketInfo is an issued ticket.
type TicketInfo struct {
	// Ticket is the bearer token for ClientHello; never log it.
	Ticket    string
	MatchID   string
	Seat      int
	ExpiresAt time.Time
}

// Deck is one entry of GET /api/decks.
type Deck struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Cards int    `json:"cards"`
}

// maxResponseBytes bounds an API answer read into memory.
const maxResponseBytes = 1 << 20

func (a *Admin) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("api: encode %s body: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("api: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		e := &APIError{Status: resp.StatusCode}
		var body struct{ Error, Message string }
		if json.Unmarshal(data, &body) == nil {
			e.Code, e.Message = body.Error, body.Message
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("api: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// CreateMatch creates a match and returns its id; seed nil lets the server
// choose.
func (a *Admin) CreateMatch(ctx context.Context, players [2]PlayerSpec, seed *uint64) (string, error) {
	req := struct {
		Players [2]PlayerSpec `json:"players"`
		Seed    *string       `json:"seed,omitempty"`
	}{Players: players}
	if seed != nil {
		// As a string: exact beyond 2^53 whatever parses it.
		s := strconv.FormatUint(*seed, 10)
		req.Seed = &s
	}
	var out struct {
		MatchID string `json:"matchId"`
	}
	if err := a.do(ctx, http.MethodPost, "/api/matches", req, &out); err != nil {
		return "", err
	}
	if out.MatchID == "" {
		return "", errors.New("api: create match: empty matchId in answer")
	}
	return out.MatchID, nil
}

// Ticket issues a ticket for seat of matchID; seat protocol.SeatSpectator
// is a spectator's (docs/protocol.md §14.1), so TicketFunc makes a
// spectator's Session too.
func (a *Admin) Ticket(ctx context.Context, matchID string, seat int) (TicketInfo, error) {
	var req any = struct {
		MatchID string `json:"matchId"`
		Seat    int    `json:"seat"`
	}{matchID, seat}
	path := "/api/game/tickets"
	if seat == protocol.SeatSpectator {
		req, path = struct {
			MatchID string `json:"matchId"`
		}{matchID}, "/api/game/spectator-tickets"
	}
	var out struct {
		Ticket    string `json:"ticket"`
		MatchID   string `json:"matchId"`
		Seat      int    `json:"seat"`
		ExpiresAt int64  `json:"expiresAt"`
	}
	if err := a.do(ctx, http.MethodPost, path, req, &out); err != nil {
		return TicketInfo{}, err
	}
	return TicketInfo{Ticket: out.Ticket, MatchID: out.MatchID, Seat: out.Seat, ExpiresAt: time.UnixMilli(out.ExpiresAt)}, nil
}

// TicketFunc returns a TicketFunc that issues a fresh ticket for the seat on
// every call, for Config.Ticket.
func (a *Admin) TicketFunc(matchID string, seat int) TicketFunc {
	return func(ctx context.Context) (string, error) {
		t, err := a.Ticket(ctx, matchID, seat)
		if err != nil {
			return "", err
		}
		return t.Ticket, nil
	}
}

// Decks lists the decks a match can use.
func (a *Admin) Decks(ctx context.Context) ([]Deck, error) {
	var out struct {
		Decks []Deck `json:"decks"`
	}
	if err := a.do(ctx, http.MethodGet, "/api/decks", nil, &out); err != nil {
		return nil, err
	}
	return out.Decks, nil
}
