package actors

import (
	"context"
	"sync"
	"testing"
	"time"
)

// pingLog records the SeatPings a Gateway sends, passing every request on.
type pingLog struct {
	Requester
	mu    sync.Mutex
	pings []pingRecord
}

type pingRecord struct {
	at    time.Time
	seats []int
}

func (p *pingLog) Request(ctx context.Context, identity, kind string, msg any) (any, error) {
	if m, ok := msg.(*SeatPing); ok {
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
	tn := startTestNode(t, timing)
	log := &pingLog{Requester: tn.node}
	gw, err := NewGateway(GatewayConfig{
		System: tn.node.System(), Cluster: log, Store: tn.store, Rules: tn.rules, Timing: timing,
		RequestTimeout: time.Second, ReattachTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	tn.gw = gw
	id := tn.create(t, 0)
	_, k0 := tn.open(t, id, 0, 0)
	_, k1 := tn.open(t, id, 1, 0)

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

	for seat, k := range []*frameSink{k0, k1} {
		select {
		case r := <-k.detached:
			t.Errorf("seat %d detached (%d) although its keep-alives ran", seat, r)
		default:
		}
	}
}
