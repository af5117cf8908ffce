package grains_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
)

// pingLog records the SeatPings a Gateway sends, passing every request on.
type pingLog struct {
	grains.Requester
	mu    sync.Mutex
	pings []pingRecord
}

type pingRecord struct {
	at    time.Time
	seats []int
}

func (p *pingLog) Request(ctx context.Context, identity, kind string, msg any) (any, error) {
	if m, ok := msg.(*actors.SeatPing); ok {
		seats := []int{m.Seat}
		for _, o := range m.More {
			seats = append(seats, o.Seat)
		}
		p.mu.Lock()
		p.pings = append(p.pings, pingRecord{time.Now(), seats})
		p.mu.Unlock()
	}
	return p.Requester.Request(ctx, identity, kind, msg)
}

func (p *pingLog) since(t time.Time) []pingRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []pingRecord
	for _, r := range p.pings {
		if r.at.After(t) {
			out = append(out, r)
		}
	}
	return out
}

// TestKeepAliveOnePingPerMatch: a match whose two seats are on one edge
// costs one keep-alive request per interval, covering both seats, and the
// grain keeps both seats attached throughout.
func TestKeepAliveOnePingPerMatch(t *testing.T) {
	timing := fastTiming() // SeatKeepAlive 100 ms; the grain drops a seat after 300 ms
	_, node := grainstest.NewMatches(t, grainstest.Options{Timing: timing})
	log := &pingLog{Requester: node.Member}
	gw, err := grains.NewGateway(grains.GatewayConfig{
		System: node.Member.System(), Cluster: log, Store: node.Store, Rules: actors.GameRules{}, Timing: timing,
		RequestTimeout: time.Second, ReattachTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := gw.CreateMatch(ctx, edge.MatchSpec{Names: [2]string{"A", "B"}, Decks: [2]string{"S1", "S2"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var sinks [2]*detachSink
	for seat := range sinks {
		sinks[seat] = &detachSink{detached: make(chan edge.DetachReason, 1)}
		s, err := gw.OpenSeat(ctx, edge.OpenSeatRequest{MatchID: id, Seat: seat, TicketID: fmt.Sprintf("keepalive-%d", seat),
			TicketExpires: time.Now().Add(time.Minute)}, sinks[seat])
		if err != nil {
			t.Fatalf("open seat %d: %v", seat, err)
		}
		t.Cleanup(func() { s.Close(false) })
	}

	// Idle: both seats in one ping per interval (after the first ticks,
	// where the two attach times may straddle a tick).
	idleFrom := time.Now().Add(300 * time.Millisecond)
	time.Sleep(1300 * time.Millisecond)
	idle := log.since(idleFrom)
	if len(idle) < 5 || len(idle) > 13 {
		t.Errorf("%d keep-alives in 1 s of 100 ms intervals, want about 10", len(idle))
	}
	for _, p := range idle {
		if len(p.seats) != 2 {
			t.Errorf("an idle match's keep-alive covered seats %v, want both", p.seats)
		}
	}

	for seat, k := range sinks {
		select {
		case r := <-k.detached:
			t.Errorf("seat %d detached (%d) although its keep-alives ran", seat, r)
		default:
		}
	}
}

// detachSink drops frames and tells of a detach.
type detachSink struct{ detached chan edge.DetachReason }

func (detachSink) Deliver([][]byte) {}

func (k *detachSink) Detach(r edge.DetachReason) {
	select {
	case k.detached <- r:
	default:
	}
}
