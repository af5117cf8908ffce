package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/matchgrain/matchgrain/internal/sockio"
	"github.com/matchgrain/matchgrain/protocol"
)

// DialOptions tune Dial. The zero value is usable.
type DialOptions struct {
	// Origin is sent as the WebSocket Origin header (empty: none, as
	// non-browser clients do).
	Origin string
	// DialTimeout bounds connecting and the WebSocket upgrade (default 10 s).
	DialTimeout time.Duration
	// WriteTimeout bounds each frame written (default 10 s).
	WriteTimeout time.Duration
	// LocalAddr, if set, is the local IP address the connection binds to
	// (unset: the system chooses). One local address has one range of
	// ephemeral ports toward a server, so a load generator holding more
	// connections than that spreads them over several addresses.
	LocalAddr netip.Addr
}

const (
	defaultDialTimeout  = 10 * time.Second
	defaultWriteTimeout = 10 * time.Second
	// closeAbnormal is what a connection that ended without a close code
	// reports (RFC 6455 §7.1.5).
	closeAbnormal = 1006
)

// CloseError is how a connection ended. On WebSocket Code is the close code;
// on TCP, which has no close codes, it is derived from the final fatal
// ServerError (docs/protocol.md §9.6): the same numbers on both transports.
type CloseError struct {
	// Code is the close code (4401, 4409, ...); 1006 when the connection
	// ended without one.
	Code int
	// Text is the WebSocket close reason (empty on TCP).
	Text string
	// ServerError is the last fatal ServerError received, if any.
	ServerError *protocol.ServerError
}

// Error implements error.
func (e *CloseError) Error() string {
	if e.ServerError != nil {
		return fmt.Sprintf("connection closed: %d (server error %d: %s)", e.Code, e.ServerError.Code, e.ServerError.Message)
	}
	if e.Text != "" {
		return fmt.Sprintf("connection closed: %d %s", e.Code, e.Text)
	}
	return fmt.Sprintf("connection closed: %d", e.Code)
}

// CloseCodeFor returns the WebSocket close code that a fatal ServerError
// stands for on TCP.
func CloseCodeFor(code protocol.ErrorCode) int {
	switch code {
	case protocol.ErrorUnsupportedVersion:
		return protocol.CloseUnsupportedVersion
	case protocol.ErrorInvalidTicket, protocol.ErrorTicketExpired, protocol.ErrorMatchNotFound:
		return protocol.CloseTicket
	case protocol.ErrorMalformedFrame:
		return protocol.CloseProtocolViolation
	case protocol.ErrorRateLimited:
		return protocol.CloseRateLimited
	case protocol.ErrorHeartbeatTimeout:
		return protocol.CloseHeartbeatTimeout
	case protocol.ErrorSessionReplaced:
		return protocol.CloseReplaced
	case protocol.ErrorMatchFinished:
		return protocol.CloseNormal
	case protocol.ErrorSpectatorsFull:
		return protocol.CloseSpectatorsFull
	default:
		return protocol.CloseInternal
	}
}

// Conn is one protocol connection over WebSocket or TCP, without
// reconnection (Session adds that). Send may be called from any goroutine;
// Recv from one goroutine at a time.
type Conn struct {
	ws           *websocket.Conn
	tcp          net.Conn
	fr           *protocol.FrameReader
	writeTimeout time.Duration

	wmu sync.Mutex // one writer at a time (gorilla's contract)

	// Owned by the Recv goroutine.
	lastFatal *protocol.ServerError
	left      bool
	leftMu    sync.Mutex
}

// Dial connects to addr: "ws://host:port/game" (or wss://; the path
// defaults to /game) or "tcp://host:port" for the TCP fallback.
func Dial(ctx context.Context, addr string, opts DialOptions) (*Conn, error) {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("client: parse address %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	dial := dialTCP
	if opts.LocalAddr.IsValid() {
		local := net.TCPAddrFromAddrPort(netip.AddrPortFrom(opts.LocalAddr, 0))
		dial = sockio.WrapDial((&net.Dialer{LocalAddr: local}).DialContext)
	}
	switch u.Scheme {
	case "ws", "wss":
		if u.Path == "" || u.Path == "/" {
			u.Path = "/game"
		}
		var header http.Header
		if opts.Origin != "" {
			header = http.Header{"Origin": []string{opts.Origin}}
		}
		d := websocket.Dialer{HandshakeTimeout: opts.DialTimeout, ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10,
			NetDialContext: dial}
		ws, resp, err := d.DialContext(ctx, u.String(), header)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			if resp != nil {
				return nil, fmt.Errorf("client: dial %s: HTTP %d: %w", u.Redacted(), resp.StatusCode, err)
			}
			return nil, fmt.Errorf("client: dial %s: %w", u.Redacted(), err)
		}
		ws.SetReadLimit(protocol.MaxFrameBytes)
		return &Conn{ws: ws, writeTimeout: opts.WriteTimeout}, nil
	case "tcp":
		c, err := dial(ctx, "tcp", u.Host)
		if err != nil {
			return nil, fmt.Errorf("client: dial tcp %s: %w", u.Host, err)
		}
		return &Conn{tcp: c, fr: protocol.NewFrameReader(c, protocol.MaxFrameBytes), writeTimeout: opts.WriteTimeout}, nil
	default:
		return nil, fmt.Errorf("client: address %q: scheme must be ws, wss or tcp", addr)
	}
}

// dialTCP connects sockets that read and write as the server's do (package
// sockio): a bot or load generator holding thousands of quiet connections
// saves the same runtime bookkeeping per call as a node does.
var dialTCP = sockio.WrapDial((&net.Dialer{}).DialContext)

// Transport returns "ws" or "tcp".
func (c *Conn) Transport() string {
	if c.ws != nil {
		return "ws"
	}
	return "tcp"
}

// Send encodes and writes one frame.
func (c *Conn) Send(f protocol.ClientFrame) error {
	b, err := protocol.EncodeClientFrame(f)
	if err != nil {
		return fmt.Errorf("client: encode %T: %w", f, err)
	}
	if _, ok := f.(*protocol.ClientLeave); ok {
		c.leftMu.Lock()
		c.left = true
		c.leftMu.Unlock()
	}
	return c.SendRaw(b)
}

// SendRaw writes one already encoded frame (tests use it to send garbage).
func (c *Conn) SendRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	deadline := time.Now().Add(c.writeTimeout)
	if c.ws != nil {
		if err := c.ws.SetWriteDeadline(deadline); err != nil {
			return fmt.Errorf("client: set write deadline: %w", err)
		}
		if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
			return fmt.Errorf("client: write: %w", err)
		}
		return nil
	}
	if err := c.tcp.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("client: set write deadline: %w", err)
	}
	if err := protocol.WriteFrame(c.tcp, b); err != nil {
		return fmt.Errorf("client: write: %w", err)
	}
	return nil
}

// SetReadDeadline bounds the Recv calls to come (zero: no deadline).
func (c *Conn) SetReadDeadline(t time.Time) error {
	var err error
	if c.ws != nil {
		err = c.ws.SetReadDeadline(t)
	} else {
		err = c.tcp.SetReadDeadline(t)
	}
	if err != nil {
		return fmt.Errorf("client: set read deadline: %w", err)
	}
	return nil
}

// Recv returns the next server frame. When the connection ends it returns a
// *CloseError (or the network error, such as a passed read deadline).
func (c *Conn) Recv() (protocol.ServerFrame, error) {
	var b []byte
	if c.ws != nil {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return nil, &CloseError{Code: ce.Code, Text: ce.Text, ServerError: c.lastFatal}
			}
			if isEOF(err) {
				return nil, c.endOfStream()
			}
			return nil, fmt.Errorf("client: read: %w", err)
		}
		if mt != websocket.BinaryMessage {
			return nil, fmt.Errorf("client: server sent a non-binary message (type %d)", mt)
		}
		b = data
	} else {
		data, err := c.fr.ReadFrame()
		if err != nil {
			if isEOF(err) {
				return nil, c.endOfStream()
			}
			return nil, fmt.Errorf("client: read: %w", err)
		}
		b = data
	}
	f, err := protocol.DecodeServerFrame(b)
	if err != nil {
		return nil, fmt.Errorf("client: decode server frame: %w", err)
	}
	if e, ok := f.(*protocol.ServerError); ok && e.Fatal {
		c.lastFatal = e
	}
	return f, nil
}

// endOfStream turns a plain end of stream into a CloseError: on TCP the last
// fatal ServerError names the code; after our own ClientLeave it is 1000.
func (c *Conn) endOfStream() error {
	c.leftMu.Lock()
	left := c.left
	c.leftMu.Unlock()
	switch {
	case c.lastFatal != nil:
		return &CloseError{Code: CloseCodeFor(c.lastFatal.Code), ServerError: c.lastFatal}
	case left:
		return &CloseError{Code: protocol.CloseNormal}
	default:
		return &CloseError{Code: closeAbnormal}
	}
}

func isEOF(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

// Close closes the connection at once, without a goodbye.
func (c *Conn) Close() error {
	var err error
	if c.ws != nil {
		err = c.ws.Close()
	} else {
		err = c.tcp.Close()
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("client: close: %w", err)
	}
	return nil
}
