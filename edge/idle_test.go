package edge_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// countSessionGoroutines counts goroutines running the session's reader
// (the first one, or a parked successor) and its writer.
func countSessionGoroutines() (readers, writers int) {
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for g := range strings.SplitSeq(stacks, "\n\n") {
		if strings.Contains(g, "edge.(*session).readLoop") || strings.Contains(g, "edge.(*session).park") {
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

// parkedReaders counts sessions whose reader is parked: a goroutine in
// session.park waiting for bytes, not reading frames.
func parkedReaders() int {
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for g := range strings.SplitSeq(stacks, "\n\n") {
		if strings.Contains(g, "edge.(*session).park(") && !strings.Contains(g, "edge.(*session).readFrames(") {
			n++
		}
	}
	return n
}

// readingGoroutine is the header line ("goroutine N [...]") of the one
// goroutine in session.readFrames.
func readingGoroutine() (string, error) {
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	var found []string
	for g := range strings.SplitSeq(stacks, "\n\n") {
		if strings.Contains(g, "edge.(*session).readFrames(") {
			id, _, _ := strings.Cut(g, " [")
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d goroutines in readFrames, want 1", len(found))
	}
	return found[0], nil
}

// rawClientFrame is payload as the bytes a client puts on the wire: a
// masked binary WebSocket frame, or a TCP frame with its length prefix.
func rawClientFrame(tr string, payload []byte) []byte {
	if tr == "tcp" {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
	}
	if len(payload) > 125 {
		panic("rawClientFrame: payload too long for a one-byte length")
	}
	key := [4]byte{0x5a, 0x13, 0xc7, 0x2e}
	b := []byte{0x82, 0x80 | byte(len(payload)), key[0], key[1], key[2], key[3]}
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// TestParkedReader checks the reader of a quiet connection: after the
// hello it waits on a parked goroutine, which reads the next frame and
// answers it; after a keep-alive it parks again, but not after other
// frames (an active connection's reader stays where it is); a parked reader
// reads a frame whose bytes straddle a pause; and it still closes the
// connection when the heartbeat runs out. With parking off nothing parks.
func TestParkedReader(t *testing.T) {
	waitParked := func(t *testing.T, want int) {
		t.Helper()
		pollFor(t, 5*time.Second, func() error {
			if n := parkedReaders(); n != want {
				return fmt.Errorf("%d parked readers, want %d", n, want)
			}
			return nil
		})
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, newFakeMatches, nil)
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
			waitParked(t, 1)

			// A resync is not a keep-alive: the goroutine that reads it
			// also reads the next frame.
			var readers [2]string
			for i := range readers {
				send(t, c, &protocol.ClientResync{FromSeq: 0, FullSnapshot: true})
				expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
				pollFor(t, 5*time.Second, func() error {
					var err error
					readers[i], err = readingGoroutine()
					return err
				})
			}
			if readers[0] != readers[1] {
				t.Fatalf("the reader moved from %s to %s between two resyncs", readers[0], readers[1])
			}

			send(t, c, &protocol.ClientPing{Nonce: 7})
			if p := expectFrame[*protocol.ServerPong](t, c, 5*time.Second); p.Nonce != 7 {
				t.Fatalf("pong nonce %d, want 7", p.Nonce)
			}
			waitParked(t, 1)

			b, err := protocol.EncodeClientFrame(&protocol.ClientPing{Nonce: 8})
			if err != nil {
				t.Fatal(err)
			}
			raw := rawClientFrame(tr, b)
			conn := c.raw()
			if _, err := conn.Write(raw[:3]); err != nil {
				t.Fatal(err)
			}
			// The parked reader wakes for the first bytes and waits for the rest in readFrame.
			waitParked(t, 0)
			time.Sleep(200 * time.Millisecond)
			if _, err := conn.Write(raw[3:]); err != nil {
				t.Fatal(err)
			}
			if p := expectFrame[*protocol.ServerPong](t, c, 5*time.Second); p.Nonce != 8 {
				t.Fatalf("pong nonce %d, want 8", p.Nonce)
			}
			waitParked(t, 1)
		})
	}
	t.Run("heartbeat", func(t *testing.T) {
		const idle, timeout = 400 * time.Millisecond, 1200 * time.Millisecond
		h := newHarness(t, newFakeMatches, func(c *edge.Config) {
			c.HeartbeatIdle, c.HeartbeatTimeout = idle, timeout
		})
		for _, tr := range transports {
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			start := time.Now()
			waitParked(t, 1)
			want{wsCode: protocol.CloseHeartbeatTimeout, wsErr: -1, tcpErr: protocol.ErrorHeartbeatTimeout}.check(t, c, readUntilClosed(t, c, 5*time.Second))
			if took := time.Since(start); took < timeout-50*time.Millisecond {
				t.Errorf("%s: closed after %v, before the heartbeat timeout %v", tr, took, timeout)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.NoReaderParking = true })
		for _, tr := range transports {
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			send(t, c, &protocol.ClientPing{Nonce: 1})
			expectFrame[*protocol.ServerPong](t, c, 5*time.Second)
		}
		if r, _ := countSessionGoroutines(); r != 2 {
			t.Fatalf("%d readers, want 2", r)
		}
		if n := parkedReaders(); n != 0 {
			t.Fatalf("%d parked readers with parking off", n)
		}
	})
}
