package edge

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/internal/sockio"
)

// corkConn sits between gorilla/websocket and the socket so that a batch of
// messages leaves in one write system call. gorilla writes every message
// (and every control frame) with its own Write; between cork and uncork
// those writes only append to a buffer, and uncork sends the buffer at once.
// gorilla still frames, orders and locks everything itself, so a pong or
// close frame the reader goroutine writes meanwhile lands between two whole
// messages and leaves with the batch.
//
// corkConn also owns the socket's write deadline: gorilla sets it before
// every frame, and corkConn only records it and writes with
// sockio.WriteWithin, which sets it on the socket only when a write has to
// wait. A deadline set on a socket is a runtime timer; set per write, every
// connection kept one in the runtime's timer heaps (docs/performance.md).
//
// The buffer comes from a pool and goes back after each batch: an idle
// connection holds none. A batch larger than corkFlushAt leaves in writes of
// about that size, so a batch never costs more than that in extra memory
// and a client that stops reading blocks the writer (until its deadline)
// as early as without the buffer.
type corkConn struct {
	net.Conn

	mu     sync.Mutex
	corked bool
	buf    *[]byte
	// writeBy is the write deadline gorilla set last; see SetWriteDeadline.
	writeBy time.Time
}

// corkFlushAt is the buffered size at which a corked connection writes
// what it holds without waiting for uncork; corkBufKeep is the largest
// buffer returned to the pool (one large frame can overshoot corkFlushAt).
const (
	corkFlushAt = 64 << 10
	corkBufKeep = 2 * corkFlushAt
)

var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// Write appends to the batch while corked and writes through otherwise.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return sockio.WriteWithin(c.Conn, p, c.writeBy)
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= corkFlushAt {
		_, err := sockio.WriteWithin(c.Conn, *c.buf, c.writeBy)
		*c.buf = (*c.buf)[:0]
		if err != nil {
			return 0, fmt.Errorf("write websocket batch: %w", err)
		}
	}
	return len(p), nil
}

// SetWriteDeadline records t for the writes that follow; it does not touch
// the socket (see corkConn).
func (c *corkConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeBy = t
	c.mu.Unlock()
	return nil
}

// cork starts collecting writes.
func (c *corkConn) cork() {
	c.mu.Lock()
	if !c.corked {
		c.corked = true
		c.buf = corkBufs.Get().(*[]byte)
	}
	c.mu.Unlock()
}

// uncork writes what was collected in one write, within the write deadline
// recorded last, and stops collecting. It returns the bytes
// written to the socket.
func (c *corkConn) uncork() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return 0, nil
	}
	c.corked = false
	b := c.buf
	c.buf = nil
	var n int
	var err error
	if len(*b) > 0 {
		n, err = sockio.WriteWithin(c.Conn, *b, c.writeBy)
	}
	if cap(*b) <= corkBufKeep {
		*b = (*b)[:0]
		corkBufs.Put(b)
	}
	if err != nil {
		return n, fmt.Errorf("write websocket batch: %w", err)
	}
	return n, nil
}

// CloseWrite half-closes the socket where it supports that (see halfClose).
func (c *corkConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		if err := cw.CloseWrite(); err != nil {
			return fmt.Errorf("close write: %w", err)
		}
	}
	return nil
}

// corkingWriter hands gorilla's Upgrader a corkConn instead of the hijacked
// connection, and a buffered reader of the edge's own over it, which
// gorilla adopts as its reader when the Upgrader's ReadBufferSize is 0: so
// the session can tell when gorilla holds no unread bytes (wsTransport.quiet).
type corkingWriter struct {
	http.ResponseWriter
	conn *corkConn
	br   *bufio.Reader
}

// Hijack implements http.Hijacker.
func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("edge: %T cannot be hijacked", w.ResponseWriter)
	}
	c, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("hijack: %w", err)
	}
	w.conn = &corkConn{Conn: c}
	if brw.Reader.Buffered() > 0 {
		// Bytes sent before the handshake's answer: gorilla refuses those
		// itself when it sees them in the reader it is given.
		return w.conn, brw, nil
	}
	w.br = bufio.NewReaderSize(w.conn, streamReadBuffer)
	return w.conn, bufio.NewReadWriter(w.br, brw.Writer), nil
}
