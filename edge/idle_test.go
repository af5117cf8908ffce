package edge_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// countSessionGoroutines counts goroutines running the session's reader
// and its writer.
func countSessionGoroutines() (readers, writers int) {
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for g := range strings.SplitSeq(stacks, "\n\n") {
		if strings.Contains(g, "edge.(*session).readLoop") {
			readers++
		}
		if strings.Contains(g, "edge.(*session).writeLoop") {
			writers++
		}
	}
	return readers, writers
}

// TestIdleSessionHasNoWriter checks that an idle connection costs one
// goroutine: the writer runs only while frames are queued, and comes back
// for a reply and for the server's idle ping.
func TestIdleSessionHasNoWriter(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, newFakeMatches, nil)
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
			pollFor(t, 5*time.Second, func() error {
				if r, w := countSessionGoroutines(); r != 1 || w != 0 {
					return fmt.Errorf("%d readers and %d writers, want 1 and 0", r, w)
				}
				return nil
			})
			send(t, c, &protocol.ClientPing{Nonce: 7})
			if p := expectFrame[*protocol.ServerPong](t, c, 5*time.Second); p.Nonce != 7 {
				t.Fatalf("pong nonce %d, want 7", p.Nonce)
			}
			// Silent past HeartbeatIdle (2 s in the harness): the timer
			// queues a ping, which starts a writer again.
			if p := expectFrame[*protocol.ServerPing](t, c, 5*time.Second); p.Nonce != 1 {
				t.Fatalf("ping nonce %d, want 1", p.Nonce)
			}
			send(t, c, &protocol.ClientPong{Nonce: 1})
			pollFor(t, 5*time.Second, func() error {
				if r, w := countSessionGoroutines(); r != 1 || w != 0 {
					return fmt.Errorf("%d readers and %d writers, want 1 and 0", r, w)
				}
				return nil
			})
		})
	}
}
