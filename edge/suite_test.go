package edge_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestEdgeSuite runs the transport-level behaviours against the fake
// matches. An end-to-end test runs runEdgeSuite with the real gateway.
func TestEdgeSuite(t *testing.T) {
	runEdgeSuite(t, newFakeMatches)
}

// runEdgeSuite holds the behaviours that must hold for any Matches: they
// only use CreateMatch, the Server's tickets and the protocol.
func runEdgeSuite(t *testing.T, newMatches newMatchesFunc) {
	t.Run("Handshake", func(t *testing.T) { testHandshake(t, newMatches) })
	t.Run("HandshakeErrors", func(t *testing.T) { testHandshakeErrors(t, newMatches) })
	t.Run("TicketReplay", func(t *testing.T) { testTicketReplay(t, newMatches) })
	t.Run("BadFrames", func(t *testing.T) { testBadFrames(t, newMatches) })
	t.Run("HelloTimeout", func(t *testing.T) { testHelloTimeout(t, newMatches) })
	t.Run("Heartbeat", func(t *testing.T) { testHeartbeat(t, newMatches) })
	t.Run("RateLimit", func(t *testing.T) { testRateLimit(t, newMatches) })
	t.Run("Takeover", func(t *testing.T) { testTakeover(t, newMatches) })
	t.Run("UnknownIntent", func(t *testing.T) { testUnknownIntent(t, newMatches) })
	t.Run("Shutdown", func(t *testing.T) { testShutdown(t, newMatches) })
	t.Run("Origin", func(t *testing.T) { testOrigin(t, newMatches) })
	t.Run("ResumeTickets", func(t *testing.T) { testResumeTickets(t, newMatches) })
}

var (
	wantMalformed = want{wsCode: protocol.CloseProtocolViolation, wsErr: protocol.ErrorMalformedFrame, tcpErr: protocol.ErrorMalformedFrame}
	wantNormal    = want{wsCode: protocol.CloseNormal, wsErr: -1, tcpErr: -1}
)

func testHandshake(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id := h.newMatch()
			c := dial(t, h, tr)
			sh := hello(t, c, h.ticket(id, 1), 0)
			if sh.ProtocolVersion != protocol.Version || sh.MatchID != id || sh.PlayerIndex != 1 || sh.Resumed {
				t.Fatalf("ServerHello = %+v", *sh)
			}
			snap := expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
			if snap.View.MatchID != id || snap.View.You != 1 || snap.View.EventSeq != sh.EventSeq {
				t.Fatalf("snapshot match %q you %d seq %d; hello seq %d", snap.View.MatchID, snap.View.You, snap.View.EventSeq, sh.EventSeq)
			}

			send(t, c, &protocol.ClientPing{Nonce: 77, ClientTimeMs: time.Now().UnixMilli()})
			pong := expectFrame[*protocol.ServerPong](t, c, 5*time.Second)
			if pong.Nonce != 77 || pong.ServerTimeMs == 0 {
				t.Fatalf("pong = %+v", *pong)
			}

			send(t, c, &protocol.ClientIntent{IntentID: "i-1", BasedOnSeq: sh.EventSeq, Intent: protocol.EndTurn{}})
			res := expectFrame[*protocol.ServerIntentResult](t, c, 5*time.Second)
			if res.IntentID != "i-1" {
				t.Fatalf("intent result for %q, want i-1", res.IntentID)
			}

			send(t, c, &protocol.ClientResync{FromSeq: 0, FullSnapshot: true})
			expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)

			send(t, c, &protocol.ClientLeave{Reason: "done"})
			wantNormal.check(t, c, readUntilClosed(t, c, 5*time.Second))
		})
	}
	// Each transport's intent was answered and timed (its reader observed
	// it before it read the resync that came back above).
	if v, err := h.metric("matchgrain_edge_intent_duration_seconds_count"); err != nil || v != float64(len(transports)) {
		t.Errorf("intents timed: %v (%v), want %d", v, err, len(transports))
	}
}

func testHandshakeErrors(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	id := h.newMatch()
	otherKey, err := edge.NewTicketer([]byte("another-key-another-key-another-k"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantTicket := want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorInvalidTicket, tcpErr: protocol.ErrorInvalidTicket}
	wantExpired := want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorTicketExpired, tcpErr: protocol.ErrorTicketExpired}
	cases := []struct {
		name  string
		first func(t *testing.T) protocol.ClientFrame
		want  want
	}{
		{"version 2", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientHello{ProtocolVersion: 2, Ticket: h.ticket(id, 0)}
		}, want{wsCode: protocol.CloseUnsupportedVersion, wsErr: protocol.ErrorUnsupportedVersion, tcpErr: protocol.ErrorUnsupportedVersion}},
		{"version 0", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientHello{ProtocolVersion: 0, Ticket: h.ticket(id, 0)}
		}, want{wsCode: protocol.CloseUnsupportedVersion, wsErr: protocol.ErrorUnsupportedVersion, tcpErr: protocol.ErrorUnsupportedVersion}},
		{"garbage ticket", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientHello{ProtocolVersion: 1, Ticket: "not-a-ticket"}
		}, wantTicket},
		{"empty ticket", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientHello{ProtocolVersion: 1}
		}, wantTicket},
		{"forged ticket", func(t *testing.T) protocol.ClientFrame {
			tk := []byte(h.ticket(id, 0))
			// Change one character in the middle (inside the payload).
			if tk[20] == 'A' {
				tk[20] = 'B'
			} else {
				tk[20] = 'A'
			}
			return &protocol.ClientHello{ProtocolVersion: 1, Ticket: string(tk)}
		}, wantTicket},
		{"foreign key", func(t *testing.T) protocol.ClientFrame {
			tk, err := otherKey.Issue(id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return &protocol.ClientHello{ProtocolVersion: 1, Ticket: tk.Token}
		}, wantTicket},
		{"expired ticket", func(t *testing.T) protocol.ClientFrame {
			tk, err := h.srv.Tickets().IssueAt(time.Now().Add(-2*time.Minute), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return &protocol.ClientHello{ProtocolVersion: 1, Ticket: tk.Token}
		}, wantExpired},
		{"unknown match", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientHello{ProtocolVersion: 1, Ticket: h.ticket("no-such-match", 0)}
		}, want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorMatchNotFound, tcpErr: protocol.ErrorMatchNotFound}},
		{"ping first", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientPing{Nonce: 1}
		}, wantMalformed},
		{"intent first", func(t *testing.T) protocol.ClientFrame {
			return &protocol.ClientIntent{IntentID: "x", Intent: protocol.EndTurn{}}
		}, wantMalformed},
	}
	for _, tc := range cases {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				c := dial(t, h, tr)
				send(t, c, tc.first(t))
				tc.want.check(t, c, readUntilClosed(t, c, 5*time.Second))
			})
		}
	}
}

func testTicketReplay(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id := h.newMatch()
			tk := h.ticket(id, 0)
			c1 := dial(t, h, tr)
			hello(t, c1, tk, 0)
			c2 := dial(t, h, tr)
			send(t, c2, &protocol.ClientHello{ProtocolVersion: 1, Ticket: tk})
			want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorInvalidTicket, tcpErr: protocol.ErrorInvalidTicket}.
				check(t, c2, readUntilClosed(t, c2, 5*time.Second))
			// The first connection is untouched by the replay.
			send(t, c1, &protocol.ClientPing{Nonce: 5})
			if p := expectFrame[*protocol.ServerPong](t, c1, 5*time.Second); p.Nonce != 5 {
				t.Fatalf("pong nonce %d", p.Nonce)
			}
		})
	}
}

func testBadFrames(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	garbage := []byte{0xc1, 0xff, 0x00, 0x13, 0x37}
	huge := make([]byte, 300<<10)
	cases := []struct {
		name       string
		transports []string
		afterHello bool
		act        func(t *testing.T, c testConn)
	}{
		{"garbage", transports, false, func(t *testing.T, c testConn) { c.sendRaw(garbage) }},
		{"garbage after hello", transports, true, func(t *testing.T, c testConn) { c.sendRaw(garbage) }},
		{"300 KiB frame", transports, false, func(t *testing.T, c testConn) { c.sendRaw(huge) }},
		{"300 KiB frame after hello", transports, true, func(t *testing.T, c testConn) { c.sendRaw(huge) }},
		{"truncated msgpack", transports, true, func(t *testing.T, c testConn) { c.sendRaw([]byte{0x92, 0x03}) }},
		{"unknown frame key", transports, true, func(t *testing.T, c testConn) { c.sendRaw([]byte{0x92, 0x09, 0x90}) }},
		{"str32 claiming 4 GiB", transports, true, func(t *testing.T, c testConn) {
			c.sendRaw([]byte{0x92, 0x05, 0x91, 0xdb, 0xff, 0xff, 0xff, 0xff})
		}},
		{"second hello", transports, true, func(t *testing.T, c testConn) {
			send(t, c, &protocol.ClientHello{ProtocolVersion: 1, Ticket: "x"})
		}},
		{"text message", []string{"ws"}, false, func(t *testing.T, c testConn) {
			c.(*wsTestConn).sendMessage(websocket.TextMessage, []byte(`{"hello":1}`))
		}},
		{"text message after hello", []string{"ws"}, true, func(t *testing.T, c testConn) {
			c.(*wsTestConn).sendMessage(websocket.TextMessage, []byte("hi"))
		}},
		{"empty message", []string{"ws"}, true, func(t *testing.T, c testConn) {
			c.(*wsTestConn).sendMessage(websocket.BinaryMessage, nil)
		}},
		{"unfinished message over the limit", []string{"ws"}, true, func(t *testing.T, c testConn) {
			// 300 KiB of a message that never ends: refused once 256 KiB
			// have arrived, not when the message is complete.
			w, err := c.(*wsTestConn).c.NextWriter(websocket.BinaryMessage)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(huge); err != nil {
				t.Fatal(err)
			}
		}},
		{"zero length prefix", []string{"tcp"}, true, func(t *testing.T, c testConn) {
			c.(*tcpTestConn).sendBytes([]byte{0, 0, 0, 0})
		}},
		{"4 GiB length prefix", []string{"tcp"}, false, func(t *testing.T, c testConn) {
			c.(*tcpTestConn).sendBytes([]byte{0xff, 0xff, 0xff, 0xff, 0x92})
		}},
		{"length prefix over limit", []string{"tcp"}, true, func(t *testing.T, c testConn) {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], protocol.MaxFrameBytes+1)
			c.(*tcpTestConn).sendBytes(hdr[:])
		}},
	}
	for _, tc := range cases {
		for _, tr := range tc.transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				c := dial(t, h, tr)
				if tc.afterHello {
					hello(t, c, h.ticket(h.newMatch(), 0), 0)
				}
				start := time.Now()
				tc.act(t, c)
				wantMalformed.check(t, c, readUntilClosed(t, c, 5*time.Second))
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("rejection took %v", d)
				}
			})
		}
	}
	// The server still serves after all that.
	c := dial(t, h, "ws")
	hello(t, c, h.ticket(h.newMatch(), 0), 0)
}

func testHelloTimeout(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, func(c *edge.Config) { c.HelloTimeout = 200 * time.Millisecond })
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c := dial(t, h, tr)
			start := time.Now()
			wantMalformed.check(t, c, readUntilClosed(t, c, 5*time.Second))
			if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
				t.Errorf("closed after %v, want about 200ms", d)
			}
		})
	}
}

func testHeartbeat(t *testing.T, newMatches newMatchesFunc) {
	const idle, timeout = 150 * time.Millisecond, 450 * time.Millisecond
	h := newHarness(t, newMatches, func(c *edge.Config) {
		c.HeartbeatIdle, c.HeartbeatTimeout = idle, timeout
	})
	t.Run("websocket pings are not activity", func(t *testing.T) {
		c := dialWS(t, h, nil)
		hello(t, c, h.ticket(h.newMatch(), 0), 0)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(idle / 3)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if c.c.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(time.Second)) != nil {
						return
					}
				}
			}
		}()
		start := time.Now()
		want{wsCode: protocol.CloseHeartbeatTimeout, wsErr: -1, tcpErr: -1}.check(t, c, readUntilClosed(t, c, 5*time.Second))
		if took := time.Since(start); took > timeout+2*time.Second {
			t.Errorf("closed after %v", took)
		}
	})
	for _, tr := range transports {
		t.Run("silent/"+tr, func(t *testing.T) {
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			start := time.Now()
			var pings int
			var res closed
			for {
				f, err := c.read(5 * time.Second)
				if err != nil {
					var ce *websocket.CloseError
					if errors.As(err, &ce) {
						res.wsCode = ce.Code
					}
					break
				}
				switch f := f.(type) {
				case *protocol.ServerPing:
					pings++
				case *protocol.ServerError:
					res.lastError = f
				}
			}
			took := time.Since(start)
			if pings != 1 {
				t.Errorf("got %d ServerPing, want 1", pings)
			}
			want{wsCode: protocol.CloseHeartbeatTimeout, wsErr: -1, tcpErr: protocol.ErrorHeartbeatTimeout}.check(t, c, res)
			if took < timeout-50*time.Millisecond || took > timeout+2*time.Second {
				t.Errorf("closed after %v, want about %v", took, timeout)
			}
		})
		t.Run("answering/"+tr, func(t *testing.T) {
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			end := time.Now().Add(3 * timeout)
			pings := 0
			for time.Now().Before(end) {
				f, err := c.read(time.Until(end) + 10*time.Millisecond)
				if err != nil {
					if time.Now().Before(end) {
						t.Fatalf("connection ended while answering pings: %v", err)
					}
					break
				}
				if p, ok := f.(*protocol.ServerPing); ok {
					pings++
					send(t, c, &protocol.ClientPong{Nonce: p.Nonce})
				}
			}
			if pings < 2 {
				t.Errorf("got %d pings in %v, want at least 2", pings, 3*timeout)
			}
		})
	}
}

func testRateLimit(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	for _, tr := range transports {
		t.Run("burst/"+tr, func(t *testing.T) {
			c := dial(t, h, tr)
			sh := hello(t, c, h.ticket(h.newMatch(), 0), 0)
			const n = 24 // burst 16 → at least 8 are over the limit
			for i := range n {
				send(t, c, &protocol.ClientIntent{IntentID: fmt.Sprintf("r-%d", i), BasedOnSeq: sh.EventSeq, Intent: protocol.Mulligan{HandIndexes: []int{0}}})
			}
			send(t, c, &protocol.ClientPing{Nonce: 9})
			limited, results, pong := 0, 0, false
			// The pong may overtake results the match sends later.
			for !pong || results < n {
				f, err := c.read(5 * time.Second)
				if err != nil {
					t.Fatalf("connection ended after %d results: %v", results, err)
				}
				if r, ok := f.(*protocol.ServerIntentResult); ok {
					results++
					if r.Code == protocol.RejectRateLimited {
						limited++
						if r.Accepted || r.EventSeq < sh.EventSeq {
							t.Errorf("rate-limited result %+v", *r)
						}
					}
				}
				if _, ok := f.(*protocol.ServerPong); ok {
					pong = true
				}
			}
			// The burst of 16 passes; the rest is limited, less what the
			// bucket refilled while the match answered (the exact arithmetic
			// is TestBucket's).
			if limited < 1 || n-limited < 16 {
				t.Errorf("%d of %d intents rate limited, want about %d", limited, n, n-16)
			}
		})
		t.Run("abuse/"+tr, func(t *testing.T) {
			c := dial(t, h, tr)
			sh := hello(t, c, h.ticket(h.newMatch(), 0), 0)
			for i := range 300 {
				send(t, c, &protocol.ClientIntent{IntentID: fmt.Sprintf("a-%d", i), BasedOnSeq: sh.EventSeq, Intent: protocol.SkipRide{}})
			}
			want{wsCode: protocol.CloseRateLimited, wsErr: protocol.ErrorRateLimited, tcpErr: protocol.ErrorRateLimited}.
				check(t, c, readUntilClosed(t, c, 5*time.Second))
		})
	}
}

func testTakeover(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id := h.newMatch()
			old := dial(t, h, tr)
			hello(t, old, h.ticket(id, 0), 0)
			expectFrame[*protocol.ServerSnapshot](t, old, 5*time.Second)
			// The new connection uses the other transport too, to show the
			// takeover does not depend on it.
			for _, tr2 := range transports {
				cur := dial(t, h, tr2)
				hello(t, cur, h.ticket(id, 0), 0)
				want{wsCode: protocol.CloseReplaced, wsErr: -1, tcpErr: protocol.ErrorSessionReplaced}.
					check(t, old, readUntilClosed(t, old, 5*time.Second))
				old = cur
				expectFrame[*protocol.ServerSnapshot](t, old, 5*time.Second)
			}
		})
	}
}

func testUnknownIntent(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			// [1, ["u-1", 0, [99, []]]]: a ClientIntent with intent key 99.
			c.sendRaw([]byte{0x92, 0x01, 0x93, 0xa3, 'u', '-', '1', 0x00, 0x92, 0x63, 0x90})
			r := expectFrame[*protocol.ServerIntentResult](t, c, 5*time.Second)
			if r.IntentID != "u-1" || r.Accepted || r.Code != protocol.RejectNotSupported {
				t.Fatalf("result %+v, want NotSupported for u-1", *r)
			}
			send(t, c, &protocol.ClientPing{Nonce: 3})
			expectFrame[*protocol.ServerPong](t, c, 5*time.Second)
		})
	}
}

func testShutdown(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, nil)
	conns := map[string]testConn{}
	for _, tr := range transports {
		conns[tr] = dial(t, h, tr)
		hello(t, conns[tr], h.ticket(h.newMatch(), 0), 0)
	}
	done := make(chan error, 1)
	go func() { done <- shutdownNow(h) }()
	for _, tr := range transports {
		want{wsCode: 1001, wsErr: -1, tcpErr: protocol.ErrorInternal}.check(t, conns[tr], readUntilClosed(t, conns[tr], 5*time.Second))
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	resp, err := http.Get(h.httpURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("healthz after shutdown: %d", resp.StatusCode)
	}
}

func testOrigin(t *testing.T, newMatches newMatchesFunc) {
	cases := []struct {
		name    string
		allowed []string
		origin  string
		host    bool // use the server's own host as origin
		ok      bool
	}{
		{"no list, no origin", nil, "", false, true},
		{"no list, same host", nil, "", true, true},
		{"no list, other host", nil, "https://evil.example", false, false},
		{"list, listed", []string{"https://game.example.com"}, "https://game.example.com", false, true},
		{"list, listed other case", []string{"https://game.example.com"}, "HTTPS://Game.Example.com", false, true},
		{"list, not listed", []string{"https://game.example.com"}, "https://evil.example", false, false},
		{"list, no origin", []string{"https://game.example.com"}, "", false, true},
		{"list, scheme differs", []string{"https://game.example.com"}, "http://game.example.com", false, false},
		{"star", []string{"*"}, "https://anything.example", false, true},
		{"garbage origin", nil, "::::", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, newMatches, func(c *edge.Config) { c.AllowedOrigins = tc.allowed })
			header := http.Header{}
			if tc.host {
				header.Set("Origin", strings.Replace(h.httpURL, "ws://", "http://", 1))
			} else if tc.origin != "" {
				header.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.DefaultDialer.Dial(h.wsURL, header)
			if c != nil {
				defer c.Close()
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("dial refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("dial accepted, want 403")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial error %v (resp %v), want 403", err, resp)
			}
		})
	}
}
