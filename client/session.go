package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// TicketFunc returns a fresh ticket for the session's seat. Session calls it
// before every connection attempt (tickets are single use).
type TicketFunc func(ctx context.Context) (string, error)

// DefaultBackoff is the wait before each reconnection attempt
// (docs/protocol.md §4.6): at once, then 2, 10 and 30 seconds.
var DefaultBackoff = []time.Duration{0, 2 * time.Second, 10 * time.Second, 30 * time.Second}

// Config configures a Session. Zero fields take the default in their comment.
type Config struct {
	// Addr is "ws://host:port/game" or "tcp://host:port". Required.
	Addr string
	// Fallback are more addresses of the same cluster (any member serves
	// any seat). Each connection attempt after a failed one or a lost
	// connection goes to the next address, Addr first and round again, as
	// a load balancer would send it to a live member: a member that died
	// costs its sessions one refused dial, not a backoff. Empty: Addr only.
	Fallback []string
	// Ticket obtains a fresh ticket for each attempt, except the first
	// attempt after a lost connection, which uses the resume ticket the
	// server gave the lost connection when it has one (docs/protocol.md §4
	// point 7). Required.
	Ticket TicketFunc
	// NoResumeTickets: do not ask the server for resume tickets, so every
	// attempt calls Ticket.
	NoResumeTickets bool
	// ClientBuild goes into ClientHello for the server's logs.
	ClientBuild string
	// Backoff is the wait before attempt i (the last value repeats);
	// default DefaultBackoff.
	Backoff []time.Duration
	// MaxAttempts is how many connection attempts in a row may fail before
	// the session gives up (default len(Backoff); negative: never).
	MaxAttempts int
	// PingInterval: the session sends ClientPing when it has sent nothing
	// this long (default 15 s, under the server's 20 s idle).
	PingInterval time.Duration
	// ReadTimeout: nothing from the server this long means the connection
	// is dead and the session reconnects (default 45 s).
	ReadTimeout time.Duration
	// Dial tunes each connection.
	Dial DialOptions
	// Buffer is the capacity of the Frames channel (default 256). A full
	// channel stops reading from the network, so a stalled consumer is
	// eventually disconnected by the server and the session resumes.
	Buffer int
	// Logger receives connection events (default slog.Default()). Tickets
	// are never logged.
	Logger *slog.Logger
	// OnIntentResult, if set, is called with the result of each intent
	// sent by SendIntent and its round trip: from the start of the
	// intent's first send to the moment its result frame was read. It
	// runs on the session's reader, before the result reaches Frames, so
	// the time is the network's and the server's, not the time the
	// application took to look; it must not block. A duplicate result
	// (an intent re-sent after a reconnect) is not reported twice.
	OnIntentResult func(r *protocol.ServerIntentResult, roundTrip time.Duration)
	// OnReconnect, if set, is called each time the session has replaced a
	// lost connection, with how it went (Reconnect): where a reconnect's
	// time goes after a member died, seen from the client. It runs on the
	// session's goroutine after the new ServerHello was delivered; it must
	// not block.
	OnReconnect func(Reconnect)
}

// Reconnect is how a session got a lost connection back: when it saw the
// loss, how many attempts it took, and the phases of the one that
// succeeded.
type Reconnect struct {
	// Lost is when the session saw its connection end; Done when it read
	// the new connection's ServerHello.
	Lost, Done time.Time
	// Attempts counts the connection attempts, the successful one
	// included (1: the first succeeded; more: failures and their Backoff
	// waits are in Done minus Lost).
	Attempts int
	// Ticket, Dial and Hello are the successful attempt's phases: the
	// Ticket call (zero with a resume ticket), the dial (TCP and the
	// WebSocket upgrade), and from sending ClientHello to reading
	// ServerHello.
	Ticket, Dial, Hello time.Duration
	// ResumeTicket: the successful attempt used the lost connection's
	// resume ticket instead of calling Config.Ticket.
	ResumeTicket bool
}

// Session errors.
var (
	// ErrClosed: the session was closed by Close or Leave.
	ErrClosed = errors.New("client: session closed")
	// ErrNotConnected: no connection right now (the session is reconnecting).
	ErrNotConnected = errors.New("client: not connected")
	// ErrReplaced: another connection took the seat (close 4409); the
	// session does not fight it.
	ErrReplaced = errors.New("client: session replaced by another connection")
	// ErrGaveUp: MaxAttempts connection attempts in a row failed.
	ErrGaveUp = errors.New("client: could not connect")
	// ErrRejected: the server refused the session for good (unsupported
	// version or protocol violation).
	ErrRejected = errors.New("client: rejected by the server")
	// ErrSpectatorsFull: the match has as many spectators as it allows
	// (close 4429, docs/protocol.md §14.7). A session refused so on its
	// first connection ends at once; one that was watching keeps trying
	// per Backoff (its own lost connection may hold the place until the
	// server notices it is gone) and ends with ErrGaveUp wrapping this.
	// A caller shows it and may start a new session later.
	ErrSpectatorsFull = errors.New("client: the match has as many spectators as it allows")
)

// Session is a reconnecting protocol session for one seat. It performs the
// handshake, keeps lastSeq, hides duplicate events and event gaps (asking
// for a resync), re-sends unanswered intents after a reconnect (same
// intentId: the server answers duplicate=true if it already applied one),
// pings when idle, and keeps a local Board checked against every snapshot.
//
// Frames reach the application through Frames in order: ServerHello on every
// (re)connection, ServerSnapshot, ServerEvents (only events not seen before,
// never with a gap except for hidden events), ServerIntentResult,
// ServerClock and ServerError. Pings, pongs and resume tickets are handled
// inside.
type Session struct {
	cfg    Config
	log    *slog.Logger
	frames chan protocol.ServerFrame
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	conn        *Conn
	seat        int
	lastSeq     int64
	resyncAsked bool // a gap resync is in flight
	pending     []pendingIntent
	snapshot    *protocol.MatchView
	board       Board
	boardValid  bool
	checks      int
	mismatches  []string
	// viewChecks and viewMismatches are the same for the whole view.
	viewChecks     int
	viewMismatches []string
	// sawDecision: a Decision event arrived, so the server is
	// event-complete (docs/protocol.md §13).
	sawDecision bool
	leaving     bool
	reconnects  int
	offset      time.Duration
	pingSent    map[int64]time.Time
	lastSent    time.Time
	err         error
	// addrTurn counts connection attempts: the n-th dials address
	// n mod (1+len(Fallback)), Addr being address 0.
	addrTurn int
	// resume is the newest ServerResumeTicket of the current connection
	// (nil: none, or used). A bearer credential: never logged.
	resume *protocol.ServerResumeTicket
}

// resumeMargin is how long a resume ticket must still live, by the
// server's clock as the session estimates it, to be worth an attempt: one
// that expires on the way is refused, and that costs a round trip.
const resumeMargin = time.Second

const maxMismatches = 32

// pendingIntent is an intent sent and not yet answered.
type pendingIntent struct {
	f      *protocol.ClientIntent
	sentAt time.Time // when SendIntent began to send it (the round trip's start)
}

// Start connects (retrying per Backoff), completes the handshake and returns
// the running Session; it fails if no attempt succeeds. The session runs
// until Close, Leave, a final rejection, or ctx is done.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Addr == "" || cfg.Ticket == nil {
		return nil, errors.New("client: Config.Addr and Config.Ticket are required")
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if len(cfg.Backoff) == 0 {
		cfg.Backoff = []time.Duration{0}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = len(cfg.Backoff)
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 15 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 45 * time.Second
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Session{
		cfg:      cfg,
		log:      cfg.Logger,
		frames:   make(chan protocol.ServerFrame, cfg.Buffer),
		ctx:      sctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		seat:     -1,
		pingSent: make(map[int64]time.Time),
	}
	conn, _, err := s.connect(0)
	if err != nil {
		cancel()
		return nil, err
	}
	go s.run(conn)
	return s, nil
}

// Frames delivers the session's frames; it is closed when the session ends
// (then Err says why).
func (s *Session) Frames() <-chan protocol.ServerFrame { return s.frames }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the session ended: nil after Leave, ErrClosed after Close,
// ErrReplaced, ErrGaveUp, ErrRejected or ErrSpectatorsFull (wrapping the
// last error), or the context's error.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Seat is the seat index from the last ServerHello (-1 before).
func (s *Session) Seat() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seat
}

// LastSeq is the last eventSeq the session has taken in (it may be ahead of
// what the application has read from Frames).
func (s *Session) LastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq
}

// Snapshot returns the last snapshot received, or nil.
func (s *Session) Snapshot() *protocol.MatchView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot
}

// Board returns a copy of the local view kept from snapshots and events.
func (s *Session) Board() Board {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.board.clone()
}

// LegalIntents is what this seat may send now according to the local Board
// (the last Decision event, or the last snapshot), and the eventSeq the
// Board stands at. A client plays from it without asking for snapshots
// (docs/protocol.md §13). Empty before the first snapshot.
func (s *Session) LegalIntents() ([]protocol.Intent, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.boardValid {
		return nil, 0
	}
	return slices.Clone(s.board.LegalIntents()), s.board.EventSeq
}

// EventComplete reports whether the server has sent a Decision event, so
// batches carry the legal intents (docs/protocol.md §13). A server that
// does not (an older one) must be asked for a snapshot after every change.
func (s *Session) EventComplete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sawDecision
}

// ViewConsistency reports how many snapshots were compared with the whole
// view the Board keeps (MatchView, clock and names aside) and every
// difference found (at most 32). Only the bundled game's events keep a
// whole view; Consistency is the engine-independent check.
func (s *Session) ViewConsistency() (checked int, mismatches []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.viewChecks, append([]string(nil), s.viewMismatches...)
}

// Consistency reports how many snapshots were compared with the local Board
// (at the same eventSeq) and every difference found (at most 32).
func (s *Session) Consistency() (checked int, mismatches []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checks, append([]string(nil), s.mismatches...)
}

// Reconnects is how many times the session has reconnected.
func (s *Session) Reconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconnects
}

// ClockOffset estimates server time minus local time from ping round trips.
func (s *Session) ClockOffset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// PendingIntents is how many intents await their ServerIntentResult.
func (s *Session) PendingIntents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// NewIntentID returns a fresh random intent id (a UUID v4 string).
func NewIntentID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a time-based
		// id is still unique enough for one match if it ever did.
		return fmt.Sprintf("t-%d", time.Now().UnixNano())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// SendIntent sends an intent with a fresh intentId and returns the id. The
// intent is kept until its result arrives and re-sent, with the same id,
// after a reconnect; so it is not lost while the session reconnects.
func (s *Session) SendIntent(in protocol.Intent) (string, error) {
	if in == nil {
		return "", errors.New("client: nil intent")
	}
	id := NewIntentID()
	s.mu.Lock()
	if s.isDone() {
		s.mu.Unlock()
		return "", ErrClosed
	}
	f := &protocol.ClientIntent{IntentID: id, BasedOnSeq: s.lastSeq, Intent: in}
	s.pending = append(s.pending, pendingIntent{f: f, sentAt: time.Now()})
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		if err := s.send(conn, f); err != nil {
			// The connection is failing; the reconnect re-sends the intent.
			s.log.Debug("client: intent not sent now; will be re-sent", "err", err)
		}
	}
	return id, nil
}

// Resync asks for the events after LastSeq, or a full snapshot. It fails
// with ErrNotConnected while the session is (re)connecting; the hello of the
// next connection brings the missed state anyway.
func (s *Session) Resync(full bool) error {
	s.mu.Lock()
	conn := s.conn
	from := s.lastSeq + 1
	s.mu.Unlock()
	if conn == nil {
		return ErrNotConnected
	}
	if err := s.send(conn, &protocol.ClientResync{FromSeq: from, FullSnapshot: full}); err != nil {
		// The connection is failing; the reconnect's hello brings the state.
		return fmt.Errorf("%w: %w", ErrNotConnected, err)
	}
	return nil
}

// Leave sends ClientLeave, waits for the server to close (or ctx), and ends
// the session; Err is then nil.
func (s *Session) Leave(ctx context.Context, reason string) error {
	s.mu.Lock()
	s.leaving = true
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		// Reconnecting: there is no connection to leave; stop trying.
		s.Close()
		return nil
	}
	if err := s.send(conn, &protocol.ClientLeave{Reason: reason}); err != nil {
		s.Close()
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.Close()
		return fmt.Errorf("client: leave: %w", ctx.Err())
	}
}

// Drop closes the current connection the way a network failure would,
// without ClientLeave; the session reconnects and resumes. It is meant for
// chaos tests and bots.
func (s *Session) Drop() {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Close() // the failure is the point
	}
}

// Close ends the session at once.
func (s *Session) Close() {
	s.mu.Lock()
	if s.err == nil && !s.leaving {
		s.err = ErrClosed
	}
	conn := s.conn
	s.mu.Unlock()
	s.cancel()
	if conn != nil {
		_ = conn.Close() // ending anyway
	}
	<-s.done
}

func (s *Session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *Session) send(conn *Conn, f protocol.ClientFrame) error {
	err := conn.Send(f)
	if err == nil {
		s.mu.Lock()
		s.lastSent = time.Now()
		s.mu.Unlock()
	}
	return err
}

// connect makes attempts from number attempt on until one completes the
// handshake, or MaxAttempts fail in a row. The Reconnect has the attempts
// made and the successful one's phases (Lost unset).
func (s *Session) connect(attempt int) (*Conn, Reconnect, error) {
	var last error
	var rc Reconnect
	atOnce := false
	for ; s.cfg.MaxAttempts < 0 || attempt < s.cfg.MaxAttempts; attempt++ {
		wait := s.cfg.Backoff[min(attempt, len(s.cfg.Backoff)-1)]
		if atOnce {
			wait, atOnce = 0, false
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return nil, rc, fmt.Errorf("client: connect: %w", s.ctx.Err())
			}
		}
		rc.Attempts++
		conn, err := s.attempt(&rc)
		if err == nil {
			return conn, rc, nil
		}
		last = err
		if s.ctx.Err() != nil {
			return nil, rc, err
		}
		if rc.ResumeTicket && ticketRefused(err) {
			// Only the resume ticket was refused (expired by the server's
			// clock, or signed with a key the server no longer accepts):
			// a fresh ticket at once, and the refusal does not count as a
			// failed attempt.
			s.log.Info("client: resume ticket refused; asking for a fresh ticket", "err", err)
			rc.ResumeTicket = false
			attempt--
			atOnce = true
			continue
		}
		if final := finalError(err); final != nil {
			if !errors.Is(final, ErrSpectatorsFull) || !s.admitted() {
				return nil, rc, final
			}
			// A session that was watching may be refused because of its
			// own lost connection, which the match counts until the
			// server notices it is gone: that is a failed attempt.
			last = final
		}
		s.log.Info("client: connection attempt failed", "attempt", attempt+1, "err", err)
	}
	return nil, rc, fmt.Errorf("%w after %d attempts: %w", ErrGaveUp, attempt, last)
}

// nextAddr is the address of the next connection attempt: Addr at first,
// then each attempt after a failure or a lost connection the next of
// Fallback (Config.Fallback), so a live connection keeps its address.
func (s *Session) nextAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.addrTurn % (1 + len(s.cfg.Fallback))
	s.addrTurn++
	if n == 0 {
		return s.cfg.Addr
	}
	return s.cfg.Fallback[n-1]
}

// finalError is the session's error for a connection that ended in a way
// a new attempt cannot cure (close 4409, 4410, 4400, 4429), wrapping err;
// nil when the session should reconnect.
func finalError(err error) error {
	var ce *CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case protocol.CloseReplaced:
		return fmt.Errorf("%w: %w", ErrReplaced, err)
	case protocol.CloseUnsupportedVersion, protocol.CloseProtocolViolation:
		return fmt.Errorf("%w: %w", ErrRejected, err)
	case protocol.CloseSpectatorsFull:
		return fmt.Errorf("%w: %w", ErrSpectatorsFull, err)
	}
	return nil
}

// ticketRefused reports a connection closed because its ticket was refused
// (close 4401).
func ticketRefused(err error) bool {
	var ce *CloseError
	return errors.As(err, &ce) && ce.Code == protocol.CloseTicket
}

// takeResumeTicket returns the held resume ticket and forgets it (a ticket
// opens one connection); its Ticket is "" when there is none that is
// still good.
func (s *Session) takeResumeTicket() protocol.ServerResumeTicket {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resume
	s.resume = nil
	if r == nil || time.Now().Add(s.offset).Add(resumeMargin).UnixMilli() >= r.ExpiresAtMs {
		return protocol.ServerResumeTicket{}
	}
	return *r
}

// keepResumeTicket puts back a resume ticket that was taken but never sent,
// unless a newer one came meanwhile.
func (s *Session) keepResumeTicket(r protocol.ServerResumeTicket) {
	s.mu.Lock()
	if s.resume == nil {
		s.resume = &r
	}
	s.mu.Unlock()
}

// admitted reports whether a connection of this session has completed its
// handshake.
func (s *Session) admitted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seat >= 0
}

// attempt dials, says hello and reads ServerHello, timing each phase in rc.
func (s *Session) attempt(rc *Reconnect) (*Conn, error) {
	start := time.Now()
	resume := s.takeResumeTicket()
	ticket := resume.Ticket
	rc.ResumeTicket = ticket != ""
	if ticket == "" {
		var err error
		if ticket, err = s.cfg.Ticket(s.ctx); err != nil {
			return nil, fmt.Errorf("client: get ticket: %w", err)
		}
	}
	ticketed := time.Now()
	rc.Ticket = ticketed.Sub(start)
	conn, err := Dial(s.ctx, s.nextAddr(), s.cfg.Dial)
	if err != nil {
		if rc.ResumeTicket {
			// Never sent: still good for the next attempt.
			s.keepResumeTicket(resume)
		}
		return nil, err
	}
	dialled := time.Now()
	rc.Dial = dialled.Sub(ticketed)
	// Close unblocks a Recv waiting for the hello.
	stop := context.AfterFunc(s.ctx, func() { _ = conn.Close() })
	defer stop()
	s.mu.Lock()
	from := s.lastSeq
	s.mu.Unlock()
	hello := &protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: ticket, ClientBuild: s.cfg.ClientBuild,
		ResumeFromSeq: from, ResumeTickets: !s.cfg.NoResumeTickets}
	if err := s.send(conn, hello); err != nil {
		_ = conn.Close() // the attempt failed; report the send error
		return nil, err
	}
	if err := conn.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	for {
		f, err := conn.Recv()
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		switch f := f.(type) {
		case *protocol.ServerHello:
			rc.Done = time.Now()
			rc.Hello = rc.Done.Sub(dialled)
			if err := s.adopt(conn, f); err != nil {
				_ = conn.Close()
				return nil, err
			}
			return conn, nil
		case *protocol.ServerError:
			// A fatal error is followed by the close; Recv reports it.
			continue
		default:
			_ = conn.Close()
			return nil, fmt.Errorf("client: first frame %T, want ServerHello", f)
		}
	}
}

// adopt makes conn the session's connection after its ServerHello, delivers
// the hello and re-sends unanswered intents.
func (s *Session) adopt(conn *Conn, h *protocol.ServerHello) error {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return ErrClosed
	}
	s.conn = conn
	s.seat = h.PlayerIndex
	s.resyncAsked = false
	pending := make([]*protocol.ClientIntent, len(s.pending))
	for i, p := range s.pending {
		pending[i] = p.f
	}
	s.mu.Unlock()
	if !s.deliver(h) {
		return ErrClosed
	}
	for _, f := range pending {
		if err := s.send(conn, f); err != nil {
			return err
		}
	}
	return nil
}

// run is the session's goroutine: it reads the current connection and
// reconnects when it ends.
func (s *Session) run(conn *Conn) {
	defer close(s.done)
	defer close(s.frames)
	for {
		err := s.readLoop(conn)
		s.mu.Lock()
		s.conn = nil
		leaving := s.leaving
		s.mu.Unlock()
		_ = conn.Close() // already ended
		switch final := finalError(err); {
		case s.ctx.Err() != nil:
			s.finish(fmt.Errorf("client: %w", s.ctx.Err()))
			return
		case leaving:
			s.finish(nil)
			return
		case final != nil:
			s.finish(final)
			return
		}
		s.log.Info("client: connection lost; reconnecting", "err", err)
		lost := time.Now()
		next, rc, cerr := s.connect(0)
		if cerr != nil {
			s.finish(cerr)
			return
		}
		s.mu.Lock()
		s.reconnects++
		s.mu.Unlock()
		conn = next
		if s.cfg.OnReconnect != nil {
			rc.Lost = lost
			s.cfg.OnReconnect(rc)
		}
	}
}

func (s *Session) finish(err error) {
	s.mu.Lock()
	if s.err == nil && !(s.leaving && err == nil) {
		s.err = err
	}
	s.mu.Unlock()
}

// readLoop reads one connection until it ends, with a pinger beside it.
func (s *Session) readLoop(conn *Conn) error {
	p := s.startPinger(conn)
	defer p.stop()
	for {
		if err := conn.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)); err != nil {
			return err
		}
		f, err := conn.Recv()
		if err != nil {
			return err
		}
		if !s.handle(conn, f, time.Now()) {
			return ErrClosed
		}
	}
}

// pinger sends ClientPing on one connection whenever the session has sent
// nothing for PingInterval. It is a timer rather than a goroutine with a
// ticker: it runs only when a ping may be due, so a session that sends
// costs no wake-ups between its own frames (a load tool holds thousands of
// sessions, whose tickers woke it more often than a quarter of its intents).
type pinger struct {
	s    *Session
	conn *Conn

	mu      sync.Mutex // held while a ping is sent, so stop waits for it
	t       *time.Timer
	nonce   int64
	stopped bool
}

func (s *Session) startPinger(conn *Conn) *pinger {
	p := &pinger{s: s, conn: conn}
	p.mu.Lock()
	// The handshake just passed frames both ways: the first ping is due
	// PingInterval from now at the earliest.
	p.t = time.AfterFunc(s.cfg.PingInterval, p.fire)
	p.mu.Unlock()
	return p
}

// untilDue is how long until the session has been silent for PingInterval
// (zero if it already has).
func (p *pinger) untilDue(now time.Time) time.Duration {
	p.s.mu.Lock()
	idle := now.Sub(p.s.lastSent)
	p.s.mu.Unlock()
	return max(p.s.cfg.PingInterval-idle, 0)
}

// fire pings if the session is still silent, and arms the next check.
func (p *pinger) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	s := p.s
	now := time.Now()
	if wait := p.untilDue(now); wait > 0 {
		p.t.Reset(wait)
		return
	}
	p.nonce++
	s.mu.Lock()
	s.pingSent[p.nonce] = now
	for k := range s.pingSent {
		if k < p.nonce-8 {
			delete(s.pingSent, k)
		}
	}
	s.mu.Unlock()
	if err := s.send(p.conn, &protocol.ClientPing{Nonce: p.nonce, ClientTimeMs: now.UnixMilli()}); err != nil {
		return // the connection is ending: its reader stops the pinger
	}
	p.t.Reset(s.cfg.PingInterval)
}

// stop ends the pinger; a ping being sent finishes first.
func (p *pinger) stop() {
	p.mu.Lock()
	p.stopped = true
	p.t.Stop()
	p.mu.Unlock()
}

// handle processes one frame; false means the session is closed.
func (s *Session) handle(conn *Conn, f protocol.ServerFrame, readAt time.Time) bool {
	switch f := f.(type) {
	case *protocol.ServerPing:
		if err := s.send(conn, &protocol.ClientPong{Nonce: f.Nonce}); err != nil {
			s.log.Debug("client: pong not sent", "err", err)
		}
		return true
	case *protocol.ServerPong:
		s.mu.Lock()
		if sent, ok := s.pingSent[f.Nonce]; ok {
			delete(s.pingSent, f.Nonce)
			rtt := time.Since(sent)
			s.offset = time.UnixMilli(f.ServerTimeMs).Sub(sent.Add(rtt / 2))
		}
		s.mu.Unlock()
		return true
	case *protocol.ServerResumeTicket:
		// Kept for the next reconnect, not delivered: the application has
		// its own ticket source, and this one is only good for the seat
		// this session already holds.
		s.mu.Lock()
		s.resume = f
		s.mu.Unlock()
		return true
	case *protocol.ServerSnapshot:
		s.takeSnapshot(&f.View)
		return s.deliver(f)
	case *protocol.ServerEvents:
		out, resync := s.takeEvents(f)
		if resync != nil {
			if err := s.send(conn, resync); err != nil {
				s.log.Debug("client: resync not sent", "err", err)
			}
		}
		if out == nil {
			return true
		}
		return s.deliver(out)
	case *protocol.ServerClock:
		s.mu.Lock()
		s.board.SetClock(f.Clock)
		s.mu.Unlock()
		return s.deliver(f)
	case *protocol.ServerIntentResult:
		var sentAt time.Time
		s.mu.Lock()
		for i, p := range s.pending {
			if p.f.IntentID == f.IntentID {
				sentAt = p.sentAt
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		if !sentAt.IsZero() && s.cfg.OnIntentResult != nil {
			s.cfg.OnIntentResult(f, readAt.Sub(sentAt))
		}
		return s.deliver(f)
	default:
		return s.deliver(f)
	}
}

// wholeViewDiff compares the Board's whole view with a snapshot at the same
// seq when the server is event-complete (counted in viewChecks); nil
// otherwise. The caller holds mu.
func (s *Session) wholeViewDiff(v *protocol.MatchView) []string {
	if !s.sawDecision {
		return nil
	}
	s.viewChecks++
	return s.board.ViewDiff(v)
}

func (s *Session) takeSnapshot(v *protocol.MatchView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := BoardFromView(v)
	if s.boardValid && s.board.EventSeq == v.EventSeq {
		s.checks++
		for _, d := range s.board.Diff(fresh) {
			if len(s.mismatches) < maxMismatches {
				s.mismatches = append(s.mismatches, fmt.Sprintf("seq %d: %s", v.EventSeq, d))
			}
		}
		// Only an event-complete server's events keep a whole view.
		for _, d := range s.wholeViewDiff(v) {
			if len(s.viewMismatches) < maxMismatches {
				s.viewMismatches = append(s.viewMismatches, fmt.Sprintf("seq %d: %s", v.EventSeq, d))
			}
		}
	}
	s.board, s.boardValid = fresh, true
	s.snapshot = v
	s.lastSeq = v.EventSeq
	s.resyncAsked = false
}

// takeEvents applies a ServerEvents frame to lastSeq and the board. It
// returns what to deliver (nil: nothing new) and a resync to send when the
// frame leaves a gap.
func (s *Session) takeEvents(f *protocol.ServerEvents) (*protocol.ServerEvents, *protocol.ClientResync) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.FromSeq > f.ToSeq {
		// An empty resync answer: up to date. Deliver it so that a caller
		// waiting for the answer sees one.
		return f, nil
	}
	if f.FromSeq > s.lastSeq+1 {
		// Something is missing: ask once; the answer covers this frame.
		if s.resyncAsked {
			return nil, nil
		}
		s.resyncAsked = true
		return nil, &protocol.ClientResync{FromSeq: s.lastSeq + 1}
	}
	if f.ToSeq <= s.lastSeq {
		return nil, nil // all seen
	}
	out := &protocol.ServerEvents{FromSeq: max(f.FromSeq, s.lastSeq+1), ToSeq: f.ToSeq}
	for _, e := range f.Events {
		if e.Seq <= s.lastSeq {
			continue
		}
		out.Events = append(out.Events, e)
		if e.Event.EventKind() == protocol.EventDecision {
			s.sawDecision = true
		}
		if s.boardValid {
			s.board.Apply(e)
		}
	}
	s.lastSeq = f.ToSeq
	if s.boardValid {
		s.board.SetSeq(f.ToSeq)
	}
	s.resyncAsked = false
	return out, nil
}

// deliver hands a frame to the application; false when the session ends first.
func (s *Session) deliver(f protocol.ServerFrame) bool {
	select {
	case s.frames <- f:
		return true
	case <-s.ctx.Done():
		return false
	}
}
