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
	// A silent session pings once per interval: the server counts 10 pings
	// (polled), and they took at least 9 intervals after the first one was
	// counted. Timers delayed on a loaded machine send fewer, never more.
	pollUntil(t, func() bool { return framesIn(t, reg) >= 1 })
	first, from := framesIn(t, reg), time.Now()
	pollUntil(t, func() bool { return framesIn(t, reg)-first >= 9 })
	if took := time.Since(from); took < 8*ping {
		t.Fatalf("a silent session sent 9 pings in %v, faster than one per %v", took, ping)
	}
	pollUntil(t, func() bool { return silent.ClockOffset() != 0 })
	silent.Close()

	// A session that sends twice per interval never pings: every frame the
	// server counts is a resync. The pause is the sender's pace.
	busy := start(1, 4*ping)
	before := framesIn(t, reg)
	sent := 0
	pace := time.NewTicker(ping / 2)
	defer pace.Stop()
	for range 16 {
		if err := busy.Resync(false); err != nil {
			t.Fatalf("resync: %v", err)
		}
		sent++
		<-pace.C
	}
	// Every resync counted (polled), then no more than them.
	pollUntil(t, func() bool { return framesIn(t, reg)-before >= float64(sent) })
	if got := framesIn(t, reg) - before; got != float64(sent) {
		t.Fatalf("a session that sent every %v with a ping interval of %v sent %v frames for its %d resyncs",
			ping/2, 4*ping, got, sent)
	}
}
