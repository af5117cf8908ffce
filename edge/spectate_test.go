package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

type spectatorTicketAnswer struct {
	Ticket      string `json:"ticket"`
	MatchID     string `json:"matchId"`
	Seat        int    `json:"seat"`
	ExpiresAt   int64  `json:"expiresAt"`
	DelayEvents *int   `json:"delayEvents"`
	DelayMs     *int64 `json:"delayMs"`
}

// checkSpectatorTicket decodes a spectator ticket answer and verifies its
// ticket: seat 2 of matchID.
func checkSpectatorTicket(t *testing.T, h *harness, data []byte, matchID string) {
	t.Helper()
	var a spectatorTicketAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("answer %s: %v", data, err)
	}
	if a.MatchID != matchID || a.Seat != protocol.SeatSpectator || a.ExpiresAt == 0 || a.DelayEvents == nil || a.DelayMs == nil {
		t.Fatalf("spectator ticket answer %s", data)
	}
	c, err := h.srv.Tickets().Verify(a.Ticket)
	if err != nil || c.MatchID != matchID || c.Seat != protocol.SeatSpectator {
		t.Fatalf("the spectator ticket verifies as %+v, %v; want seat 2 of %s", c, err, matchID)
	}
}

// The admin API issues spectator tickets for existing matches only, and
// none when the server allows no spectators.
func TestSpectatorTicketsAdmin(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxSpectators = 4 })
	id := h.newMatch()
	for _, tc := range []apiCase{
		{"no token", "POST", "/api/game/spectator-tickets", "", `{"matchId":"` + id + `"}`, 401, "unauthorized"},
		{"unknown match", "POST", "/api/game/spectator-tickets", testAdminToken, `{"matchId":"nope"}`, 404, "match_not_found"},
		{"bad match id", "POST", "/api/game/spectator-tickets", testAdminToken, `{"matchId":"a b"}`, 400, "bad_match_id"},
		{"a seat too", "POST", "/api/game/spectator-tickets", testAdminToken, `{"matchId":"` + id + `","seat":0}`, 400, "invalid_json"},
		{"GET", "GET", "/api/game/spectator-tickets", testAdminToken, ``, 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := h.do(t, tc.method, tc.path, tc.token, tc.body)
			if resp.StatusCode != tc.wantStatus || errorCode(t, data) != tc.wantError {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, data, tc.wantStatus, tc.wantError)
			}
		})
	}
	resp, data := h.do(t, "POST", "/api/game/spectator-tickets", testAdminToken, `{"matchId":"`+id+`"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("spectator ticket: %d %s", resp.StatusCode, data)
	}
	checkSpectatorTicket(t, h, data, id)

	off := newHarness(t, newFakeMatches, nil)
	id = off.newMatch()
	if resp, data := off.do(t, "POST", "/api/game/spectator-tickets", testAdminToken, `{"matchId":"`+id+`"}`); resp.StatusCode != http.StatusForbidden || errorCode(t, data) != "spectators_off" {
		t.Fatalf("spectator ticket with no spectators allowed: %d %s", resp.StatusCode, data)
	}
}

// Public play: anyone on this site may watch a match whose id it knows;
// another site's page may not fetch tickets for its visitors.
func TestSpectatorTicketsPublic(t *testing.T) {
	closed := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxSpectators = 4 })
	if resp, data := closed.do(t, "POST", "/api/play/spectate", "", `{"matchId":"`+closed.newMatch()+`"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/api/play/spectate without PublicPlay: %d %s", resp.StatusCode, data)
	}
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.MaxSpectators = 4 })
	id := h.newMatch()
	resp, data := h.do(t, "POST", "/api/play/spectate", "", `{"matchId":"`+id+`"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("public spectator ticket: %d %s", resp.StatusCode, data)
	}
	checkSpectatorTicket(t, h, data, id)

	req, err := http.NewRequest("POST", h.httpURL+"/api/play/spectate", strings.NewReader(`{"matchId":"`+id+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://elsewhere.example")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("a spectator ticket for another site's page: %d, want 403", r.StatusCode)
	}
	if resp, data := h.do(t, "POST", "/api/play/spectate", "", `{"matchId":"nope"}`); resp.StatusCode != http.StatusNotFound || errorCode(t, data) != "match_not_found" {
		t.Fatalf("public spectator ticket for an unknown match: %d %s", resp.StatusCode, data)
	}
}
