package edge_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// BenchmarkRoundTrip measures one ClientPing → ServerPong through a real
// loopback socket: decode, the reader, the outbox, the writer and encode.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			h := newHarness(b, newFakeMatches, benchConfig)
			c := dialHello(b, h, tr)
			ping, err := protocol.EncodeClientFrame(&protocol.ClientPing{Nonce: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.sendRaw(ping)
				if _, err := c.read(5 * time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIntent measures one ClientIntent → ServerIntentResult through the
// edge and the fake matches (its "engine" rejects the intent).
func BenchmarkIntent(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			h := newHarness(b, newFakeMatches, benchConfig)
			c := dialHello(b, h, tr)
			in, err := protocol.EncodeClientFrame(&protocol.ClientIntent{IntentID: "bench", Intent: protocol.Call{PrintingID: "E-01", Slot: 3}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.sendRaw(in)
				if _, err := c.read(5 * time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchConfig(c *edge.Config) {
	c.IntentsPerSecond = 1e9
	c.IntentBurst = 1 << 30
	c.Logger = slog.New(slog.DiscardHandler)
}

// dialHello connects and completes the handshake, leaving the snapshot read.
func dialHello(b *testing.B, h *harness, tr string) testConn {
	b.Helper()
	c := dial(b, h, tr)
	hello(b, c, h.ticket(h.newMatch(), 0), 0)
	expectFrame[*protocol.ServerSnapshot](b, c, 5*time.Second)
	return c
}
