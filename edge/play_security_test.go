package edge_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// newClaim draws a friend's claim secret, as the play page does.
func newClaim(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// redeem redeems invite with claim and returns the seat key of seat 1.
func redeem(t *testing.T, h *harness, matchID, invite, claim string) string {
	t.Helper()
	resp, data := h.do(t, "POST", "/api/play/invites", "", fmt.Sprintf(`{"matchId":%q,"invite":%q,"claim":%q}`, matchID, invite, claim))
	var r struct {
		Seat    int    `json:"seat"`
		SeatKey string `json:"seatKey"`
	}
	if err := json.Unmarshal(data, &r); resp.StatusCode != http.StatusOK || err != nil || r.Seat != 1 || r.SeatKey == "" {
		t.Fatalf("redeem: %d %s %v", resp.StatusCode, data, err)
	}
	return r.SeatKey
}

func playTicketStatus(t *testing.T, h *harness, matchID string, seat int, key string) (int, []byte) {
	t.Helper()
	resp, data := h.do(t, "POST", "/api/play/tickets", "", fmt.Sprintf(`{"matchId":%q,"seat":%d,"seatKey":%q}`, matchID, seat, key))
	return resp.StatusCode, data
}

func createPlay(t *testing.T, h *harness, opponent string) playMatch {
	t.Helper()
	resp, data := h.do(t, "POST", "/api/play/matches", "", `{"name":"Ann","deck":"S1","opponent":"`+opponent+`"}`)
	var m playMatch
	if err := json.Unmarshal(data, &m); resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s %v", resp.StatusCode, data, err)
	}
	return m
}

// TestPlayCreatorCannotTakeFriendSeat is attack 1 of issue 41: nothing the
// creator of a friend match is given opens seat 1, and if the creator
// redeems the invite first, the friend is told the invite was used.
func TestPlayCreatorCannotTakeFriendSeat(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true })
	resp, data := h.do(t, "POST", "/api/play/matches", "", `{"name":"Ann","deck":"S1","opponent":"friend"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	id, _ := fields["matchId"].(string)
	for name, v := range fields {
		if s, ok := v.(string); ok {
			if status, body := playTicketStatus(t, h, id, 1, s); status != http.StatusForbidden {
				t.Fatalf("the creator's %q opens the friend's seat: %d %s", name, status, body)
			}
		}
	}
	invite, _ := fields["invite"].(string)
	if invite == "" {
		t.Fatalf("a friend match without an invite: %s", data)
	}

	// The creator redeems the invite first: the friend finds out.
	creatorKey := redeem(t, h, id, invite, newClaim(t))
	friend := fmt.Sprintf(`{"matchId":%q,"invite":%q,"claim":%q}`, id, invite, newClaim(t))
	resp, data = h.do(t, "POST", "/api/play/invites", "", friend)
	if resp.StatusCode != http.StatusConflict || errorCode(t, data) != "invite_used" {
		t.Fatalf("second claim of one invite: %d %s, want 409 invite_used", resp.StatusCode, data)
	}
	if status, body := playTicketStatus(t, h, id, 1, creatorKey); status != http.StatusOK {
		t.Fatalf("the first redeemer's key: %d %s", status, body)
	}

	// A retry with the same claim (its answer lost) gets the same key again.
	m := createPlay(t, h, "friend")
	claim := newClaim(t)
	if a, b := redeem(t, h, m.MatchID, m.Invite, claim), redeem(t, h, m.MatchID, m.Invite, claim); a != b {
		t.Fatalf("the same claim got two keys: %s, %s", a, b)
	}
	for _, c := range []struct{ name, body, code string }{
		{"another match's invite", fmt.Sprintf(`{"matchId":%q,"invite":%q,"claim":%q}`, id, m.Invite, newClaim(t)), "bad_invite"},
		{"short claim", fmt.Sprintf(`{"matchId":%q,"invite":%q,"claim":"abc"}`, m.MatchID, m.Invite), "bad_claim"},
	} {
		resp, data := h.do(t, "POST", "/api/play/invites", "", c.body)
		if errorCode(t, data) != c.code {
			t.Fatalf("%s: %d %s, want %s", c.name, resp.StatusCode, data, c.code)
		}
	}
}

// TestPlaySeatKeysRotateWithTicketKey: once a ticket key is no longer
// accepted, the seat keys signed under it stop opening seats; while it is
// still accepted, the ticket answer hands out the key signed anew.
func TestPlaySeatKeysRotateWithTicketKey(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true })
	m := createPlay(t, h, "bot")
	next := []byte(strings.Repeat("n", 32))
	if err := h.srv.Tickets().SetKeys(next, edgetest.TicketKey); err != nil {
		t.Fatal(err)
	}
	status, data := playTicketStatus(t, h, m.MatchID, 0, m.SeatKey)
	var r struct {
		SeatKey string `json:"seatKey"`
	}
	if err := json.Unmarshal(data, &r); status != http.StatusOK || err != nil || r.SeatKey == "" || r.SeatKey == m.SeatKey {
		t.Fatalf("during the rotation: %d %s %v", status, data, err)
	}
	if err := h.srv.Tickets().SetKeys(next); err != nil {
		t.Fatal(err)
	}
	if status, data := playTicketStatus(t, h, m.MatchID, 0, m.SeatKey); status != http.StatusForbidden {
		t.Fatalf("a seat key of the retired ticket key still opens its seat: %d %s", status, data)
	}
	if status, data := playTicketStatus(t, h, m.MatchID, 0, r.SeatKey); status != http.StatusOK {
		t.Fatalf("the key signed anew: %d %s", status, data)
	}
}

// TestPlayRefusesCrossSite is attack 6 of issue 41: a page of another site
// cannot make its visitors' browsers create matches.
func TestPlayRefusesCrossSite(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true })
	body := `{"name":"Ann","deck":"S1","opponent":"bot"}`
	post := func(contentType string, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest("POST", h.httpURL+"/api/play/matches", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	self := "http://" + strings.TrimPrefix(h.httpURL, "http://")
	for _, c := range []struct {
		name        string
		contentType string
		header      map[string]string
		status      int
		code        string
	}{
		{"text/plain from another site", "text/plain", map[string]string{"Origin": "https://evil.example"}, 415, "unsupported_media_type"},
		{"form", "application/x-www-form-urlencoded", nil, 415, "unsupported_media_type"},
		{"JSON from another site", "application/json", map[string]string{"Origin": "https://evil.example"}, 403, "origin_not_allowed"},
		{"null origin", "application/json", map[string]string{"Origin": "null"}, 403, "origin_not_allowed"},
		{"cross-site fetch without Origin", "application/json", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "origin_not_allowed"},
		{"own page", "application/json; charset=utf-8", map[string]string{"Origin": self}, 201, ""},
		{"not a browser", "application/json", nil, 201, ""},
	} {
		status, data := post(c.contentType, c.header)
		if status != c.status || (c.code != "" && errorCode(t, data) != c.code) {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, data, c.status, c.code)
		}
	}
}

// TestPlayCreationBucketsPer64: addresses of one IPv6 /64 share one
// creation bucket (a host owns its /64 and could otherwise rotate through
// it); another /64 has a bucket of its own.
func TestPlayCreationBucketsPer64(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.PublicCreatesPerMinute = 6 })
	create := func(remote string) int {
		req := httptest.NewRequest("POST", "/api/play/matches", strings.NewReader(`{"name":"a","deck":"S1","opponent":"bot"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	limited := false
	for i := range 6 { // the burst is 2: the /64 is limited within 6 tries
		if create(fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1)) == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("six addresses of one /64 each created a match: buckets are not per /64")
	}
	if code := create("[2001:db8:1:3::1]:4000"); code != http.StatusCreated {
		t.Fatalf("another /64: %d, want 201", code)
	}
}

// TestPlayFloodDoesNotStarveNewcomers: a flood from many addresses, each
// within its own limit, takes every creation the shared budget refills, but
// an address that has not created anything lately still gets a match (the
// reserve, which addresses that created recently cannot draw from).
func TestPlayFloodDoesNotStarveNewcomers(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) {
		c.PublicPlay = true
		c.PublicCreatesPerMinute = 600       // burst 200: no flooder meets its own limit
		c.PublicCreatesGlobalPerMinute = 120 // burst 20: 15 shared, 5 in reserve
	})
	from := func(last byte) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, last)}}
		return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
			return d.DialContext(ctx, n, a)
		}}}
	}
	create := func(c *http.Client) int {
		req, err := http.NewRequest("POST", h.httpURL+"/api/play/matches", strings.NewReader(`{"name":"a","deck":"S1","opponent":"bot"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	flooders := make([]*http.Client, 20)
	for i := range flooders {
		flooders[i] = from(byte(10 + i))
	}
	// The flood: a round of 20 creations every 50 ms for 3 s, long enough
	// for the reserve (0.5 a second) to refill while the flood takes every
	// shared creation.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	refused := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); <-tick.C {
		for _, c := range flooders {
			if create(c) == http.StatusTooManyRequests {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("the flood was never refused: the global budget does not hold")
	}
	// Right after a round, as flooders keep the shared budget empty.
	if code := create(from(200)); code != http.StatusCreated {
		t.Fatalf("a newcomer during the flood: %d, want 201 (the flood starved everyone)", code)
	}
}

// TestNotAdmittedServesNoPlayer: while Config.Admitted says this node is not
// part of its cluster, /healthz says so, no API call or game connection is
// served (TCP connections are closed at once), and /metrics still answers;
// once admitted, everything is served again.
func TestNotAdmittedServesNoPlayer(t *testing.T) {
	var admitted atomic.Bool
	h := newHarness(t, newFakeMatches, func(c *edge.Config) {
		c.PublicPlay = true
		c.Admitted = func() error {
			if admitted.Load() {
				return nil
			}
			return errors.New("refused by a seed")
		}
	})
	for _, c := range []struct{ method, path, token, code string }{
		{"GET", "/healthz", "", "not_admitted"},
		{"GET", "/api/decks", testAdminToken, "not_admitted"},
		{"POST", "/api/play/matches", "", "not_admitted"},
		{"GET", "/game", "", "not_admitted"},
	} {
		resp, data := h.do(t, c.method, c.path, c.token, `{"name":"a","deck":"S1","opponent":"bot"}`)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(data), c.code) {
			t.Errorf("%s %s while not admitted: %d %s", c.method, c.path, resp.StatusCode, data)
		}
	}
	if resp, _ := h.do(t, "GET", "/metrics", "", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics while not admitted: %d", resp.StatusCode)
	}
	conn, err := net.Dial("tcp", h.tcpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Errorf("a TCP connection was served (%d bytes) while not admitted", n)
	}
	admitted.Store(true)
	if resp, data := h.do(t, "GET", "/healthz", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz once admitted: %d %s", resp.StatusCode, data)
	}
}
