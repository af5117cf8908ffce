package edge_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/protocol"
)

// silentTCP opens a TCP fallback connection that never says hello.
func silentTCP(t *testing.T, h *harness) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.tcpAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// expectTCPRefusal reads what a refused TCP connection gets: one fatal
// RateLimited ServerError with the reason's text, then end of stream.
func expectTCPRefusal(t *testing.T, c net.Conn, text string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := protocol.NewFrameReader(c, protocol.MaxFrameBytes).ReadFrame()
	if err != nil {
		t.Fatalf("refused connection: no frame: %v", err)
	}
	f, err := protocol.DecodeServerFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	se, ok := f.(*protocol.ServerError)
	if !ok || se.Code != protocol.ErrorRateLimited || !se.Fatal || se.Message != text {
		t.Fatalf("refusal frame %#v, want fatal RateLimited %q", f, text)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("refused connection stays open")
	}
}

// rawGet sends a GET on a fresh connection and returns the status line and
// body, without the client's connection pooling.
func rawGet(t *testing.T, h *harness, path string) (int, string) {
	t.Helper()
	addr := strings.TrimPrefix(h.httpURL, "http://")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestLimitConnectionsPerAddress(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxConnectionsPerAddress = 3 })
	held := []net.Conn{silentTCP(t, h), silentTCP(t, h), silentTCP(t, h)}
	expectTCPRefusal(t, silentTCP(t, h), "too many from this address")
	if code, body := rawGet(t, h, "/healthz"); code != http.StatusTooManyRequests || !strings.Contains(body, `"conn_limit_address"`) {
		t.Fatalf("HTTP over the per-address limit: %d %s, want 429 conn_limit_address", code, body)
	}
	_ = held[0].Close()
	pollFor(t, 5*time.Second, func() error {
		if code, body := rawGet(t, h, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("after a close: %d %s", code, body)
		}
		return nil
	})
	for _, c := range held[1:] {
		_ = c.Close()
	}
	pollFor(t, 5*time.Second, func() error {
		v, err := h.metric(`matchgrain_edge_closes_total{reason="conn_limit_address"}`)
		if err != nil || v < 2 { // a poll that raced the close is refused too
			return fmt.Errorf("conn_limit_address refusals %v (%v), want >= 2", v, err)
		}
		return nil
	})
}

func TestLimitConnectionsTotal(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxConnections = 2 })
	a, b := silentTCP(t, h), silentTCP(t, h)
	expectTCPRefusal(t, silentTCP(t, h), "server full")
	if code, body := rawGet(t, h, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"conn_limit_total"`) {
		t.Fatalf("HTTP over the total limit: %d %s, want 503 conn_limit_total", code, body)
	}
	_, _ = a.Close(), b.Close()
	pollFor(t, 5*time.Second, func() error {
		v, err := h.metric(`matchgrain_edge_closes_total{reason="conn_limit_total"}`)
		if err != nil || v < 2 { // a poll that raced the close is refused too
			return fmt.Errorf("conn_limit_total refusals %v (%v), want >= 2", v, err)
		}
		return nil
	})
}

// TestLimitHandshakes: connections that have not opened a seat are bounded;
// a player whose hello succeeded no longer counts, so players get in even
// while the handshake slots are held by silent connections.
func TestLimitHandshakes(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.MaxHandshakes = 2 })
	silent := silentTCP(t, h)
	player := dialTCP(t, h)
	hello(t, player, h.ticket(h.newMatch(), 0), 0)
	// The ServerHello can arrive just before the edge marks the handshake
	// done: wait until only the silent connection counts (the scrape's own
	// connection leaves the count once its request is done).
	pollFor(t, 5*time.Second, func() error {
		v, err := h.metric("matchgrain_edge_handshakes")
		if err != nil || v != 1 {
			return fmt.Errorf("handshakes in progress %v (%v), want 1", v, err)
		}
		return nil
	})
	// The player's slot is free again: one more silent connection fits,
	// then the limit refuses.
	_ = silentTCP(t, h)
	expectTCPRefusal(t, silentTCP(t, h), "too many handshakes")
	if code, body := rawGet(t, h, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"handshake_limit"`) {
		t.Fatalf("HTTP over the handshake limit: %d %s, want 503 handshake_limit", code, body)
	}
	_ = silent.Close()
	// An HTTP request that completes frees its slot too (keep-alive).
	pollFor(t, 5*time.Second, func() error {
		if code, _ := rawGet(t, h, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("healthz %d", code)
		}
		return nil
	})
	pollFor(t, 5*time.Second, func() error { // the scrape itself may race a slot's release
		v, err := h.metric(`matchgrain_edge_closes_total{reason="handshake_limit"}`)
		if err != nil || v < 2 {
			return fmt.Errorf("handshake_limit refusals %v (%v), want >= 2", v, err)
		}
		return nil
	})
}

// TestHTTPDeadlinesAndSizes: a request header sent too slowly is cut off,
// an oversized header gets 431, an oversized API body 413.
func TestHTTPDeadlinesAndSizes(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) {
		c.HTTPHeaderTimeout = 300 * time.Millisecond
		c.MaxHeaderBytes = 4 << 10
		c.MaxBodyBytes = 1 << 10
	})
	addr := strings.TrimPrefix(h.httpURL, "http://")

	t.Run("slow header", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		go func() { // one header line every 100 ms, never the end
			for i := 0; i < 50; i++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := fmt.Fprintf(c, "X-Slow-%d: y\r\n", i); err != nil {
					return
				}
			}
		}()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		cutAt := time.Since(start)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("a header trickled for 5 s was never cut off (HTTPHeaderTimeout 300 ms)")
		}
		t.Logf("slow header cut off after %v", cutAt.Round(time.Millisecond))
	})

	t.Run("large header", func(t *testing.T) {
		req, _ := http.NewRequest("GET", h.httpURL+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("8 KiB header: %d, want 431", resp.StatusCode)
		}
	})

	t.Run("large body", func(t *testing.T) {
		body := `{"players":[{"name":"` + strings.Repeat("a", 2<<10) + `","deck":"S1"},{"name":"b","deck":"S2"}]}`
		req, _ := http.NewRequest("POST", h.httpURL+"/api/matches", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+edgetest.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("2 KiB body with a 1 KiB limit: %d, want 413", resp.StatusCode)
		}
	})
}

func TestAdminTokenRotation(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) {
		c.AdminToken = "new-token"
		c.AdminTokensPrevious = []string{"old-token", "older-token"}
	})
	for tok, want := range map[string]int{
		"new-token": http.StatusOK, "old-token": http.StatusOK, "older-token": http.StatusOK,
		"other": http.StatusUnauthorized, "new-token-": http.StatusUnauthorized, "": http.StatusUnauthorized,
	} {
		req, _ := http.NewRequest("GET", h.httpURL+"/api/decks", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}

func TestSeparateMetrics(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.SeparateMetrics = true })
	if code, _ := rawGet(t, h, "/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the players' listener: %d, want 404", code)
	}
	rec := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "matchgrain_edge_handshakes") {
		t.Fatalf("MetricsHandler: %d, body without the edge's metrics", rec.Code)
	}
}
