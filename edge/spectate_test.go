package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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
func checkSpectatorTicket(t *testing.T, h *harness, data []byte, matchID string) spectatorTicketAnswer {
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
	return a
}

// The admin API issues spectator tickets for existing matches only, and
// none when the server allows no spectators.
func TestSpectatorTicketsAdmin(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) {
		c.MaxSpectators, c.SpectatorDelayEvents, c.SpectatorDelay = 4, 5, 2*time.Second
	})
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
	if a := checkSpectatorTicket(t, h, data, id); *a.DelayEvents != 5 || *a.DelayMs != 2000 {
		t.Fatalf("the answer says a delay of %d events and %d ms, want 5 and 2000", *a.DelayEvents, *a.DelayMs)
	}

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

// A spectator's session over both transports: a hello as seat 2 with a
// view that holds no legal intents, the seats' batches as they come, an
// intent refused with the connection left open, and a queue shorter than a
// seat's: a push of more frames than it holds drops the spectator, while
// the same push to a seat goes through.
func TestSpectatorSession(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, newFakeMatches, nil)
			id := h.newMatch()
			spec := dial(t, h, tr)
			if hl := hello(t, spec, h.ticket(id, protocol.SeatSpectator), 0); hl.PlayerIndex != protocol.SeatSpectator {
				t.Fatalf("spectator hello %+v", hl)
			}
			if v := expectFrame[*protocol.ServerSnapshot](t, spec, 5*time.Second).View; v.You != protocol.SeatSpectator || len(v.LegalIntents) != 0 {
				t.Fatalf("spectator view: you %d, legal intents %v", v.You, v.LegalIntents)
			}
			seat := dial(t, h, tr)
			hello(t, seat, h.ticket(id, 0), 0)
			send(t, seat, &protocol.ClientIntent{IntentID: "end-1", BasedOnSeq: 1, Intent: protocol.EndTurn{}})
			if ev := expectFrame[*protocol.ServerEvents](t, spec, 5*time.Second); len(ev.Events) == 0 {
				t.Fatalf("the spectator got an empty batch after the seat's EndTurn: %+v", ev)
			}
			send(t, spec, &protocol.ClientIntent{IntentID: "spy", BasedOnSeq: 1, Intent: protocol.Concede{}})
			if r := expectFrame[*protocol.ServerIntentResult](t, spec, 5*time.Second); r.Accepted || r.Code != protocol.RejectSpectator {
				t.Fatalf("a spectator's intent: %+v, want refused with code Spectator", r)
			}
			if done, _ := fakeOf(t, h).Finished(id); done {
				t.Fatalf("a spectator's Concede ended the match")
			}

			ping, err := protocol.EncodeServerFrame(&protocol.ServerPing{Nonce: 1})
			if err != nil {
				t.Fatal(err)
			}
			burst := make([][]byte, edge.SpectatorQueueFrames+1)
			for i := range burst {
				burst[i] = ping
			}
			fakeOf(t, h).Seat(id, 0).Sink().Deliver(burst)
			fakeOf(t, h).Seat(id, protocol.SeatSpectator).Sink().Deliver(burst)
			// Dropped without a close frame (gorilla reports 1006) or a ServerError.
			if got := readUntilClosed(t, spec, 5*time.Second); (got.wsCode != 0 && got.wsCode != 1006) || got.lastError != nil {
				t.Fatalf("a spectator whose queue overflowed: closed %+v, want dropped without a word", got)
			}
			send(t, seat, &protocol.ClientPing{Nonce: 7})
			if p := expectFrame[*protocol.ServerPong](t, seat, 5*time.Second); p.Nonce != 7 {
				t.Fatalf("the seat's pong %+v", p)
			}
			if n, err := h.metric(`matchgrain_edge_closes_total{reason="slow_consumer"}`); err != nil || n != 1 {
				t.Fatalf("%v slow-consumer drops (%v), want 1: the spectator only", n, err)
			}
		})
	}
}

// Public replays are served by Config.Replays only with public play, and
// rate limited per client address like the other public requests.
func TestPublicReplaysRoute(t *testing.T) {
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(r.URL.Path))
	})
	closed := newHarness(t, newFakeMatches, func(c *edge.Config) { c.Replays = stub })
	if resp, data := closed.do(t, "GET", edge.ReplaysPrefix+"m1", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a replay without public play: %d %s", resp.StatusCode, data)
	}
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.Replays = stub })
	limited := false
	for i := 0; i < 200 && !limited; i++ {
		resp, data := h.do(t, "GET", edge.ReplaysPrefix+"m1", "", "")
		switch resp.StatusCode {
		case http.StatusOK:
			if string(data) != edge.ReplaysPrefix+"m1" {
				t.Fatalf("the replay handler got %q", data)
			}
		case http.StatusTooManyRequests:
			limited = i > 0 && resp.Header.Get("Retry-After") != ""
			if !limited {
				t.Fatalf("request %d refused: %d %s", i, resp.StatusCode, data)
			}
		default:
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, data)
		}
	}
	if !limited {
		t.Fatalf("200 replays in a row from one address were never rate limited")
	}
}

// The live list is Config.Live's, only with public play.
func TestPublicLiveRoute(t *testing.T) {
	stub := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		edge.WriteJSON(w, http.StatusOK, map[string]any{"matches": []any{}})
	})
	closed := newHarness(t, newFakeMatches, func(c *edge.Config) { c.Live = stub })
	if resp, data := closed.do(t, "GET", edge.LivePath, "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the live list without public play: %d %s", resp.StatusCode, data)
	}
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.PublicPlay = true; c.Live = stub })
	if resp, data := h.do(t, "GET", edge.LivePath, "", ""); resp.StatusCode != http.StatusOK || string(data) == "" {
		t.Fatalf("the live list: %d %s", resp.StatusCode, data)
	}
}
