package edge_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/protocol"
)

// Tests in this file drive the fake matches directly (detach, flood, open
// errors); they are edge-only by nature.

func mustEncode(f protocol.ServerFrame) []byte {
	b, err := protocol.EncodeServerFrame(f)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", f, err)) // test frames only
	}
	return b
}

// joinNewMatch makes a match and connects its seat 0 over tr, up to the
// first snapshot.
func joinNewMatch(t *testing.T, h *harness, tr string) (string, testConn, *protocol.ServerHello) {
	t.Helper()
	id := h.newMatch()
	c := dial(t, h, tr)
	sh := hello(t, c, h.ticket(id, 0), 0)
	expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
	return id, c, sh
}

func shutdownNow(h *harness) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.srv.Shutdown(ctx)
}

func fakeOf(t *testing.T, h *harness) *edgetest.Matches {
	t.Helper()
	f, ok := h.matches.(*edgetest.Matches)
	if !ok {
		t.Fatalf("matches is %T, not the fake", h.matches)
	}
	return f
}

func TestSeatCloseAndLeave(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	f := fakeOf(t, h)
	cases := []struct {
		name  string
		end   func(t *testing.T, c testConn)
		leave bool
	}{
		{"leave", func(t *testing.T, c testConn) { send(t, c, &protocol.ClientLeave{Reason: "bye"}) }, true},
		{"drop", func(t *testing.T, c testConn) { c.close() }, false},
	}
	for _, tc := range cases {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				id := h.newMatch()
				c := dial(t, h, tr)
				hello(t, c, h.ticket(id, 1), 0)
				seat := f.Seat(id, 1)
				tc.end(t, c)
				pollFor(t, 5*time.Second, func() error {
					if closed, _ := seat.Closed(); !closed {
						return errors.New("seat not closed")
					}
					return nil
				})
				if _, left := seat.Closed(); left != tc.leave {
					t.Errorf("Close(leave=%v), want %v", left, tc.leave)
				}
			})
		}
	}
}

func TestResumeAndDuplicate(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id, c, sh := joinNewMatch(t, h, tr)
			in := &protocol.ClientIntent{IntentID: "end-1", BasedOnSeq: sh.EventSeq, Intent: protocol.EndTurn{}}
			send(t, c, in)
			r := expectFrame[*protocol.ServerIntentResult](t, c, 5*time.Second)
			if !r.Accepted || r.Duplicate {
				t.Fatalf("first result %+v", *r)
			}
			ev := expectFrame[*protocol.ServerEvents](t, c, 5*time.Second)
			c.close()

			c2 := dial(t, h, tr)
			sh2 := hello(t, c2, h.ticket(id, 0), ev.ToSeq-1)
			if !sh2.Resumed {
				t.Fatalf("hello %+v, want resumed", *sh2)
			}
			ev2 := expectFrame[*protocol.ServerEvents](t, c2, 5*time.Second)
			if ev2.FromSeq != ev.ToSeq || ev2.ToSeq != ev.ToSeq {
				t.Fatalf("resume events %d..%d, want %d..%d", ev2.FromSeq, ev2.ToSeq, ev.ToSeq, ev.ToSeq)
			}
			send(t, c2, in)
			r2 := expectFrame[*protocol.ServerIntentResult](t, c2, 5*time.Second)
			if !r2.Duplicate || r2.EventSeq != r.EventSeq {
				t.Fatalf("retry result %+v, want duplicate of %+v", *r2, *r)
			}
		})
	}
}

func TestMatchErrors(t *testing.T) {
	cases := []struct {
		name    string
		openErr error
		want    want
	}{
		{"unavailable", fmt.Errorf("gateway: %w", edge.ErrUnavailable),
			want{wsCode: protocol.CloseInternal, wsErr: protocol.ErrorInternal, tcpErr: protocol.ErrorInternal}},
		{"internal", errors.New("boom"),
			want{wsCode: protocol.CloseInternal, wsErr: protocol.ErrorInternal, tcpErr: protocol.ErrorInternal}},
		{"ticket used", edge.ErrTicketUsed,
			want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorInvalidTicket, tcpErr: protocol.ErrorInvalidTicket}},
		{"match not found", edge.ErrMatchNotFound,
			want{wsCode: protocol.CloseTicket, wsErr: protocol.ErrorMatchNotFound, tcpErr: protocol.ErrorMatchNotFound}},
		{"spectators full", fmt.Errorf("grain: %w", edge.ErrSpectatorsFull),
			want{wsCode: protocol.CloseSpectatorsFull, wsErr: protocol.ErrorSpectatorsFull, tcpErr: protocol.ErrorSpectatorsFull}},
	}
	for _, tc := range cases {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				h := newHarness(t, newFakeMatches, nil)
				id := h.newMatch()
				fakeOf(t, h).SetOpenError(tc.openErr)
				c := dial(t, h, tr)
				send(t, c, &protocol.ClientHello{ProtocolVersion: 1, Ticket: h.ticket(id, 0)})
				tc.want.check(t, c, readUntilClosed(t, c, 5*time.Second))
			})
		}
	}
}

func TestDetach(t *testing.T) {
	cases := []struct {
		reason edge.DetachReason
		want   want
	}{
		{edge.DetachUnavailable, want{wsCode: protocol.CloseInternal, wsErr: protocol.ErrorInternal, tcpErr: protocol.ErrorInternal}},
		{edge.DetachShutdown, want{wsCode: 1001, wsErr: -1, tcpErr: protocol.ErrorInternal}},
		{edge.DetachReplaced, want{wsCode: protocol.CloseReplaced, wsErr: -1, tcpErr: protocol.ErrorSessionReplaced}},
	}
	h := newHarness(t, newFakeMatches, nil)
	for _, tc := range cases {
		for _, tr := range transports {
			t.Run(tc.reason.String()+"/"+tr, func(t *testing.T) {
				id := h.newMatch()
				c := dial(t, h, tr)
				hello(t, c, h.ticket(id, 0), 0)
				expectFrame[*protocol.ServerSnapshot](t, c, 5*time.Second)
				// A pong proves the reader is past OpenSeat and holds the seat.
				send(t, c, &protocol.ClientPing{Nonce: 1})
				expectFrame[*protocol.ServerPong](t, c, 5*time.Second)
				seat := fakeOf(t, h).Seat(id, 0)
				// Frames delivered before the detach still arrive first.
				seat.Sink().Deliver([][]byte{mustEncode(&protocol.ServerClock{EventSeq: 1})})
				seat.Sink().Detach(tc.reason)
				expectFrame[*protocol.ServerClock](t, c, 5*time.Second)
				got := readUntilClosed(t, c, 5*time.Second)
				tc.want.check(t, c, got)
				if got.lastError != nil && got.lastError.EventSeq != seat.LastSeq() {
					t.Errorf("ServerError eventSeq %d, want %d", got.lastError.EventSeq, seat.LastSeq())
				}
			})
		}
	}
}

// TestCallInFlightEndsWithSession: a call into Matches that is in flight
// when the session shuts down has its context cancelled at once, not after
// RequestTimeout (a minute here).
func TestCallInFlightEndsWithSession(t *testing.T) {
	h := newHarness(t, newFakeMatches, func(c *edge.Config) { c.RequestTimeout = time.Minute })
	f := fakeOf(t, h)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id, c, sh := joinNewMatch(t, h, tr)
			hold := f.SetHoldIntents(true)
			defer f.SetHoldIntents(false)
			send(t, c, &protocol.ClientIntent{IntentID: "held", BasedOnSeq: sh.EventSeq, Intent: protocol.EndTurn{}})
			select {
			case err := <-hold:
				if err != nil {
					t.Fatalf("held intent reported %v before it waited", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the intent never reached Matches")
			}
			f.Seat(id, 0).Sink().Detach(edge.DetachShutdown)
			select {
			case err := <-hold:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("the held call ended with %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call in flight outlived its session by 5 s")
			}
			readUntilClosed(t, c, 5*time.Second)
		})
	}
}

// TestSlowReader: a client that never reads is disconnected, and the memory
// the edge spends on it stays bounded, whichever bound trips first.
func TestSlowReader(t *testing.T) {
	cases := []struct {
		name       string
		queueBytes int
		frames     int // how many 64 KiB frames to deliver at most
		reason     string
	}{
		// Up to 1 GiB if nothing stopped it; each Deliver reuses one 64 KiB
		// slice, so only the edge's queue could hold copies of the slice
		// header, never of the bytes.
		{"queue full", 1 << 20, 16 << 10, "slow_consumer"},
		// 32 MiB fit the queue but not the socket buffers: the writer
		// blocks and its deadline passes.
		{"write deadline", 256 << 20, 512, "write_failed"},
	}
	frame := mustEncode(&protocol.ServerEvents{Events: []protocol.EventEnvelope{
		{Seq: 1, Event: &protocol.SearchFailedViewEvent{Query: string(make([]byte, 64<<10))}},
	}})
	for _, tc := range cases {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				h := newHarness(t, newFakeMatches, func(c *edge.Config) {
					c.OutboundQueueBytes = tc.queueBytes
					c.OutboundQueueFrames = 1 << 16
					c.WriteTimeout = 300 * time.Millisecond
					// The heartbeat is not this test's subject: with the
					// harness's 4 s it raced the bounds under test when a
					// loaded machine stretched the flood (hello to close
					// takes 0.33-0.37 s here; a heartbeat shorter than that
					// closes with heartbeat_timeout and fails the test).
					c.HeartbeatIdle, c.HeartbeatTimeout = 30*time.Second, time.Minute
				})
				id := h.newMatch()
				c := dial(t, h, tr)
				hello(t, c, h.ticket(id, 0), 0)
				seat := fakeOf(t, h).Seat(id, 0)
				closed := func() bool { c, _ := seat.Closed(); return c }

				var before runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				delivered := 0
				deadline := time.Now().Add(10 * time.Second)
				for ; delivered < tc.frames && !closed() && time.Now().Before(deadline); delivered++ {
					seat.Sink().Deliver([][]byte{frame})
					if delivered%64 == 63 {
						time.Sleep(time.Millisecond)
					}
				}
				pollFor(t, 5*time.Second, func() error {
					if !closed() {
						return fmt.Errorf("not disconnected after %d frames", delivered)
					}
					return nil
				})
				series := fmt.Sprintf("matchgrain_edge_closes_total{reason=%q}", tc.reason)
				pollFor(t, 5*time.Second, func() error {
					v, err := h.metric(series)
					if err != nil {
						return err
					}
					if v != 1 {
						return fmt.Errorf("%s = %v", series, v)
					}
					return nil
				})
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				grown := int64(after.HeapInuse) - int64(before.HeapInuse)
				if grown > 64<<20 {
					t.Errorf("heap grew by %d MiB while flooding a slow reader", grown>>20)
				}
				t.Logf("disconnected after %d frames of %d KiB; heap in use grew by %d KiB", delivered, len(frame)>>10, grown>>10)
			})
		}
	}
}

// TestIntentErrorCloses: a match that cannot take an intent makes the edge
// close with 4500 so that the client resumes and retries.
func TestIntentErrorCloses(t *testing.T) {
	h := newHarness(t, newFakeMatches, nil)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			id := h.newMatch()
			c := dial(t, h, tr)
			hello(t, c, h.ticket(id, 0), 0)
			fakeOf(t, h).Seat(id, 0).Kill() // the fake answers ErrUnavailable now
			send(t, c, &protocol.ClientIntent{IntentID: "x", Intent: protocol.EndTurn{}})
			want{wsCode: protocol.CloseInternal, wsErr: protocol.ErrorInternal, tcpErr: protocol.ErrorInternal}.
				check(t, c, readUntilClosed(t, c, 5*time.Second))
		})
	}
}

// TestHeartbeatEndsStuckConnections: after the hello no read deadline
// guards a connection (the heartbeat timer does), so a silent client is
// closed at the heartbeat timeout also when it stopped in the middle of a
// frame, and also when it stopped reading, so that the edge's writer is
// stuck too: its reader must not wait for the peer for ever.
func TestHeartbeatEndsStuckConnections(t *testing.T) {
	const idle, timeout = 200 * time.Millisecond, 500 * time.Millisecond
	frame := mustEncode(&protocol.ServerEvents{Events: []protocol.EventEnvelope{
		{Seq: 1, Event: &protocol.SearchFailedViewEvent{Query: string(make([]byte, 64<<10))}},
	}})
	for _, tr := range transports {
		t.Run("mid-frame/"+tr, func(t *testing.T) {
			h := newHarness(t, newFakeMatches, func(c *edge.Config) {
				c.HeartbeatIdle, c.HeartbeatTimeout = idle, timeout
			})
			c := dial(t, h, tr)
			hello(t, c, h.ticket(h.newMatch(), 0), 0)
			b, err := protocol.EncodeClientFrame(&protocol.ClientPing{Nonce: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.raw().Write(rawClientFrame(tr, b)[:3]); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			want{wsCode: protocol.CloseHeartbeatTimeout, wsErr: -1, tcpErr: protocol.ErrorHeartbeatTimeout}.check(t, c, readUntilClosed(t, c, 5*time.Second))
			if took := time.Since(start); took < timeout-50*time.Millisecond {
				t.Errorf("closed after %v, before the heartbeat timeout %v", took, timeout)
			}
		})
		t.Run("not reading/"+tr, func(t *testing.T) {
			h := newHarness(t, newFakeMatches, func(c *edge.Config) {
				c.HeartbeatIdle, c.HeartbeatTimeout = idle, timeout
				c.OutboundQueueBytes, c.OutboundQueueFrames = 256<<20, 1<<16
				c.WriteTimeout = time.Second // longer than the timeout: the writer is stuck when it comes
			})
			id := h.newMatch()
			c := dial(t, h, tr)
			hello(t, c, h.ticket(id, 0), 0)
			seat := fakeOf(t, h).Seat(id, 0)
			// 32 MiB fill the socket buffers; the client reads nothing.
			for range 512 {
				seat.Sink().Deliver([][]byte{frame})
			}
			pollFor(t, 5*time.Second, func() error {
				if closed, _ := seat.Closed(); !closed {
					return errors.New("the seat is still open: the reader did not end")
				}
				return nil
			})
			series := `matchgrain_edge_closes_total{reason="heartbeat_timeout"}`
			pollFor(t, 5*time.Second, func() error {
				if v, err := h.metric(series); err != nil || v != 1 {
					return fmt.Errorf("%s = %v (%v)", series, v, err)
				}
				return nil
			})
		})
	}
}
