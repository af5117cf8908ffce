package edge_test

import (
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// resumeTicketTTL is short so that a renewal comes within the test: the
// edge renews a session's resume ticket at half its life.
const resumeTicketTTL = 2 * time.Second

// helloResume sends a ClientHello that asks for resume tickets and expects
// ServerHello.
func helloResume(t testing.TB, c testConn, ticket string) *protocol.ServerHello {
	t.Helper()
	send(t, c, &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: ticket, ClientBuild: "edge-test", ResumeTickets: true})
	return expectFrame[*protocol.ServerHello](t, c, 5*time.Second)
}

// testResumeTickets: a session that asks for resume tickets gets one after
// its hello and a fresh one at half its life; each opens the same seat once,
// taking it over like any newer ticket; a session that does not ask, or an
// edge configured without them, sends none.
func testResumeTickets(t *testing.T, newMatches newMatchesFunc) {
	h := newHarness(t, newMatches, func(c *edge.Config) { c.TicketTTL = resumeTicketTTL })
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id := h.newMatch()
			c1 := dial(t, h, tr)
			helloResume(t, c1, h.ticket(id, 1))
			first := expectFrame[*protocol.ServerResumeTicket](t, c1, 5*time.Second)
			issued := time.Now()
			if left := time.Until(time.UnixMilli(first.ExpiresAtMs)); left <= 0 || left > resumeTicketTTL {
				t.Fatalf("first resume ticket expires in %v, want within the TTL %v", left, resumeTicketTTL)
			}
			// The renewal comes at half the life, while the client only
			// pings: it rides on the heartbeat timer, not on traffic.
			send(t, c1, &protocol.ClientPing{Nonce: 1})
			second := expectFrame[*protocol.ServerResumeTicket](t, c1, 3*resumeTicketTTL)
			if second.Ticket == first.Ticket || second.ExpiresAtMs <= first.ExpiresAtMs {
				t.Fatalf("renewal: same ticket %v, expiry %d after %d", second.Ticket == first.Ticket, second.ExpiresAtMs, first.ExpiresAtMs)
			}
			if waited := time.Since(issued); waited > resumeTicketTTL {
				t.Fatalf("renewal after %v, later than the ticket's whole life %v", waited, resumeTicketTTL)
			}

			// The first resume ticket opens the same seat: a new connection
			// takes it over from the old one.
			c2 := dial(t, h, tr)
			sh := hello(t, c2, first.Ticket, 0)
			if sh.MatchID != id || sh.PlayerIndex != 1 {
				t.Fatalf("resume ticket opened match %q seat %d, want %q seat 1", sh.MatchID, sh.PlayerIndex, id)
			}
			want{wsCode: protocol.CloseReplaced, wsErr: -1, tcpErr: protocol.ErrorSessionReplaced}.
				check(t, c1, readUntilClosed(t, c1, 5*time.Second))
			// Single use, like any ticket.
			c3 := dial(t, h, tr)
			send(t, c3, &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: first.Ticket})
			want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorInvalidTicket, tcpErr: protocol.ErrorInvalidTicket}.
				check(t, c3, readUntilClosed(t, c3, 5*time.Second))
			send(t, c2, &protocol.ClientLeave{Reason: "done"})
			wantNormal.check(t, c2, readUntilClosed(t, c2, 5*time.Second))
		})
	}
	n, err := h.metric("matchgrain_edge_resume_tickets_issued_total")
	if err != nil || n < 4 {
		t.Fatalf("resume tickets issued = %v (%v), want at least 4 (two per transport)", n, err)
	}

	t.Run("not asked", func(t *testing.T) {
		expectNoResumeTicket(t, h, false)
	})
	t.Run("turned off", func(t *testing.T) {
		off := newHarness(t, newMatches, func(c *edge.Config) { c.TicketTTL = resumeTicketTTL; c.NoResumeTickets = true })
		expectNoResumeTicket(t, off, true)
	})
}

// expectNoResumeTicket connects a session (asking for resume tickets or
// not) and reads it, pinging, for longer than a renewal would take: no
// ServerResumeTicket may come.
func expectNoResumeTicket(t *testing.T, h *harness, ask bool) {
	t.Helper()
	id := h.newMatch()
	c := dial(t, h, "ws")
	send(t, c, &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: h.ticket(id, 0), ResumeTickets: ask})
	expectFrame[*protocol.ServerHello](t, c, 5*time.Second)
	deadline := time.Now().Add(resumeTicketTTL/2 + 500*time.Millisecond)
	send(t, c, &protocol.ClientPing{Nonce: 1})
	pongs := 0
	for time.Now().Before(deadline) {
		f, err := c.read(time.Until(deadline))
		if err != nil {
			break // the deadline passed
		}
		switch f := f.(type) {
		case *protocol.ServerResumeTicket:
			t.Fatalf("got a resume ticket (asked: %v)", ask)
		case *protocol.ServerPong:
			pongs++
		case *protocol.ServerError:
			t.Fatalf("error %+v", *f)
		}
	}
	if pongs != 1 {
		t.Fatalf("%d pongs, want 1: the connection did not stay up while we watched", pongs)
	}
	c.close()
}
