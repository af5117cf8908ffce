package edge

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/matchgrain/matchgrain/internal/deadline"
)

// ErrServerClosed is returned by ServeTCP after Shutdown.
var ErrServerClosed = errors.New("edge: server closed")

// Server is an edge node: the /game WebSocket endpoint, the TCP fallback
// listener and the HTTP API, in front of a Matches implementation. It is safe
// for concurrent use.
type Server struct {
	cfg     Config
	matches Matches
	tickets *Ticketer
	log     *slog.Logger
	metrics *metrics
	limits  *connLimiter
	// adminTokens are the SHA-256 of AdminToken and AdminTokensPrevious.
	adminTokens [][sha256.Size]byte
	// metricsHandler serves cfg.Registry at GET /metrics.
	metricsHandler http.Handler

	play *playLimits
	// callDeadline bounds sessions' calls into Matches by RequestTimeout;
	// the calls of one tick share the deadline's timer (internal/deadline).
	callDeadline *deadline.Shared

	upgrader  websocket.Upgrader
	origins   map[string]bool
	anyOrigin bool
	handler   http.Handler

	mu        sync.Mutex
	draining  bool
	sessions  map[*session]struct{}
	listeners map[net.Listener]struct{}
	wg        sync.WaitGroup // session goroutines
}

// New checks cfg (zero fields take their defaults, see Config) and returns a
// Server that routes sessions to matches.
func New(cfg Config, matches Matches) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("edge config: %w", err)
	}
	if matches == nil {
		return nil, errors.New("edge config: matches must not be nil")
	}
	tickets, err := NewTicketer(cfg.TicketKey, cfg.TicketTTL, cfg.TicketPreviousKeys...)
	if err != nil {
		return nil, fmt.Errorf("edge config: %w", err)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("edge config: %w", err)
	}
	s := &Server{
		metrics: m,
		metricsHandler: promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn), ErrorHandling: promhttp.ContinueOnError,
		}),
		limits:    newConnLimiter(cfg),
		cfg:       cfg,
		matches:   matches,
		tickets:   tickets,
		log:       cfg.Logger,
		origins:   make(map[string]bool),
		sessions:  make(map[*session]struct{}),
		listeners: make(map[net.Listener]struct{}),

		callDeadline: deadline.New(context.Background(), cfg.RequestTimeout),
	}
	s.play = newPlayLimits(&s.cfg, time.Now())
	for _, o := range cfg.AllowedOrigins {
		if o == "*" {
			s.anyOrigin = true
			continue
		}
		n, err := parseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("edge config: allowed-origins: %w", err)
		}
		s.origins[n] = true
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.HelloTimeout,
		// 0: gorilla reads through the buffered reader corkingWriter's
		// Hijack hands it (streamReadBuffer bytes, not net/http's 4 KiB),
		// which the session can see into.
		ReadBufferSize:  0,
		WriteBufferSize: 4 << 10,
		// Idle connections give their write buffer back to the pool.
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     s.checkOrigin,
	}
	for _, t := range append([]string{cfg.AdminToken}, cfg.AdminTokensPrevious...) {
		s.adminTokens = append(s.adminTokens, sha256.Sum256([]byte(t)))
	}
	s.handler = s.routes()
	if err := s.registerLimitMetrics(); err != nil {
		return nil, fmt.Errorf("edge config: %w", err)
	}
	return s, nil
}

// Tickets returns the server's ticket issuer and verifier.
func (s *Server) Tickets() *Ticketer { return s.tickets }

// Handler returns the HTTP handler: /game (WebSocket), /api/* (bearer
// token), /healthz and /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// checkOrigin is the browser Origin allow-list. A request without Origin is
// not from a browser and cannot be cross-site: it is allowed.
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || s.anyOrigin {
		return true
	}
	n, err := parseOrigin(origin)
	if err != nil {
		return false
	}
	if len(s.origins) > 0 {
		return s.origins[n]
	}
	// No list: same host only (the gorilla default).
	_, host, _ := strings.Cut(n, "://")
	return strings.EqualFold(host, r.Host)
}

// serveGame upgrades /game to a WebSocket session.
func (s *Server) serveGame(w http.ResponseWriter, r *http.Request) int {
	if s.isDraining() {
		WriteError(w, http.StatusServiceUnavailable, "shutting_down", "server is shutting down")
		return http.StatusServiceUnavailable
	}
	if !s.checkOrigin(r) {
		WriteError(w, http.StatusForbidden, "origin_not_allowed", "origin not allowed")
		return http.StatusForbidden
	}
	cw := &corkingWriter{ResponseWriter: w}
	c, err := s.upgrader.Upgrade(cw, r, nil)
	if err != nil {
		// Upgrade has written the HTTP error response.
		s.log.Debug("edge: websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return http.StatusBadRequest
	}
	s.startSession(newWSTransport(c, cw.conn, cw.br))
	return http.StatusSwitchingProtocols
}

// ServeTCP accepts TCP fallback connections on l until l fails or Shutdown
// is called; then it returns ErrServerClosed. l is closed on return.
func (s *Server) ServeTCP(l net.Listener) error {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		_ = l.Close() // refused before use; nothing to report
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	raw := l
	l = &limitedListener{Listener: raw, srv: s, isTCP: true}
	defer func() {
		s.mu.Lock()
		delete(s.listeners, raw)
		s.mu.Unlock()
		_ = l.Close() // may already be closed by Shutdown
	}()
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isDraining() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("edge: tcp listener: %w", err)
			}
			// Out of file descriptors and the like: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("edge: tcp accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if s.notAdmitted() != nil {
			_ = c.Close() // a node outside its cluster serves no player
			continue
		}
		s.startSession(newTCPTransport(c))
	}
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

func (s *Server) startSession(t transport) {
	sess := newSession(s, t)
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		t.close()
		return
	}
	s.sessions[sess] = struct{}{}
	// Only the reader is counted: it ends after the last writer (it waits
	// for writerDone), and writers come and go with the traffic.
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.connections[t.kind()].Add(1)
	s.metrics.connectionsTotal[t.kind()].Add(1)
	sess.startHeartbeat()
	go sess.readLoop()
}

// sessionDone is the last thing a session's reader does (on whichever
// goroutine reads for it by then: see session.park).
func (s *Server) sessionDone(sess *session) {
	defer s.wg.Done()
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
	s.metrics.connections[sess.t.kind()].Add(-1)
	s.metrics.closes[sess.reason].Add(1)
	sess.logClosed()
}

// Shutdown stops accepting connections (TCP listeners are closed, /game and
// /healthz answer 503), closes every session with 1001 (TCP: a fatal
// ServerError Internal) so that clients reconnect to another edge, and waits
// for the sessions to end or ctx to be done; then the remaining sockets are
// closed at once. The HTTP server that serves Handler is the caller's: shut
// it down too (hijacked WebSocket connections are not its concern).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	for l := range s.listeners {
		_ = l.Close() // ServeTCP reports ErrServerClosed; the close error adds nothing
	}
	sessions := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	for _, sess := range sessions {
		sess.shutdown(ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, sess := range sessions {
			sess.t.close()
		}
		return fmt.Errorf("edge: shutdown: %w", ctx.Err())
	}
}
