package edge_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// TestDrain: a drain tells every session to reconnect elsewhere (1001 on
// WebSocket, a fatal ServerError on TCP), then stops the HTTP server, and
// returns well within its bound when the clients go.
func TestDrain(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	conns := map[string]testConn{}
	for _, tr := range transports {
		conns[tr] = dial(t, h, tr)
		hello(t, conns[tr], h.ticket(h.newMatch(), 0), 0)
	}
	const bound = 20 * time.Second
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- h.srv.Drain(context.Background(), h.hs, bound) }()
	for _, tr := range transports {
		want{wsCode: 1001, wsErr: -1, tcpErr: protocol.ErrorInternal}.check(t, conns[tr], readUntilClosed(t, conns[tr], 5*time.Second))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("drain still running after its bound (%v)", bound)
	}
	if took := time.Since(start); took >= bound/2 {
		t.Errorf("drain took %v with every client gone, want well under half the bound", took)
	}
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get(h.httpURL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("the HTTP server still answers after the drain: %d", resp.StatusCode)
	}
}
