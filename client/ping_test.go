package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// framesIn reads the edge's count of frames received over WebSocket.
func framesIn(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "matchgrain_edge_frames_in_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "transport" && l.GetValue() == "ws" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no matchgrain_edge_frames_in_total{transport=\"ws\"}")
	return 0
}

// TestSessionPingsOnlyWhenSilent: a silent session pings about once per
// PingInterval, and the pongs are taken (the clock offset is estimated); a
// session that keeps sending does not ping at all.
func TestSessionPingsOnlyWhenSilent(t *testing.T) {
	t.Cleanup(func() { checkNoGoroutines(t, "client.(*pinger)") })
	reg := edge.NewRegistry()
	srv := edgetest.Start(t, edgetest.NewMatches(), func(c *edge.Config) {
		c.Logger = testLogger(t)
		c.Registry = reg
	})
	admin := client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil)
	id, err := admin.CreateMatch(context.Background(), [2]client.PlayerSpec{{Name: "Ann", Deck: "S1"}, {Name: "Bob", Deck: "S2"}}, nil)
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	start := func(seat int, ping time.Duration) *client.Session {
		s, err := client.Start(context.Background(), client.Config{
			Addr: srv.WSURL, Ticket: admin.TicketFunc(id, seat), Backoff: quickBackoff,
			Logger: testLogger(t), PingInterval: ping,
		})
		if err != nil {
			t.Fatalf("start seat %d: %v", seat, err)
		}
		t.Cleanup(s.Close)
		return s
	}

	const ping = 50 * time.Millisecond
	silent := start(0, ping)
	before := framesIn(t, reg)
	time.Sleep(20 * ping)
	pings := framesIn(t, reg) - before
	// 20 intervals: a ticker-free pinger sends one per interval; timers
	// delayed on a loaded machine send fewer, never more.
	if pings < 3 || pings > 21 {
		t.Fatalf("a session silent for 20 ping intervals sent %v frames, want about 20", pings)
	}
	pollUntil(t, func() bool { return silent.ClockOffset() != 0 })
	silent.Close()

	busy := start(1, 4*ping)
	before = framesIn(t, reg)
	sent := 0
	for range 16 {
		if err := busy.Resync(false); err != nil {
			t.Fatalf("resync: %v", err)
		}
		sent++
		time.Sleep(ping / 2)
	}
	if got := framesIn(t, reg) - before; got != float64(sent) {
		t.Fatalf("a session that sent every %v with a ping interval of %v sent %v frames for its %d resyncs",
			ping/2, 4*ping, got, sent)
	}
}
