package edge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
)

type apiCase struct {
	name       string
	method     string
	path       string
	token      string // "" → no Authorization header
	body       string
	wantStatus int
	wantError  string // the JSON error code, "" for success
}

func (h *harness) do(t *testing.T, method, path, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, h.httpURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, data
}

func TestAPIErrors(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxBodyBytes = 1024 })
	id := h.newMatch()
	tok := testAdminToken
	cases := []apiCase{
		{"no token", "POST", "/api/matches", "", `{}`, 401, "unauthorized"},
		{"wrong token", "POST", "/api/matches", "nope", `{}`, 401, "unauthorized"},
		{"token prefix", "POST", "/api/matches", tok[:5], `{}`, 401, "unauthorized"},
		{"decks without token", "GET", "/api/decks", "", ``, 401, "unauthorized"},
		{"bad json", "POST", "/api/matches", tok, `{"players":`, 400, "invalid_json"},
		{"empty body", "POST", "/api/matches", tok, ``, 400, "invalid_json"},
		{"wrong type", "POST", "/api/matches", tok, `{"players":"two"}`, 400, "invalid_json"},
		{"trailing data", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `","seat":0} {}`, 400, "invalid_json"},
		{"one player", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1"}]}`, 400, "bad_players"},
		{"three players", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S1"},{"name":"c","deck":"S1"}]}`, 400, "bad_players"},
		{"empty name", "POST", "/api/matches", tok, `{"players":[{"name":"","deck":"S1"},{"name":"b","deck":"S1"}]}`, 400, "bad_name"},
		{"control in name", "POST", "/api/matches", tok, `{"players":[{"name":"a\u0007","deck":"S1"},{"name":"b","deck":"S1"}]}`, 400, "bad_name"},
		{"unknown deck", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S9"},{"name":"b","deck":"S1"}]}`, 400, "unknown_deck"},
		// Issue 41, attack 7: names that look like other names, and bodies
		// that say more than the server reads.
		{"bidi override in name", "POST", "/api/matches", tok, `{"players":[{"name":"a‮b","deck":"S1"},{"name":"b","deck":"S1"}]}`, 400, "bad_name"},
		{"zero-width joiner in name", "POST", "/api/matches", tok, `{"players":[{"name":"a‍b","deck":"S1"},{"name":"b","deck":"S1"}]}`, 400, "bad_name"},
		{"unknown field", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `","seat":0,"admin":true}`, 400, "invalid_json"},
		{"unknown nested field", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1","hand":[]},{"name":"b","deck":"S1"}]}`, 400, "invalid_json"},
		{"duplicate key", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `","seat":0,"seat":1}`, 400, "invalid_json"},
		{"duplicate nested key", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1","deck":"S2"},{"name":"b","deck":"S1"}]}`, 400, "invalid_json"},
		{"negative seed", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}],"seed":-1}`, 400, "bad_seed"},
		{"fraction seed", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}],"seed":1.5}`, 400, "bad_seed"},
		{"huge seed", "POST", "/api/matches", tok, `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}],"seed":18446744073709551616}`, 400, "bad_seed"},
		{"body too large", "POST", "/api/matches", tok, `{"players":[{"name":"` + strings.Repeat("a", 2000) + `"}]}`, 413, "body_too_large"},
		{"unknown match", "POST", "/api/game/tickets", tok, `{"matchId":"nope","seat":0}`, 404, "match_not_found"},
		{"bad match id", "POST", "/api/game/tickets", tok, `{"matchId":"a b","seat":0}`, 400, "bad_match_id"},
		{"missing match id", "POST", "/api/game/tickets", tok, `{"seat":0}`, 400, "bad_match_id"},
		{"seat 2", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `","seat":2}`, 400, "bad_seat"},
		{"seat missing", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `"}`, 400, "bad_seat"},
		{"seat fraction", "POST", "/api/game/tickets", tok, `{"matchId":"` + id + `","seat":0.5}`, 400, "bad_seat"},
		{"GET on POST route", "GET", "/api/matches", tok, ``, 405, "method_not_allowed"},
		{"POST on GET route", "POST", "/api/decks", tok, `{}`, 405, "method_not_allowed"},
		{"unknown path", "GET", "/api/nothing", tok, ``, 404, "not_found"},
		{"game without upgrade", "GET", "/game", "", ``, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.do(t, tc.method, tc.path, tc.token, tc.body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if tc.wantError == "" {
				return
			}
			var e struct{ Error, Message string }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %q is not JSON: %v", body, err)
			}
			if e.Error != tc.wantError || e.Message == "" {
				t.Fatalf("error body %s, want error %q with a message", body, tc.wantError)
			}
			if tc.wantStatus == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			if strings.Contains(string(body), testAdminToken) {
				t.Error("error body echoes the admin token")
			}
		})
	}
}

// TestAPIMatchErrors: errors of the match cluster become clear HTTP answers
// without internal details.
func TestAPIMatchErrors(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("gateway: %w: deck S1 has 49 cards", edge.ErrBadRequest), 400, "bad_request"},
		{fmt.Errorf("gateway: %w", edge.ErrUnavailable), 503, "unavailable"},
		{errors.New("disk on fire at /var/lib/secret"), 500, "internal"},
	}
	body := `{"players":[{"name":"a","deck":"S1"},{"name":"b","deck":"S2"}]}`
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			h.matches.(*edgetest.Matches).SetCreateError(tc.err)
			resp, data := h.do(t, "POST", "/api/matches", testAdminToken, body)
			var e struct{ Error, Message string }
			if err := json.Unmarshal(data, &e); err != nil || resp.StatusCode != tc.status || e.Error != tc.code {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, data, tc.status, tc.code)
			}
			if strings.Contains(string(data), "secret") {
				t.Errorf("internal detail leaked: %s", data)
			}
		})
	}
}

func TestAPIFlow(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	resp, body := h.do(t, "GET", "/api/decks", testAdminToken, "")
	if resp.StatusCode != 200 {
		t.Fatalf("decks: %d %s", resp.StatusCode, body)
	}
	var decks struct {
		Decks []struct {
			ID    string `json:"id"`
			Name  string `json:"name"`
			Cards int    `json:"cards"`
		} `json:"decks"`
	}
	if err := json.Unmarshal(body, &decks); err != nil || len(decks.Decks) != 2 || decks.Decks[0].ID != "S1" || decks.Decks[0].Cards != 50 {
		t.Fatalf("decks body %s (%v)", body, err)
	}

	for _, seed := range []string{``, `,"seed":42`, `,"seed":"18446744073709551615"`, `,"seed":null`} {
		resp, body = h.do(t, "POST", "/api/matches", testAdminToken,
			`{"players":[{"name":"Ann","deck":"S1"},{"name":"Bob","deck":"S2"}]`+seed+`}`)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create match (seed %q): %d %s", seed, resp.StatusCode, body)
		}
	}
	var created struct {
		MatchID string `json:"matchId"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.MatchID == "" {
		t.Fatalf("create body %s (%v)", body, err)
	}

	resp, body = h.do(t, "POST", "/api/game/tickets", testAdminToken, `{"matchId":"`+created.MatchID+`","seat":1}`)
	if resp.StatusCode != 200 {
		t.Fatalf("ticket: %d %s", resp.StatusCode, body)
	}
	var tk struct {
		Ticket    string `json:"ticket"`
		MatchID   string `json:"matchId"`
		Seat      int    `json:"seat"`
		ExpiresAt int64  `json:"expiresAt"`
	}
	if err := json.Unmarshal(body, &tk); err != nil {
		t.Fatal(err)
	}
	claims, err := h.srv.Tickets().Verify(tk.Ticket)
	if err != nil {
		t.Fatalf("issued ticket does not verify: %v", err)
	}
	exp := time.UnixMilli(tk.ExpiresAt)
	if tk.ExpiresAt != claims.ExpiresAt.UnixMilli() {
		t.Fatalf("expiresAt %d, claims %v", tk.ExpiresAt, claims.ExpiresAt)
	}
	if until := time.Until(exp); until < 50*time.Second || until > 61*time.Second {
		t.Errorf("ticket valid for %v, want 60 s", until)
	}
	if claims.MatchID != created.MatchID || claims.Seat != 1 || tk.MatchID != created.MatchID || tk.Seat != 1 {
		t.Fatalf("claims %+v, response %+v", claims, tk)
	}

	// The ticket opens the seat over the WebSocket.
	c := dial(t, h, "ws")
	if sh := hello(t, c, tk.Ticket, 0); sh.PlayerIndex != 1 {
		t.Fatalf("seat %d", sh.PlayerIndex)
	}

	resp, body = h.do(t, "GET", "/healthz", "", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}
	for _, series := range []string{
		`matchgrain_edge_matches_created_total`,
		`matchgrain_edge_tickets_issued_total`,
		`matchgrain_edge_connections{transport="ws"}`,
		`matchgrain_http_requests_total{code="200",route="api_tickets"}`,
	} {
		if v, err := h.metric(series); err != nil || v < 1 {
			t.Errorf("%s = %v (%v)", series, v, err)
		}
	}
}
