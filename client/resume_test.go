package client_test

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestSessionReconnectsWithResumeTicket: after a lost connection the session
// reconnects with the resume ticket its connection was given, without
// calling Config.Ticket, again and again; when the server refuses the
// resume ticket it asks for a fresh one at once, not after the next backoff
// step.
func TestSessionReconnectsWithResumeTicket(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.srv.TCPAddr)
	var got reconnects
	var calls atomic.Int64
	// A long second step: a fresh ticket that waited for it would take
	// the test past its deadline below.
	const secondStep = 30 * time.Second
	s := e.start(t, "tcp://"+p.addr(), 0, func(c *client.Config) {
		c.Backoff = []time.Duration{0, secondStep}
		ticket := c.Ticket
		c.Ticket = func(ctx context.Context) (string, error) {
			calls.Add(1)
			return ticket(ctx)
		}
		c.OnReconnect = got.record
	})
	waitFrame[*protocol.ServerSnapshot](t, s)
	reconnect := func(n int) client.Reconnect {
		t.Helper()
		// The edge queues a connection's resume ticket right after its
		// hello's state, so an intent's result comes after it.
		if _, err := s.SendIntent(protocol.EndTurn{}); err != nil {
			t.Fatalf("send intent: %v", err)
		}
		waitFrame[*protocol.ServerIntentResult](t, s)
		p.cut()
		return got.nth(t, n)
	}

	for i := 1; i <= 2; i++ {
		r := reconnect(i)
		if !r.ResumeTicket || r.Attempts != 1 {
			t.Fatalf("reconnect %d: resume ticket %v, %d attempts; want the resume ticket at the first attempt", i, r.ResumeTicket, r.Attempts)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("reconnect %d: Config.Ticket called %d times, want only for the first connection", i, n)
		}
	}

	// A new ticket key voids the resume ticket the connection holds; the
	// ticket source signs with the new key.
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Edge.Tickets().SetKeys(key); err != nil {
		t.Fatal(err)
	}
	r := reconnect(3)
	if r.ResumeTicket || r.Attempts != 2 || calls.Load() != 2 {
		t.Fatalf("after a refused resume ticket: resume ticket %v, %d attempts, %d ticket calls; want a fresh ticket at the second attempt",
			r.ResumeTicket, r.Attempts, calls.Load())
	}
	if took := r.Done.Sub(r.Lost); took >= secondStep {
		t.Fatalf("the fresh ticket's attempt came %v after the loss: it waited for the backoff", took)
	}
	if n := s.Reconnects(); n != 3 {
		t.Fatalf("Reconnects() = %d, want 3", n)
	}
}

// TestSessionWithoutResumeTickets: with NoResumeTickets every reconnect
// calls Config.Ticket.
func TestSessionWithoutResumeTickets(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.srv.TCPAddr)
	var calls atomic.Int64
	var reconnected atomic.Int64
	s := e.start(t, "tcp://"+p.addr(), 0, func(c *client.Config) {
		c.NoResumeTickets = true
		ticket := c.Ticket
		c.Ticket = func(ctx context.Context) (string, error) {
			calls.Add(1)
			return ticket(ctx)
		}
		c.OnReconnect = func(r client.Reconnect) {
			if r.ResumeTicket {
				t.Errorf("a reconnect used a resume ticket it did not ask for")
			}
			reconnected.Add(1)
		}
	})
	waitFrame[*protocol.ServerSnapshot](t, s)
	if _, err := s.SendIntent(protocol.EndTurn{}); err != nil {
		t.Fatalf("send intent: %v", err)
	}
	waitFrame[*protocol.ServerIntentResult](t, s)
	p.cut()
	pollUntil(t, func() bool { return reconnected.Load() == 1 })
	if n := calls.Load(); n != 2 {
		t.Fatalf("Config.Ticket called %d times, want 2 (the first connection and the reconnect)", n)
	}
}
