package edge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/protocol"
)

type playMatch struct {
	MatchID string `json:"matchId"`
	Seat    int    `json:"seat"`
	SeatKey string `json:"seatKey"`
	Invite  string `json:"invite"`
}

func errorCode(t *testing.T, data []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("error body %q: %v", data, err)
	}
	return e.Error
}

func TestPlayEndpointsOffByDefault(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	for _, p := range []string{"/api/play/matches", "/api/play/tickets"} {
		resp, data := h.do(t, "POST", p, "", `{}`)
		if resp.StatusCode != http.StatusNotFound || errorCode(t, data) != "not_found" {
			t.Fatalf("%s without PublicPlay: %d %s", p, resp.StatusCode, data)
		}
	}
}

// TestPlayPublicFlow: a browser creates a bot or friend match without the
// admin token and gets tickets only for the seats its keys open.
func TestPlayPublicFlow(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.PublicCreatesPerMinute = 600 })
	create := func(body string) playMatch {
		t.Helper()
		resp, data := h.do(t, "POST", "/api/play/matches", "", body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d %s", body, resp.StatusCode, data)
		}
		var m playMatch
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("create answer %s: %v", data, err)
		}
		return m
	}
	bot := create(`{"name":"Ann","deck":"S1","opponent":"bot"}`)
	if bot.MatchID == "" || bot.Seat != 0 || len(bot.SeatKey) < 20 || bot.Invite != "" {
		t.Fatalf("bot match answer: %+v", bot)
	}
	friend := create(`{"name":"Ann","deck":"S2","opponent":"friend"}`)
	if friend.Invite == "" || friend.SeatKey == bot.SeatKey {
		t.Fatalf("friend match keys: %+v (bot match key %s)", friend, bot.SeatKey)
	}
	friendKey := redeem(t, h, friend.MatchID, friend.Invite, newClaim(t))

	ticket := func(matchID string, seat int, key string) (int, []byte) {
		t.Helper()
		resp, data := h.do(t, "POST", "/api/play/tickets", "", fmt.Sprintf(`{"matchId":%q,"seat":%d,"seatKey":%q}`, matchID, seat, key))
		return resp.StatusCode, data
	}
	cases := []struct {
		name    string
		matchID string
		seat    int
		key     string
		status  int
		code    string
	}{
		{"own seat", bot.MatchID, 0, bot.SeatKey, 200, ""},
		{"friend seat", friend.MatchID, 1, friendKey, 200, ""},
		{"friend seat with the invite", friend.MatchID, 1, friend.Invite, 403, "bad_seat_key"},
		{"bot seat with the player's key", bot.MatchID, 1, bot.SeatKey, 403, "bad_seat_key"},
		{"other match's key", friend.MatchID, 0, bot.SeatKey, 403, "bad_seat_key"},
		{"empty key", bot.MatchID, 0, "", 403, "bad_seat_key"},
		{"seat 2", bot.MatchID, 2, bot.SeatKey, 400, "bad_seat"},
		{"bad match id", "a b", 0, bot.SeatKey, 400, "bad_match_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, data := ticket(c.matchID, c.seat, c.key)
			if status != c.status {
				t.Fatalf("status %d (%s), want %d", status, data, c.status)
			}
			if c.code != "" && errorCode(t, data) != c.code {
				t.Fatalf("error %s, want %s", data, c.code)
			}
		})
	}
	for _, c := range []struct{ name, body, code string }{
		{"no name", `{"name":"","deck":"S1","opponent":"bot"}`, "bad_name"},
		{"unknown deck", `{"name":"a","deck":"S9","opponent":"bot"}`, "unknown_deck"},
		{"unknown opponent", `{"name":"a","deck":"S1","opponent":"ghost"}`, "bad_opponent"},
		{"not json", `{"name":`, "invalid_json"},
	} {
		resp, data := h.do(t, "POST", "/api/play/matches", "", c.body)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, data) != c.code {
			t.Fatalf("%s: %d %s, want 400 %s", c.name, resp.StatusCode, data, c.code)
		}
	}

	// The ticket opens the seat on /game like an admin ticket.
	status, data := ticket(bot.MatchID, 0, bot.SeatKey)
	var tk struct {
		Ticket string `json:"ticket"`
	}
	if err := json.Unmarshal(data, &tk); status != 200 || err != nil || tk.Ticket == "" {
		t.Fatalf("ticket: %d %s %v", status, data, err)
	}
	c := dialWS(t, h, nil)
	defer c.close()
	send(t, c, &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: tk.Ticket, ClientBuild: "play-test"})
	f, err := c.read(5 * time.Second)
	if hello, ok := f.(*protocol.ServerHello); err != nil || !ok || hello.MatchID != bot.MatchID || hello.PlayerIndex != 0 {
		t.Fatalf("first frame: %T %+v %v", f, f, err)
	}
}

// TestPlayCreationRateLimited: creations beyond the per-address burst get
// 429 with Retry-After, and nothing is created.
func TestPlayCreationRateLimited(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.PublicCreatesPerMinute = 6 })
	body := `{"name":"a","deck":"S1","opponent":"bot"}`
	created, limited := 0, 0
	for range 6 {
		resp, data := h.do(t, "POST", "/api/play/matches", "", body)
		switch resp.StatusCode {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") == "" || errorCode(t, data) != "rate_limited" {
				t.Fatalf("429 without Retry-After or code: %s", data)
			}
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
	}
	// Burst of 6/3 = 2; a third token may have trickled in at 0.1/s.
	if created < 2 || created > 3 || limited != 6-created {
		t.Fatalf("created %d, limited %d of 6", created, limited)
	}
}

// TestPlayGuestNamesSeat: the friend chooses a name when redeeming the
// invite, checked like the creator's; a bad one changes nothing (the invite
// is still free), and the first name stands.
func TestPlayGuestNamesSeat(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.PublicCreatesPerMinute = 600 })
	fake := h.matches.(*edgetest.Matches)
	m := createPlay(t, h, "friend")
	redeemAs := func(claim, name string) (int, []byte) {
		t.Helper()
		body, err := json.Marshal(map[string]string{"matchId": m.MatchID, "invite": m.Invite, "claim": claim, "name": name})
		if err != nil {
			t.Fatal(err)
		}
		resp, data := h.do(t, "POST", "/api/play/invites", "", string(body))
		return resp.StatusCode, data
	}
	for _, bad := range []string{"Bea\u202e", "Bea\x07", strings.Repeat("b", edge.MaxPlayerNameLen+1)} {
		if status, data := redeemAs(newClaim(t), bad); status != http.StatusBadRequest || errorCode(t, data) != "bad_name" {
			t.Fatalf("name %q: %d %s, want 400 bad_name", bad, status, data)
		}
	}
	if n := fake.Names(m.MatchID); n != [2]string{"Ann", "Friend"} {
		t.Fatalf("names after refused redemptions: %q", n)
	}
	claim := newClaim(t)
	if status, data := redeemAs(claim, "Bea"); status != http.StatusOK {
		t.Fatalf("redeem as Bea: %d %s", status, data)
	}
	if status, data := redeemAs(claim, "Cleo"); status != http.StatusOK { // a retry, answer lost
		t.Fatalf("redeem again with the same claim: %d %s", status, data)
	}
	if n := fake.Names(m.MatchID); n != [2]string{"Ann", "Bea"} {
		t.Fatalf("names = %q, want the first name chosen", n)
	}
	// A bot match has no guest seat, and a friend who gives no name stays "Friend".
	if err := fake.NameSeat(context.Background(), createPlay(t, h, "bot").MatchID, 1, "Bea"); !errors.Is(err, edge.ErrBadRequest) {
		t.Fatalf("naming a bot's seat: %v, want ErrBadRequest", err)
	}
	other := createPlay(t, h, "friend")
	redeem(t, h, other.MatchID, other.Invite, newClaim(t))
	if n := fake.Names(other.MatchID); n[1] != "Friend" {
		t.Fatalf("names without a chosen one = %q", n)
	}
}
