package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/protocol"
)

// The grain tests drive match grains through this package's messages, as
// the edge's gateway (edge/grains) does in production, but with only what a
// test needs: a seat's PID that takes pushes, attach and re-attach, intents,
// resyncs and a keep-alive per seat. The gateway's own behaviour (its
// keep-alive slots, its bare-process seats, its error sentinels for the
// edge) is tested in edge/grains.

// Errors of the test driver, from the grain's reply codes.
var (
	errMatchNotFound = errors.New("match not found")
	errTicketUsed    = errors.New("ticket already used")
	errUnavailable   = errors.New("match unavailable")
	errNotAttached   = errors.New("seat not attached")
	errDetached      = errors.New("seat detached")
	// errNoReply: no activation answered a request (askOnce).
	errNoReply = errors.New("no reply")
)

// replyErrs names the error of each reply code that is one.
var replyErrs = map[ReplyCode]error{
	ReplyNotFound: errMatchNotFound, ReplyTicketUsed: errTicketUsed, ReplyNotAttached: errNotAttached,
	ReplyUnavailable: errUnavailable, ReplyBadRequest: ErrBadRequest, ReplyReplaced: errDetached,
}

// call sends msg to the grain of matchID through the node (which retries
// what the cluster retries) and turns a reply that is not ReplyOK into its
// error.
func (tn *testNode) call(ctx context.Context, matchID string, msg any) (*Reply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	res, err := tn.node.Request(ctx, matchID, MatchKind, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: match %s: %w", errUnavailable, matchID, err)
	}
	r, err := asTestReply(res)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", matchID, err)
	}
	if e := replyErrs[r.Code]; e != nil {
		return r, fmt.Errorf("%w: match %s: %s", e, matchID, r.Message)
	}
	return r, nil
}

// create records a match of Ann and Bob with seed and wakes its grain.
func (tn *testNode) createMatch(ctx context.Context, seed *uint64) (string, error) {
	id, err := CreateMatch(ctx, tn.store, tn.rules, MatchSpec{Names: [2]string{"Ann", "Bob"}, Decks: [2]string{"S1", "S2"}, Seed: seed})
	if err != nil {
		return "", err
	}
	_, err = tn.call(ctx, id, &Wake{})
	return id, err
}

// matchExists wakes matchID's grain and reports whether the match exists.
func (tn *testNode) matchExists(ctx context.Context, matchID string) (bool, error) {
	_, err := tn.call(ctx, matchID, &Wake{})
	if errors.Is(err, errMatchNotFound) {
		return false, nil
	}
	return err == nil, err
}

// seatRequest asks to attach a test seat.
type seatRequest struct {
	MatchID       string
	Seat          int
	TicketID      string
	TicketExpires time.Time
	ResumeFromSeq int64
}

// testSeat is one test connection's attachment to a seat.
type testSeat struct {
	tn              *testNode
	matchID         string
	seat            int
	sink            *frameSink
	pid             *actor.PID
	ticketExpiresMs int64

	epoch, lastSeq atomic.Int64
	initial        chan struct{}
	initialOnce    sync.Once
	detached       atomic.Bool
	stop           chan struct{}
	closeOnce      sync.Once
}

var seatN atomic.Int64

// newSeat makes a seat of matchID and spawns the actor that takes its
// grain's pushes; it is not attached.
func (tn *testNode) newSeat(matchID string, seat int, sink *frameSink, ticketExpires time.Time) (*testSeat, error) {
	s := &testSeat{tn: tn, matchID: matchID, seat: seat, sink: sink, ticketExpiresMs: ticketExpires.UnixMilli(),
		initial: make(chan struct{}), stop: make(chan struct{})}
	props := actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*envelope.Msg); ok {
			s.push(m.V)
		}
	})
	pid, err := tn.node.System().Root.SpawnNamed(props, fmt.Sprintf("test-seat-%s-%d", matchID, seatN.Add(1)))
	if err != nil {
		return nil, fmt.Errorf("spawn seat: %w", err)
	}
	s.pid = pid
	return s, nil
}

// openSeat attaches a new seat (consuming the ticket) and waits for its
// initial frames; the seat then keeps itself attached until Close.
func (tn *testNode) openSeat(ctx context.Context, req seatRequest, sink *frameSink) (*testSeat, error) {
	s, err := tn.newSeat(req.MatchID, req.Seat, sink, req.TicketExpires)
	if err != nil {
		return nil, err
	}
	s.lastSeq.Store(req.ResumeFromSeq)
	if _, err := tn.call(ctx, req.MatchID, &AttachSeat{
		Seat: req.Seat, TicketID: req.TicketID, TicketExpiresMs: s.ticketExpiresMs, ResumeFromSeq: req.ResumeFromSeq,
		SessionAddr: s.pid.Address, SessionID: s.pid.Id,
	}); err != nil {
		tn.node.System().Root.Stop(s.pid)
		return nil, err
	}
	select {
	case <-s.initial:
	case <-ctx.Done():
		s.Close(false)
		return nil, fmt.Errorf("%w: no initial frames: %w", errUnavailable, ctx.Err())
	}
	go s.keepAlive()
	return s, nil
}

// push takes one message of the grain, in the seat actor: frames of an
// older activation than the newest seen are dropped, and so are pushed
// event batches the seat has already, as the edge's seat drops them.
func (s *testSeat) push(v any) {
	switch m := v.(type) {
	case *SeatFrames:
		if m.Epoch < s.epoch.Load() {
			return
		}
		s.epoch.Store(m.Epoch)
		var out [][]byte
		for _, f := range m.Frames {
			if f.ToSeq > 0 {
				kind := protocol.ServerFrameKind(f.Data[1])
				if !m.Initial && !m.Requested && kind == protocol.ServerEventsKind && f.ToSeq <= s.lastSeq.Load() {
					continue
				}
				if f.ToSeq > s.lastSeq.Load() || kind == protocol.ServerSnapshotKind {
					s.lastSeq.Store(f.ToSeq)
				}
			}
			out = append(out, f.Data)
		}
		if !s.detached.Load() {
			s.sink.Deliver(out)
		}
		if m.Initial {
			s.initialOnce.Do(func() { close(s.initial) })
		}
	case *SeatDetached:
		if m.Epoch >= s.epoch.Load() {
			s.detach(m.Reason)
		}
	}
}

func (s *testSeat) detach(r DetachReason) {
	if s.detached.CompareAndSwap(false, true) {
		s.sink.Detach(r)
	}
}

// Intent submits an intent, as a local edge seat does (the value, no
// frame); its result arrives through the sink.
func (s *testSeat) Intent(ctx context.Context, intentID string, basedOnSeq int64, in protocol.Intent) error {
	ci := &protocol.ClientIntent{IntentID: intentID, BasedOnSeq: basedOnSeq, Intent: in}
	return s.request(ctx, &SubmitIntent{Seat: s.seat, SessionID: s.pid.Id, Intent: ci, SeenEpoch: s.epoch.Load()})
}

// Resync asks for events from fromSeq, or a snapshot.
func (s *testSeat) Resync(ctx context.Context, fromSeq int64, full bool) error {
	return s.request(ctx, &ResyncSeat{Seat: s.seat, SessionID: s.pid.Id, FromSeq: fromSeq, Full: full, SeenEpoch: s.epoch.Load()})
}

// request sends msg, re-attaching first whenever the grain no longer knows
// the seat (a new activation), a few times at most.
func (s *testSeat) request(ctx context.Context, msg any) error {
	for range 4 {
		if s.detached.Load() {
			return errDetached
		}
		_, err := s.tn.call(ctx, s.matchID, msg)
		if !errors.Is(err, errNotAttached) {
			return err
		}
		if err := s.reattach(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: match %s: the seat stays unattached", errUnavailable, s.matchID)
}

// reattach attaches the seat again, resuming from its last seq.
func (s *testSeat) reattach(ctx context.Context) error {
	if s.detached.Load() {
		return errDetached
	}
	_, err := s.tn.call(ctx, s.matchID, &AttachSeat{
		Seat: s.seat, Reattach: true, ResumeFromSeq: s.lastSeq.Load(), TicketExpiresMs: s.ticketExpiresMs,
		SessionAddr: s.pid.Address, SessionID: s.pid.Id, SeenEpoch: s.epoch.Load(),
	})
	if errors.Is(err, errDetached) {
		s.detach(DetachReplaced)
	}
	return err
}

// keepAlive pings the grain every SeatKeepAlive until Close, re-attaching
// when it no longer holds the seat.
func (s *testSeat) keepAlive() {
	every := s.tn.timing.SeatKeepAlive
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*every)
		r, err := s.tn.call(ctx, s.matchID, &SeatPing{Seat: s.seat, SessionID: s.pid.Id, SeenEpoch: s.epoch.Load()})
		if errors.Is(err, errNotAttached) || (err == nil && slices.Contains(r.NotAttached, 0)) {
			_ = s.reattach(ctx) // the next ping tries again
		}
		cancel()
	}
}

// Close ends the attachment; leave says the player left on purpose.
func (s *testSeat) Close(leave bool) {
	s.closeOnce.Do(func() {
		close(s.stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = s.tn.call(ctx, s.matchID, &DetachSeat{Seat: s.seat, SessionID: s.pid.Id, Leave: leave})
		s.tn.node.System().Root.Stop(s.pid)
	})
}

// askOnce sends msg to the grain of matchID with protoactor's own Request,
// without the node's retries: a reply that says the match is elsewhere
// comes back as it is. A dead letter (an activation that had stopped) is
// re-sent by protoactor, up to 5 times; a request no activation answers
// fails with errNoReply after 2 s.
func (tn *testNode) askOnce(matchID string, msg any) (*Reply, error) {
	started := time.Now()
	res, err := tn.node.Cluster().Request(matchID, MatchKind, envelope.Wrap(msg),
		pcluster.WithTimeout(2*time.Second), pcluster.WithRetryCount(5))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: match %s: after %v: %w", errNoReply, matchID, time.Since(started).Round(time.Millisecond), err)
	}
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", matchID, err)
	}
	r, err := asTestReply(res)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", matchID, err)
	}
	return r, nil
}

// asTestReply takes a grain's reply out of its envelope.
func asTestReply(res any) (*Reply, error) {
	if m, ok := res.(*envelope.Msg); ok {
		res = m.V
	}
	r, ok := res.(*Reply)
	if !ok {
		return nil, fmt.Errorf("unexpected reply %T", res)
	}
	return r, nil
}
