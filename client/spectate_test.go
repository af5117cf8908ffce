package client_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
	"github.com/matchgrain/matchgrain/protocol"
)

// countedTickets is a spectator ticket source that counts the session's
// connection attempts (one fresh ticket each) and, while a gate is set,
// holds them until it opens.
type countedTickets struct {
	get  func(context.Context) (string, error)
	n    atomic.Int64
	gate atomic.Pointer[chan struct{}]
}

func (c *countedTickets) ticket(ctx context.Context) (string, error) {
	c.n.Add(1)
	if g := c.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return c.get(ctx)
}

// TestSpectatorsFull: real match grains that allow one spectator. A second
// spectator's Start ends at its first attempt with ErrSpectatorsFull and
// close 4429 on both transports (TCP derives it from the fatal
// SpectatorsFull), instead of retrying. A spectator that was watching and
// is refused when it reconnects keeps trying for its attempts (its own lost
// connection may still hold the place), then ends with ErrGaveUp wrapping
// ErrSpectatorsFull.
func TestSpectatorsFull(t *testing.T) {
	t.Cleanup(func() { checkNoGoroutines(t, "client.(*Session)") })
	m, _ := grainstest.NewMatches(t, grainstest.Options{MaxSpectators: 1, Logger: testLogger(t)})
	srv := edgetest.Start(t, m, func(c *edge.Config) {
		c.Logger = testLogger(t)
		c.MaxSpectators = 1
	})
	admin := client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil)
	ctx := context.Background()
	id, err := admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "Ann", Deck: "S1"}, {Name: "Bob", Deck: "S2"}}, nil)
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	p := newProxy(t, strings.TrimPrefix(strings.TrimSuffix(srv.WSURL, "/game"), "ws://"))
	first := &countedTickets{get: admin.TicketFunc(id, protocol.SeatSpectator)}
	// Without resume tickets: the test holds the first spectator's
	// reconnects at its ticket source.
	watching, err := client.Start(ctx, client.Config{Addr: "ws://" + p.addr() + "/game", Ticket: first.ticket,
		NoResumeTickets: true, Backoff: quickBackoff, Logger: testLogger(t).With("spectator", "first")})
	if err != nil {
		t.Fatalf("the first spectator: %v", err)
	}
	defer watching.Close()
	waitFrame[*protocol.ServerSnapshot](t, watching)

	// startSecond starts another spectator that would retry for ever.
	startSecond := func(addr string) (*client.Session, *countedTickets, error) {
		tickets := &countedTickets{get: admin.TicketFunc(id, protocol.SeatSpectator)}
		// Start is bounded, so that a session that retries a refusal
		// fails the test instead of hanging it; a session let in runs on.
		sctx, cancel := context.WithCancel(ctx)
		bound := time.AfterFunc(5*time.Second, cancel)
		s, err := client.Start(sctx, client.Config{Addr: addr, Ticket: tickets.ticket, Backoff: quickBackoff,
			MaxAttempts: -1, Logger: testLogger(t).With("spectator", "second")})
		bound.Stop()
		if err != nil {
			cancel()
		} else {
			t.Cleanup(cancel)
		}
		return s, tickets, err
	}
	for _, addr := range []string{srv.WSURL, "tcp://" + srv.TCPAddr} {
		s, tickets, err := startSecond(addr)
		if err == nil {
			s.Close()
			t.Fatalf("%s: a second spectator with a cap of 1 was let in", addr)
		}
		var ce *client.CloseError
		if !errors.Is(err, client.ErrSpectatorsFull) || !errors.As(err, &ce) || ce.Code != protocol.CloseSpectatorsFull {
			t.Fatalf("%s: a second spectator with a cap of 1: %v; want ErrSpectatorsFull with close 4429", addr, err)
		}
		if n := tickets.n.Load(); n != 1 {
			t.Errorf("%s: the refused spectator made %d attempts, want 1", addr, n)
		}
	}

	// The first spectator loses its connection, and its reconnect waits
	// for its ticket while a second one takes the place as soon as the
	// match has let the first go.
	gate := make(chan struct{})
	first.gate.Store(&gate)
	p.cut()
	var second *client.Session
	pollUntil(t, func() bool {
		s, _, err := startSecond(srv.WSURL)
		if err != nil && !errors.Is(err, client.ErrSpectatorsFull) {
			t.Fatalf("the second spectator: %v", err)
		}
		second = s
		return err == nil
	})
	defer second.Close()
	close(gate)
	select {
	case <-watching.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first spectator, refused on every reconnect, still runs")
	}
	if err := watching.Err(); !errors.Is(err, client.ErrSpectatorsFull) || !errors.Is(err, client.ErrGaveUp) {
		t.Fatalf("the first spectator ended with %v, want ErrGaveUp wrapping ErrSpectatorsFull", err)
	}
	// Refused attempts count against MaxAttempts (len(quickBackoff)).
	if n := first.n.Load() - 1; n != int64(len(quickBackoff)) {
		t.Errorf("the first spectator made %d attempts to reconnect, want %d", n, len(quickBackoff))
	}
}
