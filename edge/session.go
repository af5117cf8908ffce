package edge

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// session is one client connection, the same for WebSocket and TCP. Its
// reader (handshake, then one frame at a time, calls into the Seat) runs
// for the connection's life, moving to a fresh goroutine after the hello
// and each keep-alive (readFrames, park); its writer goroutine (drains the outbox,
// says goodbye) runs only while there is something to write, and a timer
// queues the heartbeat pings and ends a silent connection, so an idle
// connection costs one goroutine and one timer, not two goroutines and a
// read deadline too. Writers never overlap: the outbox hands the turn from one to the next.
// Everything else reaches it through shutdown, which is idempotent.
//
// Lock order: dlMu, then outbox.mu. No lock is held while calling the Seat
// or writing to the network.
type session struct {
	srv *Server
	cfg *Config
	t   transport
	tcp bool

	out *outbox

	// reqMu guards reqCancel, the cancel of the call into Matches in
	// flight (the reader makes one at a time), which shutdown cancels.
	// Why not a session context that calls derive from: its cancel
	// bookkeeping (a map of children, a channel) stayed allocated for the
	// connection's lifetime once the hello had made one call, about
	// 0.5 KiB per idle connection, and every intent added and removed its
	// context there under the parent's lock.
	reqMu     sync.Mutex
	reqCancel context.CancelFunc

	closing   chan struct{} // closed by shutdown
	closeOnce sync.Once
	reason    CloseReason // written once, before closing is closed

	writerDone  chan struct{} // closed by the writer that ends for good
	batch       [][]byte      // the running writer's batch; reused across turns
	hb          atomic.Pointer[time.Timer]
	pingedFor   atomic.Int64 // lastFrame of the last idle ping
	pingNonce   atomic.Int64
	established atomic.Bool  // handshake complete
	lastFrame   atomic.Int64 // Unix nanoseconds of the last client frame
	// resumeDue is when the session's next ServerResumeTicket is due, in
	// Unix nanoseconds; 0 when the session did not ask for them.
	resumeDue atomic.Int64
	seat      atomic.Pointer[seatRef]

	// dlMu orders the reader's hello deadline (set, then cleared) against
	// the writer's linger deadline, so that the linger is never overwritten.
	dlMu        sync.Mutex
	lingerUntil time.Time

	// Owned by the reader goroutine. matchID and seatNo are written once,
	// by the handshake, before established and resumeDue are stored: the
	// heartbeat reads them only after loading those.
	lim     limiter
	matchID string
	seatNo  int
	started time.Time
}

type seatRef struct{ Seat }

func newSession(srv *Server, t transport) *session {
	return &session{
		srv:        srv,
		cfg:        &srv.cfg,
		t:          t,
		tcp:        t.kind() == transportTCP,
		out:        newOutbox(srv.cfg.OutboundQueueFrames, srv.cfg.OutboundQueueBytes),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		seatNo:     -1,
		started:    time.Now(),
	}
}

// startCall returns the context of one call into Matches: it ends after
// RequestTimeout, or when the session shuts down, whichever comes first.
// Pass its cancel to endCall when the call returns.
func (s *session) startCall() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.srv.callDeadline.Context())
	s.reqMu.Lock()
	if s.isClosing() {
		// shutdown has run (it closes closing before taking reqMu) and
		// will not see this call: it starts cancelled.
		cancel()
	} else {
		s.reqCancel = cancel
	}
	s.reqMu.Unlock()
	return ctx, cancel
}

// endCall releases a call's context made by startCall.
func (s *session) endCall(cancel context.CancelFunc) {
	s.reqMu.Lock()
	s.reqCancel = nil
	s.reqMu.Unlock()
	cancel()
}

// shutdown starts closing the connection for reason r; only the first call
// counts. An abortive reason closes the socket at once (the peer is gone or
// not reading, so there is nobody to say goodbye to and blocked writes must
// end); otherwise the writer flushes the queue and sends the goodbye.
func (s *session) shutdown(r CloseReason) {
	s.closeOnce.Do(func() {
		s.reason = r
		close(s.closing)
		s.reqMu.Lock()
		if s.reqCancel != nil {
			s.reqCancel()
		}
		s.reqMu.Unlock()
		if r.abortive() {
			s.out.close()
			s.t.close()
		}
		// The writer says goodbye (or, if abortive, just ends) and closes
		// writerDone; start one if none runs.
		s.kickWriter()
	})
}

// kickWriter starts a writer goroutine unless one runs.
func (s *session) kickWriter() {
	if s.out.claim() {
		s.startWriter()
	}
}

// startWriter starts a writer; the caller won the turn (outbox.claim or push).
func (s *session) startWriter() { go s.writeLoop() }

func (s *session) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

func (s *session) currentSeat() Seat {
	if r := s.seat.Load(); r != nil {
		return r.Seat
	}
	return nil
}

func (s *session) lastSeq() int64 {
	if seat := s.currentSeat(); seat != nil {
		return seat.LastSeq()
	}
	return 0
}

// Deliver implements SeatSink: it queues frames for the writer and never
// blocks. A full queue means the client is not reading: drop it.
func (s *session) Deliver(frames [][]byte) {
	ok, start := s.out.push(frames...)
	if !ok {
		s.shutdown(ReasonSlowConsumer)
		return
	}
	if start {
		s.startWriter()
	}
	s.srv.metrics.observeOutbound(frames)
}

// Detach implements SeatSink.
func (s *session) Detach(r DetachReason) {
	switch r {
	case DetachReplaced:
		s.shutdown(ReasonReplaced)
	case DetachShutdown:
		s.shutdown(ReasonMatchShutdown)
	default:
		s.shutdown(ReasonUnavailable)
	}
}

// send encodes and queues a frame the edge answers by itself.
func (s *session) send(f protocol.ServerFrame) {
	b, err := protocol.EncodeServerFrame(f)
	if err != nil {
		s.srv.log.Error("edge: encode server frame", "kind", f.ServerFrameKind(), "err", err)
		s.shutdown(ReasonInternal)
		return
	}
	ok, start := s.out.push(b)
	if !ok {
		s.shutdown(ReasonSlowConsumer)
		return
	}
	if start {
		s.startWriter()
	}
}

// setReadDeadline sets the reader's deadline unless the session is closing
// (then the writer's linger deadline stands); it reports whether to go on.
func (s *session) setReadDeadline(d time.Time) bool {
	s.dlMu.Lock()
	defer s.dlMu.Unlock()
	if s.isClosing() {
		return false
	}
	if err := s.t.setReadDeadline(d); err != nil {
		s.shutdown(ReasonPeerClosed)
		return false
	}
	return true
}

// readLoop is the reader goroutine: the handshake, then frames.
func (s *session) readLoop() {
	// The handshake attaches the seat through the cluster, a deep call chain
	// that grows a goroutine's stack to 8 KiB, and the runtime halves a
	// stack only while less than a quarter of it is in use, which a reader
	// waiting in gorilla's read (1–2 KiB) is not: run here, every idle
	// connection kept 8 KiB of stack (measured at 10,000). On its own
	// goroutine the handshake leaves this one small.
	handshook := make(chan bool, 1)
	go func() { handshook <- s.handshake() }()
	if !<-handshook {
		s.finishRead()
		return
	}
	s.park()
}

// readFrames reads and handles frames until the connection ends, then
// finishes it; or, after a keep-alive frame, hands the connection to park
// on a fresh goroutine and returns.
//
// Why: handling a frame (an intent's path into the cluster) grows this
// goroutine's stack to 8 KiB, and it never shrinks back while the reader
// waits in gorilla's read (see readLoop). A fresh goroutine that waits in
// waitReadable, a few frames deep, starts on the runtime's average stack,
// which such waiters bring down to the minimum of 2 KiB: a quiet connection
// then costs a quarter of the stack an active one does
// (docs/performance.md). A keep-alive is what marks a connection quiet:
// a client pings only after it has sent nothing for a while, and answers
// a ServerPing, which the edge sends only after a silence. Readers of
// active connections keep waiting deep in gorilla's read on purpose: one
// that waited shallow between intents would be halved by every collection
// and grow back on the next intent (measured: 6 % of the node's CPU at
// 1,000 matches × 2 intents/s).
func (s *session) readFrames() {
	parked := false
	defer func() {
		if !parked {
			s.finishRead()
		}
	}()
	for {
		b, err := s.t.readFrame()
		if err != nil {
			s.shutdown(s.readErrorReason(err, ReasonHeartbeatTimeout))
			return
		}
		if s.isClosing() {
			return
		}
		now := time.Now()
		s.lastFrame.Store(now.UnixNano())
		s.countIn(len(b))
		if keepAlive := s.handleFrame(b, now); keepAlive && s.mayPark() {
			parked = true
			go s.park()
			return
		}
	}
}

// mayPark reports that parking is on and nothing of the stream is buffered,
// so that a wait on the socket may stand in for the next read.
func (s *session) mayPark() bool { return !s.cfg.NoReaderParking && s.t.quiet() }

// park is the reader of a quiet connection, on a goroutine of its own: it
// waits for the client's next bytes, or the end of the connection, on a
// small stack, then reads on as readFrames. Where the transport cannot tell
// that nothing is buffered (or parking is off) it reads on at once.
func (s *session) park() {
	if s.mayPark() {
		if err := s.t.waitReadable(); err != nil {
			s.shutdown(s.readErrorReason(err, ReasonHeartbeatTimeout))
			s.finishRead()
			return
		}
	}
	s.readFrames()
}

func (s *session) countIn(n int) {
	m := s.srv.metrics
	m.framesIn[s.t.kind()].Add(1)
	m.bytesIn[s.t.kind()].Add(float64(n))
}

// readErrorReason classifies a read error; onTimeout is the reason for a
// passed read deadline. After the hello only a closing session sets one (the
// linger), and then the session's own reason wins.
func (s *session) readErrorReason(err error, onTimeout CloseReason) CloseReason {
	switch {
	case s.isClosing():
		return s.reason
	case isTimeout(err):
		return onTimeout
	case errors.Is(err, protocol.ErrFrameTooLarge):
		return ReasonFrameTooLarge
	case errors.Is(err, protocol.ErrMalformed), errors.Is(err, errNotBinary), errors.Is(err, errEmptyFrame):
		return ReasonMalformedFrame
	default:
		return ReasonPeerClosed
	}
}

// isTimeout reports a passed deadline. gorilla/websocket hides the net
// error behind its own type, which does not unwrap, hence the net.Error check.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// decodeReason classifies a DecodeClientFrame error other than an unknown intent.
func decodeReason(err error) CloseReason {
	if errors.Is(err, protocol.ErrFrameTooLarge) {
		return ReasonFrameTooLarge
	}
	return ReasonMalformedFrame
}

// handshake reads and checks ClientHello and opens the seat. On failure it
// has called shutdown with the reason and returns false.
func (s *session) handshake() bool {
	if !s.setReadDeadline(time.Now().Add(s.cfg.HelloTimeout)) {
		return false
	}
	b, err := s.t.readFrame()
	if err != nil {
		s.shutdown(s.readErrorReason(err, ReasonHelloTimeout))
		return false
	}
	s.countIn(len(b))
	f, err := protocol.DecodeClientFrame(b)
	if err != nil && !errors.Is(err, protocol.ErrUnknownIntent) {
		s.shutdown(decodeReason(err))
		return false
	}
	hello, ok := f.(*protocol.ClientHello)
	if !ok {
		s.shutdown(ReasonProtocolViolation)
		return false
	}
	if hello.ProtocolVersion != protocol.Version {
		s.shutdown(ReasonUnsupportedVersion)
		return false
	}
	claims, err := s.srv.tickets.Verify(hello.Ticket)
	if err != nil {
		if errors.Is(err, ErrTicketExpired) {
			s.shutdown(ReasonTicketExpired)
		} else {
			s.shutdown(ReasonInvalidTicket)
		}
		return false
	}
	s.matchID, s.seatNo = claims.MatchID, claims.Seat
	if claims.Seat == protocol.SeatSpectator {
		// Before the match's first frames arrive: a spectator that does not
		// read is dropped sooner than a seat (docs/protocol.md §14.8).
		s.out.limit(SpectatorQueueFrames, SpectatorQueueBytes)
	}
	req := OpenSeatRequest{
		MatchID:       claims.MatchID,
		Seat:          claims.Seat,
		TicketID:      claims.ID,
		TicketExpires: claims.ExpiresAt,
		ResumeFromSeq: max(hello.ResumeFromSeq, 0),
	}
	ctx, cancel := s.startCall()
	seat, err := s.srv.matches.OpenSeat(ctx, req, s)
	s.endCall(cancel)
	if err != nil {
		s.seatFailed("open seat", err)
		return false
	}
	s.seat.Store(&seatRef{seat})
	now := time.Now()
	s.lastFrame.Store(now.UnixNano())
	s.lim = newLimiter(s.cfg, now)
	s.established.Store(true)
	if hello.ResumeTickets && !s.cfg.NoResumeTickets {
		// After the hello's state, which OpenSeat has queued; the
		// heartbeat timer sends the next ones.
		s.sendResumeTicket(now)
		if t, half := s.hb.Load(), s.srv.tickets.TTL()/2; t != nil && half < s.cfg.HeartbeatIdle {
			// The heartbeat timer renews the ticket; it was armed for
			// HeartbeatIdle when the connection came, later than this.
			t.Reset(half)
		}
	}
	handshakeDone(s.t) // a player now: no longer counts against MaxHandshakes
	// From here the heartbeat timer ends a silent connection (heartbeat),
	// not a read deadline: one set per frame was a runtime timer per
	// connection, modified on every frame (docs/performance.md).
	return s.setReadDeadline(time.Time{})
}

// seatFailed closes the connection after a call into Matches failed.
func (s *session) seatFailed(op string, err error) {
	var r CloseReason
	switch {
	case s.isClosing():
		return
	case errors.Is(err, ErrMatchNotFound):
		r = ReasonMatchNotFound
	case errors.Is(err, ErrTicketUsed):
		r = ReasonTicketUsed
	case errors.Is(err, ErrSpectatorsFull):
		r = ReasonSpectatorsFull
	case errors.Is(err, ErrBadRequest):
		// The match refuses the seat (a bot plays it): the ticket grants
		// nothing, and the client must not retry it.
		r = ReasonInvalidTicket
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		r = ReasonUnavailable
	default:
		r = ReasonInternal
	}
	if r == ReasonUnavailable || r == ReasonInternal {
		s.srv.log.Warn("edge: match call failed", "op", op, "match", s.matchID, "seat", s.seatNo, "err", err)
	}
	s.shutdown(r)
}

// handleFrame handles one client frame after the hello; it reports a
// keep-alive (ClientPing, ClientPong), after which the reader parks.
func (s *session) handleFrame(b []byte, now time.Time) (keepAlive bool) {
	if !s.lim.abuse.take(now) {
		s.shutdown(ReasonRateLimited)
		return false
	}
	f, err := protocol.DecodeClientFrame(b)
	if err != nil {
		var unknown *protocol.UnknownIntentError
		if !errors.As(err, &unknown) {
			s.shutdown(decodeReason(err))
			return false
		}
		if s.limitIntent(unknown.IntentID, now) {
			s.srv.metrics.intents[intentNotSupported].Add(1)
			s.reject(unknown.IntentID, protocol.RejectNotSupported, "unknown intent")
		}
		return false
	}
	seat := s.currentSeat()
	switch f := f.(type) {
	case *protocol.ClientIntent:
		if !s.limitIntent(f.IntentID, now) {
			return false
		}
		s.srv.metrics.intents[intentForwarded].Add(1)
		ctx, cancel := s.startCall()
		err := seat.Intent(ctx, f)
		s.endCall(cancel)
		if err != nil {
			s.seatFailed("intent", err)
			break
		}
		s.srv.metrics.intentDuration.Observe(time.Since(now).Seconds())
	case *protocol.ClientResync:
		ctx, cancel := s.startCall()
		err := seat.Resync(ctx, max(f.FromSeq, 0), f.FullSnapshot)
		s.endCall(cancel)
		if err != nil {
			s.seatFailed("resync", err)
		}
	case *protocol.ClientPing:
		s.send(&protocol.ServerPong{Nonce: f.Nonce, ServerTimeMs: now.UnixMilli()})
		return true
	case *protocol.ClientPong:
		// Activity only; lastFrame is already updated.
		return true
	case *protocol.ClientLeave:
		// The match learns of the leave before the client sees the 1000.
		s.seat.Store(nil)
		seat.Close(true)
		s.shutdown(ReasonClientLeave)
	default: // a second ClientHello
		s.shutdown(ReasonProtocolViolation)
	}
	return false
}

// limitIntent spends an intent token; without one it answers RateLimited
// and returns false.
func (s *session) limitIntent(intentID string, now time.Time) bool {
	if s.lim.intents.take(now) {
		return true
	}
	s.srv.metrics.intents[intentRateLimited].Add(1)
	s.reject(intentID, protocol.RejectRateLimited, "rate limited")
	return false
}

func (s *session) reject(intentID string, code protocol.IntentRejectCode, reason string) {
	s.send(&protocol.ServerIntentResult{
		IntentID: intentID,
		Code:     code,
		Reason:   reason,
		EventSeq: s.lastSeq(),
	})
}

// finishRead runs when the reader stops: it releases the seat, waits for the
// writer's goodbye, lingers so that the goodbye is read rather than reset
// away, and closes the socket.
func (s *session) finishRead() {
	if seat := s.currentSeat(); seat != nil {
		seat.Close(false)
	}
	s.shutdown(ReasonInternal) // no-op unless a path above forgot to
	<-s.writerDone
	s.dlMu.Lock()
	until := s.lingerUntil
	s.dlMu.Unlock()
	if !until.IsZero() {
		if err := s.t.setReadDeadline(until); err == nil {
			s.t.drain()
		}
	}
	s.t.close()
	s.srv.sessionDone(s)
}

// writeLoop is one turn of the writer goroutine: it writes batches until
// the queue is empty, then ends (a later push starts the next turn), or,
// once the session is closing, says goodbye and ends for good.
func (s *session) writeLoop() {
	for {
		if s.isClosing() {
			s.goodbye(s.batch)
			s.endWriter()
			return
		}
		s.batch = s.out.take(s.batch)
		if len(s.batch) == 0 {
			if s.out.release(s.closing) {
				return
			}
			continue
		}
		ok := s.write(s.batch)
		clear(s.batch)
		if !ok {
			s.endWriter()
			return
		}
	}
}

// endWriter ends the last writer: the outbox keeps counting it as running,
// so no other starts, and the reader may close the socket.
func (s *session) endWriter() {
	if t := s.hb.Load(); t != nil {
		t.Stop()
	}
	s.batch = nil
	close(s.writerDone)
}

// startHeartbeat arms the idle-ping timer. Its callback runs on a timer
// goroutine only when due, instead of a writer goroutine waiting for it.
func (s *session) startHeartbeat() {
	// Stored before it is armed, so that the callback always finds it.
	t := time.AfterFunc(math.MaxInt64, s.heartbeat)
	s.hb.Store(t)
	t.Reset(s.cfg.HeartbeatIdle)
}

// heartbeat queues a ServerPing when the client has been silent for
// HeartbeatIdle (once per silence), closes the connection (4408) when it has
// been silent for HeartbeatTimeout, queues the session's next resume ticket
// when it is due, and otherwise re-arms itself for the next of these.
// Before the handshake is done the hello's read deadline bounds the
// connection instead.
func (s *session) heartbeat() {
	if s.isClosing() {
		return
	}
	next := s.cfg.HeartbeatIdle
	if s.established.Load() {
		now := time.Now()
		last := s.lastFrame.Load()
		idle := time.Duration(now.UnixNano() - last)
		switch {
		case idle >= s.cfg.HeartbeatTimeout:
			s.shutdown(ReasonHeartbeatTimeout)
			return
		case idle < s.cfg.HeartbeatIdle:
			next = s.cfg.HeartbeatIdle - idle
		default:
			if s.pingedFor.Swap(last) != last {
				s.send(&protocol.ServerPing{Nonce: s.pingNonce.Add(1), ServerTimeMs: now.UnixMilli()})
			}
			next = s.cfg.HeartbeatTimeout - idle
		}
		if due := s.resumeDue.Load(); due != 0 {
			untilDue := time.Duration(due - now.UnixNano())
			if untilDue <= 0 {
				s.sendResumeTicket(now)
				untilDue = time.Duration(s.resumeDue.Load() - now.UnixNano())
			}
			if untilDue > 0 {
				next = min(next, untilDue)
			}
		}
	}
	s.hb.Load().Reset(next)
}

// sendResumeTicket queues a fresh ServerResumeTicket for the session's own
// seat and sets when the next is due: at half the ticket's life, so the
// client holds one that is good for a while whenever its connection dies.
func (s *session) sendResumeTicket(now time.Time) {
	t, err := s.srv.tickets.IssueAt(now, s.matchID, s.seatNo)
	if err != nil {
		// The match id and seat came from a verified ticket, so this is a
		// broken random source: the session goes on without.
		s.srv.log.Error("edge: issue resume ticket", "match", s.matchID, "seat", s.seatNo, "err", err)
		s.resumeDue.Store(0)
		return
	}
	s.resumeDue.Store(now.Add(s.srv.tickets.TTL() / 2).UnixNano())
	s.send(&protocol.ServerResumeTicket{Ticket: t.Token, ExpiresAtMs: t.ExpiresAt.UnixMilli()})
	s.srv.metrics.resumeTickets.Add(1)
}

// write sends a batch; on failure it drops the connection.
func (s *session) write(batch [][]byte) bool {
	if len(batch) == 0 {
		return true
	}
	n, err := s.t.writeFrames(batch, time.Now().Add(s.cfg.WriteTimeout))
	k := s.t.kind()
	s.srv.metrics.bytesOut[k].Add(float64(n))
	if err != nil {
		s.shutdown(ReasonWriteFailed)
		// Also when the session was closing already for another reason
		// (shutdown closes the socket only for the first): the reader may
		// be waiting for the peer without a deadline, and must end.
		s.t.close()
		return false
	}
	s.srv.metrics.framesOut[k].Add(float64(len(batch)))
	return true
}

// goodbye flushes what is queued, writes the reason's final frames and
// half-closes, all within one WriteTimeout, then arms the linger. If a write
// fails it closes the socket: the peer is not reading, and the reader, which
// may be waiting for the peer without a deadline, must end.
func (s *session) goodbye(batch [][]byte) {
	r := s.reason
	if r.abortive() {
		return
	}
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	batch = s.out.take(batch)
	s.out.close()
	if len(batch) > 0 {
		n, err := s.t.writeFrames(batch, deadline)
		s.srv.metrics.bytesOut[s.t.kind()].Add(float64(n))
		if err != nil {
			s.t.close()
			return
		}
		s.srv.metrics.framesOut[s.t.kind()].Add(float64(len(batch)))
	}
	var errFrame []byte
	if ef, ok := r.errorFrame(s.tcp, s.lastSeq()); ok {
		b, err := protocol.EncodeServerFrame(ef)
		if err != nil {
			s.srv.log.Error("edge: encode closing error", "reason", r.String(), "err", err)
		} else {
			errFrame = b
			s.srv.metrics.framesOut[s.t.kind()].Add(1)
		}
	}
	if err := s.t.writeGoodbye(errFrame, r.CloseCode(), r.info().text, deadline); err != nil {
		s.t.close()
		return
	}
	s.t.closeWrite()
	s.dlMu.Lock()
	s.lingerUntil = time.Now().Add(s.cfg.CloseLinger)
	if err := s.t.setReadDeadline(s.lingerUntil); err != nil {
		s.lingerUntil = time.Time{}
	}
	s.dlMu.Unlock()
}

// logClosed writes the connection's one log line.
func (s *session) logClosed() {
	r := s.reason
	level := slog.LevelDebug
	if r == ReasonInternal || r == ReasonUnavailable {
		level = slog.LevelWarn
	}
	s.srv.log.Log(context.Background(), level, "edge: connection closed",
		"reason", r.String(),
		"transport", transportNames[s.t.kind()],
		"remote", s.t.remoteAddr(),
		"match", s.matchID,
		"seat", s.seatNo,
		"duration", time.Since(s.started).Round(time.Millisecond))
}
