package edge

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/internal/sockio"
	"github.com/matchgrain/matchgrain/protocol"
)

// Connection limits (docs/security.md). A connection counts against
// MaxConnections and MaxConnectionsPerAddress from accept to close, and
// against MaxHandshakes from accept until it has proven it is a player: a
// WebSocket or TCP session whose ClientHello opened a seat, or an HTTP
// connection that finished a request. Unauthenticated connections are what
// an attacker can make for free, so they get the tightest bound; together
// with the hello, header and body deadlines this keeps slowloris and
// connection floods from starving the players of matches already running.

// refusalWriteTimeout bounds the one write that tells a refused connection
// why; the accept loop does not wait longer for a peer that does not read.
const refusalWriteTimeout = 50 * time.Millisecond

// connLimiter counts open and handshaking connections, per client address
// and in total. Its methods are safe for concurrent use.
type connLimiter struct {
	maxTotal, maxPerAddr, maxHandshakes int

	mu         sync.Mutex // guards the fields below
	total      int
	handshakes int
	perAddr    map[string]int
}

func newConnLimiter(cfg Config) *connLimiter {
	return &connLimiter{maxTotal: cfg.MaxConnections, maxPerAddr: cfg.MaxConnectionsPerAddress,
		maxHandshakes: cfg.MaxHandshakes, perAddr: make(map[string]int)}
}

// addrKey groups client addresses: one IPv4 address, or one IPv6 /64 (a
// single host usually owns a whole /64, and could otherwise use a new
// address per connection).
func addrKey(a net.Addr) string {
	var ip net.IP
	switch v := a.(type) {
	case *net.TCPAddr:
		ip = v.IP
	case *net.IPAddr:
		ip = v.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// admit takes a slot for a new connection from key, or returns the reason
// it is refused.
func (l *connLimiter) admit(key string) CloseReason {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= l.maxTotal:
		return ReasonConnLimitTotal
	case l.perAddr[key] >= l.maxPerAddr:
		return ReasonConnLimitAddress
	case l.handshakes >= l.maxHandshakes:
		return ReasonHandshakeLimit
	}
	l.total++
	l.handshakes++
	l.perAddr[key]++
	return 0
}

func (l *connLimiter) handshakeDone() {
	l.mu.Lock()
	l.handshakes--
	l.mu.Unlock()
}

func (l *connLimiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perAddr[key]--; l.perAddr[key] <= 0 {
		delete(l.perAddr, key)
	}
}

func (l *connLimiter) counts() (total, handshakes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.handshakes
}

// limitedConn is a connection admitted by a limitedListener; closing it (or
// finishing its handshake) gives its slots back, once.
type limitedConn struct {
	net.Conn
	lim         *connLimiter
	key         string
	handshaking atomic.Bool
	closeOnce   sync.Once
}

func (c *limitedConn) handshakeDone() {
	if c.handshaking.CompareAndSwap(true, false) {
		c.lim.handshakeDone()
	}
}

// Close releases the slots and closes the connection.
func (c *limitedConn) Close() error {
	c.closeOnce.Do(func() {
		c.handshakeDone()
		c.lim.release(c.key)
	})
	return c.Conn.Close()
}

// WriteWithin passes sockio.WriteWithin on to the socket: a wrapper must
// not hide it, or every write would set the deadline again.
func (c *limitedConn) WriteWithin(p []byte, deadline time.Time) (int, error) {
	return sockio.WriteWithin(c.Conn, p, deadline)
}

// CloseWrite half-closes the connection where the inner one can (halfClose
// looks for it).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// limitedListener applies the Server's connection limits at accept.
// Refused connections are told why (an HTTP 429/503 or a fatal ServerError
// on TCP), counted in matchgrain_edge_closes_total under their reason, and
// closed; Accept then waits for the next one.
type limitedListener struct {
	net.Listener
	srv   *Server
	isTCP bool
}

// LimitListener wraps l, on which the caller serves HTTP (Handler or
// HTTPServer), with the connection limits of the Server's Config.
// ServeTCP applies them to its listener itself.
func (s *Server) LimitListener(l net.Listener) net.Listener {
	return &limitedListener{Listener: l, srv: s}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addrKey(c.RemoteAddr())
		if r := l.srv.limits.admit(key); r != 0 {
			l.srv.refuse(c, r, l.isTCP)
			continue
		}
		lc := &limitedConn{Conn: sockio.Wrap(c), lim: l.srv.limits, key: key}
		lc.handshaking.Store(true)
		return lc, nil
	}
}

// refuse tells c why it is refused, counts it and closes it.
func (s *Server) refuse(c net.Conn, r CloseReason, tcp bool) {
	s.metrics.closes[r].Inc()
	_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout)) // best effort: the close follows anyway
	if tcp {
		if f, ok := r.errorFrame(true, 0); ok {
			if b, err := protocol.EncodeServerFrame(f); err == nil {
				_ = protocol.WriteFrame(c, b) // best effort, as above
			}
		}
	} else {
		status := http.StatusServiceUnavailable
		if r == ReasonConnLimitAddress {
			status = http.StatusTooManyRequests
		}
		body := fmt.Sprintf(`{"error":%q,"message":%q}`+"\n", r.String(), r.info().text)
		_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s",
			status, http.StatusText(status), len(body), body) // best effort, as above
	}
	_ = c.Close() // nothing more to tell it
}

// handshakeDone marks t's connection as past its handshake (a seat is open).
func handshakeDone(t transport) {
	var c net.Conn
	switch v := t.(type) {
	case *wsTransport:
		c = v.c.NetConn()
	case *tcpTransport:
		c = v.conn
	}
	if lc, ok := c.(*limitedConn); ok {
		lc.handshakeDone()
	}
}

// HTTPServer returns an http.Server for Handler with the edge's HTTP limits:
// header and body read deadlines, a write deadline, an idle deadline and a
// header size bound. Serve it on LimitListener(l). A hijacked /game
// connection leaves these deadlines behind: the session sets its own.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.HTTPHeaderTimeout,
		ReadTimeout:       s.cfg.HTTPReadTimeout,
		WriteTimeout:      s.cfg.HTTPWriteTimeout,
		IdleTimeout:       s.cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ConnState: func(c net.Conn, st http.ConnState) {
			// A finished request proves an HTTP client, not an attacker
			// holding a half-sent request; /game connections are hijacked
			// and stay handshaking until their ClientHello.
			if st == http.StateIdle {
				if lc, ok := c.(*limitedConn); ok {
					lc.handshakeDone()
				}
			}
		},
	}
}

// registerLimitMetrics exports what the limits count, so that an operator
// sees how close to them the edge runs (refusals are in
// matchgrain_edge_closes_total under their reasons).
func (s *Server) registerLimitMetrics() error {
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "matchgrain_edge_limited_connections",
		Help: "Open connections on limited listeners (HTTP and TCP, handshaking or not).",
	}, func() float64 { t, _ := s.limits.counts(); return float64(t) })
	hs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "matchgrain_edge_handshakes",
		Help: "Connections on limited listeners that have not finished an HTTP request or opened a seat.",
	}, func() float64 { _, h := s.limits.counts(); return float64(h) })
	for _, c := range []prometheus.Collector{open, hs} {
		if err := s.cfg.Registry.Register(c); err != nil {
			return fmt.Errorf("register edge limit metrics: %w", err)
		}
	}
	return nil
}
