// Package clienttest holds the raw-connection helpers that end-to-end tests
// share: a Seat is one plain protocol connection (client.Conn) whose every
// frame and intent id the test chooses, with helpers to read until a frame
// arrives (Await), ask for a view, submit an intent and wait for its result,
// and play legal moves. It is used by the in-process node tests
// (edge/grains) and the multi-process chaos tests (cmd/matchd); new
// end-to-end tests should use it rather than copy a dialer.
//
// Every helper fails the test (t.Fatalf) on an error and every wait has a
// deadline: nothing here blocks forever or takes silence as an answer.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

// DefaultTimeout bounds each wait of a Seat whose Timeout is zero. The
// in-process tests keep it; multi-process tests on a loaded machine raise
// Seat.Timeout.
const DefaultTimeout = 10 * time.Second

// Options tune Connect and Dial. The zero value is usable.
type Options struct {
	// Resume is ClientHello.resumeFromSeq (0: a fresh start).
	Resume int64
	// Build is ClientHello.clientBuild (default "clienttest").
	Build string
	// Timeout bounds the ticket request, the dial, the ServerHello and,
	// later, each wait of the Seat (default DefaultTimeout).
	Timeout time.Duration
}

// Seat is one raw protocol connection for one seat of a match.
type Seat struct {
	// T is the test the helpers fail.
	T testing.TB
	// Conn is the connection, for what the helpers do not cover (raw
	// bytes, close, deadlines).
	Conn *client.Conn
	// Index is the seat (0 or 1) the ticket was issued for.
	Index int
	// Timeout bounds View, Intent and Drain (DefaultTimeout when zero).
	Timeout time.Duration
}

func (s *Seat) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// Connect fetches a ticket for seat from admin, dials addr
// ("ws://host:port/game" or "tcp://host:port") and sends ClientHello
// without reading the answer. The connection is closed when the test ends.
func Connect(t testing.TB, admin *client.Admin, addr, matchID string, seat int, o Options) *Seat {
	t.Helper()
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Build == "" {
		o.Build = "clienttest"
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	tk, err := admin.Ticket(ctx, matchID, seat)
	if err != nil {
		t.Fatalf("ticket for seat %d of %s: %v", seat, matchID, err)
	}
	c, err := client.Dial(ctx, addr, client.DialOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() }) // usually closed already: the error says only that
	s := &Seat{T: t, Conn: c, Index: seat, Timeout: o.Timeout}
	s.Send(&protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: tk.Ticket, ClientBuild: o.Build, ResumeFromSeq: o.Resume})
	return s
}

// Dial is Connect followed by reading the ServerHello, which must be the
// first frame.
func Dial(t testing.TB, admin *client.Admin, addr, matchID string, seat int, o Options) (*Seat, *protocol.ServerHello) {
	t.Helper()
	s := Connect(t, admin, addr, matchID, seat, o)
	f := s.Recv(s.timeout())
	hello, ok := f.(*protocol.ServerHello)
	if !ok {
		t.Fatalf("seat %d: first frame is %T, not a ServerHello", seat, f)
	}
	return s, hello
}

// Next returns the next frame, or the error that ended the connection or
// the wait.
func (s *Seat) Next(timeout time.Duration) (protocol.ServerFrame, error) {
	if err := s.Conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("seat %d: set read deadline: %w", s.Index, err)
	}
	return s.Conn.Recv()
}

// Recv returns the next frame and fails the test if none arrives within
// timeout.
func (s *Seat) Recv(timeout time.Duration) protocol.ServerFrame {
	s.T.Helper()
	f, err := s.Next(timeout)
	if err != nil {
		s.T.Fatalf("seat %d recv: %v", s.Index, err)
	}
	return f
}

// Send writes one frame.
func (s *Seat) Send(f protocol.ClientFrame) {
	s.T.Helper()
	if err := s.Conn.Send(f); err != nil {
		s.T.Fatalf("seat %d send %T: %v", s.Index, f, err)
	}
}

// Await reads frames until one of type T satisfies pred, and fails the
// test if none does within timeout. Frames before it are dropped.
func Await[T protocol.ServerFrame](s *Seat, timeout time.Duration, pred func(T) bool) T {
	s.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			var zero T
			s.T.Fatalf("seat %d: no matching %T within %v", s.Index, zero, timeout)
		}
		if f, ok := s.Recv(left).(T); ok && pred(f) {
			return f
		}
	}
}

// Any is the predicate of Await that takes the first frame of its type.
func Any[T protocol.ServerFrame](T) bool { return true }

// Drain sends a ClientPing and returns every frame that arrives before its
// ServerPong. WebSocket read deadlines are fatal to the connection, so
// "nothing arrived" is proved by an answer that comes after it on the same
// connection, not by a quiet interval.
func (s *Seat) Drain() []protocol.ServerFrame {
	s.T.Helper()
	nonce := time.Now().UnixNano()
	s.Send(&protocol.ClientPing{Nonce: nonce, ClientTimeMs: time.Now().UnixMilli()})
	var out []protocol.ServerFrame
	deadline := time.Now().Add(s.timeout())
	for {
		left := time.Until(deadline)
		if left <= 0 {
			s.T.Fatalf("seat %d: no ServerPong within %v", s.Index, s.timeout())
		}
		f := s.Recv(left)
		if p, ok := f.(*protocol.ServerPong); ok && p.Nonce == nonce {
			return out
		}
		out = append(out, f)
	}
}

// View asks for a full snapshot and returns its view.
func (s *Seat) View() protocol.MatchView {
	s.T.Helper()
	s.Send(&protocol.ClientResync{FullSnapshot: true})
	return Await(s, s.timeout(), Any[*protocol.ServerSnapshot]).View
}

// Intent submits in under id and returns its ServerIntentResult.
func (s *Seat) Intent(id string, basedOn int64, in protocol.Intent) *protocol.ServerIntentResult {
	s.T.Helper()
	return s.IntentWithin(id, basedOn, in, s.timeout())
}

// IntentWithin is Intent with its own bound, for a result that waits on a
// failover.
func (s *Seat) IntentWithin(id string, basedOn int64, in protocol.Intent, timeout time.Duration) *protocol.ServerIntentResult {
	s.T.Helper()
	s.Send(&protocol.ClientIntent{IntentID: id, BasedOnSeq: basedOn, Intent: in})
	return Await(s, timeout, func(f *protocol.ServerIntentResult) bool { return f.IntentID == id })
}

// CloseCode reads until the connection ends and returns its close code and
// the frames before it, failing if that takes longer than timeout or the
// connection ends without a close code.
func (s *Seat) CloseCode(timeout time.Duration) (int, []protocol.ServerFrame) {
	s.T.Helper()
	deadline := time.Now().Add(timeout)
	var seen []protocol.ServerFrame
	for {
		f, err := s.Next(time.Until(deadline))
		if err != nil {
			var ce *client.CloseError
			if !errors.As(err, &ce) {
				s.T.Fatalf("seat %d: connection did not close within %v: %v", s.Index, timeout, err)
			}
			return ce.Code, seen
		}
		seen = append(seen, f)
	}
}

// FirstPlay is the first legal intent of v other than Concede, or nil when
// the seat has nothing to decide.
func FirstPlay(v protocol.MatchView) protocol.Intent {
	for _, in := range v.LegalIntents {
		if in.IntentKind() != protocol.IntentConcede {
			return in
		}
	}
	return nil
}

// NextMove finds the seat that decides, its fresh view and its first legal
// play; it fails the test when the match is over or nobody can move.
func NextMove(t testing.TB, seats [2]*Seat) (*Seat, protocol.MatchView, protocol.Intent) {
	t.Helper()
	var v protocol.MatchView
	for _, s := range seats {
		v = s.View()
		if in := FirstPlay(v); in != nil {
			return s, v, in
		}
		if v.IsFinished {
			t.Fatalf("the match ended at seq %d; the test needs it running", v.EventSeq)
		}
	}
	t.Fatalf("neither seat can move at seq %d", v.EventSeq)
	return nil, protocol.MatchView{}, nil
}

// Move is one acknowledged intent.
type Move struct {
	// ID is the intentId it was sent under.
	ID string
	// Seat is the index of the seat that sent it.
	Seat int
	// Intent is what was played.
	Intent protocol.Intent
	// Seq is the ServerIntentResult's eventSeq.
	Seq int64
}

// Play makes n accepted moves, each by whichever seat decides, under the
// ids prefix-0 … prefix-(n-1), and fails the test on any rejection.
func Play(t testing.TB, seats [2]*Seat, prefix string, n int) []Move {
	t.Helper()
	moves := make([]Move, 0, n)
	for i := range n {
		s, v, in := NextMove(t, seats)
		id := fmt.Sprintf("%s-%d", prefix, i)
		res := s.Intent(id, v.EventSeq, in)
		if !res.Accepted {
			t.Fatalf("intent %s (%T) rejected: %+v", id, in, res)
		}
		moves = append(moves, Move{ID: id, Seat: s.Index, Intent: in, Seq: res.EventSeq})
	}
	return moves
}
