package grains

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// pingCounter answers every request at once and counts the SeatPings per
// match, with the slot each was sent in.
type pingCounter struct {
	mu      sync.Mutex
	g       *Gateway
	slot    int // the slot being pinged
	byMatch map[string]int
	strays  []string // matches pinged outside their slot
}

func (p *pingCounter) Request(_ context.Context, identity, _ string, msg any) (any, error) {
	if _, ok := msg.(*actors.SeatPing); ok {
		p.mu.Lock()
		p.byMatch[identity]++
		if p.g.slotOf(identity) != p.slot {
			p.strays = append(p.strays, identity)
		}
		p.mu.Unlock()
	}
	return &actors.Reply{Code: actors.ReplyOK}, nil
}

func (p *pingCounter) pings() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.byMatch {
		n += c
	}
	return n
}

// TestKeepAlivesSpreadOverSlots: a tick pings only the matches of its slot
// of the interval, every match once per interval (both its seats in one
// request), and no slot gets much more than its share; at one tick for
// all, 1,000 matches made a burst of 1,000 requests every interval.
func TestKeepAlivesSpreadOverSlots(t *testing.T) {
	pc := &pingCounter{byMatch: map[string]int{}}
	g := newGateway(GatewayConfig{
		Cluster: pc, RequestTimeout: time.Second, ReattachTimeout: time.Minute, Timing: actors.DefaultTiming(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	pc.g = g
	slots := len(g.live)
	if slots != keepAliveMaxSlots {
		t.Fatalf("%d slots at the default %v interval, want %d", slots, actors.DefaultTiming().SeatKeepAlive, keepAliveMaxSlots)
	}
	g.loopRunning = true // the test turns the slots itself
	const matches = 1000
	for i := range matches {
		for seat := range 2 {
			g.addLive(&Seat{gw: g, matchID: fmt.Sprintf("match-%04d", i), seat: seat,
				pid: actor.NewPID("edge", fmt.Sprintf("seat-%d-%d", i, seat)), initial: make(chan struct{})})
		}
	}
	for slot := range slots {
		g.mu.Lock()
		seats := len(g.live[slot])
		g.mu.Unlock()
		if seats%2 != 0 || seats/2 > 2*matches/slots {
			t.Errorf("slot %d holds %d seats; want both seats of each of its matches, at most twice the share of %d matches", slot, seats, matches/slots)
		}
		pc.mu.Lock()
		pc.slot = slot
		pc.mu.Unlock()
		want := pc.pings() + seats/2
		if !g.pingSlot(slot, map[string][]*Seat{}) {
			t.Fatal("pingSlot: no seats left")
		}
		waitFor(t, "the slot's pings", func() bool { return pc.pings() == want })
		waitFor(t, "the slot's pings settled", func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			for s := range g.live[slot] {
				if s.pinging.Load() {
					return false
				}
			}
			return true
		})
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.strays) > 0 {
		t.Errorf("matches pinged outside their slot: %v", pc.strays[:min(5, len(pc.strays))])
	}
	if len(pc.byMatch) != matches {
		t.Errorf("%d matches pinged in one interval, want %d", len(pc.byMatch), matches)
	}
	for id, n := range pc.byMatch {
		if n != 1 {
			t.Errorf("match %s pinged %d times in one interval, want once", id, n)
		}
	}
}

// gatedPings holds every actors.SeatPing until the test lets one through, and
// records the context each was sent with.
type gatedPings struct {
	gate chan struct{}
	mu   sync.Mutex
	ctxs []context.Context
}

func (p *gatedPings) Request(ctx context.Context, _, _ string, msg any) (any, error) {
	if _, ok := msg.(*actors.SeatPing); ok {
		p.mu.Lock()
		p.ctxs = append(p.ctxs, ctx)
		p.mu.Unlock()
		<-p.gate
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return &actors.Reply{Code: actors.ReplyOK}, nil
}

func (p *gatedPings) sent() []context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]context.Context(nil), p.ctxs...)
}

// TestKeepAlivesOfASlotShareOneDeadline: the pings of one slot share one
// context, bounded by two keep-alive intervals, which outlives every one of
// them: a ping that finishes early must not end the others'. (It ends at
// its deadline: internal/deadline's tests.)
func TestKeepAlivesOfASlotShareOneDeadline(t *testing.T) {
	pg := &gatedPings{gate: make(chan struct{})}
	g := newGateway(GatewayConfig{
		Cluster: pg, RequestTimeout: time.Second, ReattachTimeout: time.Minute, Timing: actors.DefaultTiming(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	g.loopRunning = true // the test turns the slot itself
	const matches = 5
	var seats []*Seat
	for i := 0; len(seats) < matches; i++ {
		id := fmt.Sprintf("match-%04d", i)
		if g.slotOf(id) != 0 {
			continue
		}
		s := &Seat{gw: g, matchID: id, pid: actor.NewPID("edge", "seat-"+id), initial: make(chan struct{})}
		g.addLive(s)
		seats = append(seats, s)
	}
	start := time.Now()
	if !g.pingSlot(0, map[string][]*Seat{}) {
		t.Fatal("pingSlot: no seats left")
	}
	waitFor(t, "every match's ping sent", func() bool { return len(pg.sent()) == matches })
	ctxs := pg.sent()
	dl, ok := ctxs[0].Deadline()
	if want := start.Add(2 * actors.DefaultTiming().SeatKeepAlive); !ok || dl.Before(want.Add(-time.Second)) || dl.After(want.Add(time.Second)) {
		t.Fatalf("deadline %v (set %v), want about %v", dl, ok, want)
	}
	for i, c := range ctxs {
		if c != ctxs[0] {
			t.Fatalf("ping %d has a context of its own", i)
		}
	}
	settled := func() int {
		n := 0
		for _, s := range seats {
			if !s.pinging.Load() {
				n++
			}
		}
		return n
	}
	for i := range matches {
		pg.gate <- struct{}{}
		waitFor(t, "one more ping settled", func() bool { return settled() == i+1 })
		if ctxs[0].Err() != nil {
			t.Fatalf("the slot's context ended after %d of %d pings: %v", i+1, matches, ctxs[0].Err())
		}
	}
	for _, s := range seats {
		if !s.failingSince.IsZero() {
			t.Errorf("seat of %s counts its keep-alive as failed", s.matchID)
		}
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	clustertest.Eventually(t, 10*time.Second, 2*time.Millisecond, func() error {
		if !cond() {
			return errors.New("waiting for " + what)
		}
		return nil
	})
}
