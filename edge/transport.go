package edge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/matchgrain/matchgrain/internal/sockio"
	"github.com/matchgrain/matchgrain/protocol"
)

// transport is one client connection's byte pipe: WebSocket or the TCP
// fallback. The session calls readFrame, setReadDeadline and drain from its
// reader goroutine and the write methods from its writer goroutine only;
// close may be called from anywhere, any number of times.
type transport interface {
	// readFrame returns the next frame's payload, valid until the next call
	// of readFrame or waitReadable.
	// Errors: errNotBinary, errEmptyFrame, protocol.ErrFrameTooLarge,
	// protocol.ErrMalformed, timeouts (os.ErrDeadlineExceeded), and anything
	// meaning the peer is gone.
	readFrame() ([]byte, error)
	setReadDeadline(t time.Time) error
	// drain reads and discards until an error (the read deadline, usually).
	drain()
	// quiet reports that no byte of the stream waits in the process's own
	// buffers, so that waitReadable may stand in for the start of the next
	// readFrame: then the next bytes can only come from the socket.
	quiet() bool
	// waitReadable returns once the socket has bytes to read, or with the
	// read deadline's error, and consumes nothing: a timeout leaves the
	// stream as it was (unlike one inside readFrame, which gorilla/websocket
	// never recovers from). It waits only a few frames deep, which is what
	// lets a parked reader live on the smallest stack (session.park). As
	// the start of the next read, it ends the last frame's validity, so a
	// quiet connection holds no frame buffer while it waits.
	waitReadable() error
	// writeFrames writes frames in order, finishing before deadline.
	writeFrames(frames [][]byte, deadline time.Time) (int, error)
	// writeGoodbye writes the final ServerError (nil: none) and, on
	// WebSocket, a close frame with code (0: none) and text.
	writeGoodbye(errFrame []byte, code int, text string, deadline time.Time) error
	// closeWrite half-closes the connection so that the peer reads all that
	// was written, then end of stream.
	closeWrite()
	close()
	kind() int // transportWS or transportTCP
	remoteAddr() string
}

var (
	// errNotBinary: a WebSocket text message; the protocol takes binary only.
	errNotBinary = errors.New("edge: text message")
	// errEmptyFrame: a WebSocket binary message with no payload.
	errEmptyFrame = errors.New("edge: empty message")
)

// wsReadStart is a WebSocket reader's first buffer size; it grows by
// doubling up to protocol.MaxFrameBytes+1. Buffers come from wsReadBufs for
// one frame and go back when the next read starts, so a connection waiting
// for its next frame holds none; one grown past wsReadKeep by an unusually
// large frame is dropped instead.
const (
	wsReadStart = 512
	wsReadKeep  = 64 << 10
)

// streamReadBuffer is the size of a connection's own buffered reader, which
// both transports read the socket through. Client frames are small (an
// intent is about 50 bytes, a hello with its ticket a few hundred), so a few
// hundred bytes take most frames in one read; gorilla/websocket takes a
// hijacked reader over 256 bytes as its own (and would make one of its own
// otherwise, which the edge could not see into).
const streamReadBuffer = 320

var wsReadBufs = sync.Pool{New: func() any { b := make([]byte, 0, wsReadStart); return &b }}

type wsTransport struct {
	c         *websocket.Conn
	cork      *corkConn     // c's socket; nil when c was not made by serveGame
	br        *bufio.Reader // what c reads the socket through; nil: unknown (no parking)
	buf       *[]byte       // the last frame's buffer, from wsReadBufs
	closeOnce sync.Once
}

// newWSTransport wraps c; cork and br are what corkingWriter gave c (nil
// when c was made otherwise).
func newWSTransport(c *websocket.Conn, cork *corkConn, br *bufio.Reader) *wsTransport {
	return &wsTransport{c: c, cork: cork, br: br}
}

// readFrame enforces protocol.MaxFrameBytes itself instead of through
// websocket.Conn.SetReadLimit: gorilla answers its own limit with a close
// 1009 and then refuses further writes, which would make the ServerError
// (MalformedFrame) + 4400 of docs/protocol.md §2 impossible. Reading at most
// MaxFrameBytes+1 bytes of the message bounds memory by the same number, and
// nothing is decoded before the size is known to be within the limit.
func (t *wsTransport) readFrame() ([]byte, error) {
	t.releaseBuf() // the last frame was valid until this call
	mt, r, err := t.c.NextReader()
	if err != nil {
		return nil, err
	}
	if mt != websocket.BinaryMessage {
		return nil, errNotBinary
	}
	t.buf = wsReadBufs.Get().(*[]byte)
	buf := (*t.buf)[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > protocol.MaxFrameBytes {
				return nil, fmt.Errorf("%w: websocket message over %d bytes", protocol.ErrFrameTooLarge, protocol.MaxFrameBytes)
			}
			grown := make([]byte, len(buf), min(2*cap(buf), protocol.MaxFrameBytes+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		*t.buf = buf[:0] // keeps what it grew to
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > protocol.MaxFrameBytes {
		return nil, fmt.Errorf("%w: websocket message over %d bytes", protocol.ErrFrameTooLarge, protocol.MaxFrameBytes)
	}
	if len(buf) == 0 {
		return nil, errEmptyFrame
	}
	return buf, nil
}

// releaseBuf gives the last frame's buffer back to the pool.
func (t *wsTransport) releaseBuf() {
	if t.buf == nil {
		return
	}
	if cap(*t.buf) <= wsReadKeep {
		wsReadBufs.Put(t.buf)
	}
	t.buf = nil
}

func (t *wsTransport) setReadDeadline(d time.Time) error {
	if err := t.c.SetReadDeadline(d); err != nil {
		return fmt.Errorf("set read deadline: %w", err)
	}
	return nil
}

// quiet: readFrame returns only whole messages, so between two calls
// gorilla is at a frame boundary and holds no bytes but those in br.
func (t *wsTransport) quiet() bool { return t.br != nil && t.br.Buffered() == 0 }

func (t *wsTransport) waitReadable() error {
	t.releaseBuf()
	return peekOne(t.br)
}

// peekOne waits for one byte in br; a deadline's error is returned once and
// leaves br usable (bufio keeps nothing of it).
func peekOne(br *bufio.Reader) error {
	if _, err := br.Peek(1); err != nil {
		return fmt.Errorf("wait for data: %w", err)
	}
	return nil
}

func (t *wsTransport) drain() {
	for {
		_, r, err := t.c.NextReader()
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// writeFrames sends the batch as one write system call: gorilla frames each
// message into the corked connection's buffer, and uncork writes it.
func (t *wsTransport) writeFrames(frames [][]byte, deadline time.Time) (int, error) {
	if err := t.c.SetWriteDeadline(deadline); err != nil {
		return 0, fmt.Errorf("set write deadline: %w", err)
	}
	// Always corked, also for one frame: a frame larger than gorilla's
	// write buffer would otherwise take two writes (net.Buffers cannot use
	// writev through a wrapped connection).
	if t.cork != nil {
		t.cork.cork()
	}
	n := 0
	for _, f := range frames {
		if err := t.c.WriteMessage(websocket.BinaryMessage, f); err != nil {
			if t.cork != nil {
				_, _ = t.cork.uncork() // the connection is being dropped anyway
			}
			return n, fmt.Errorf("write websocket message: %w", err)
		}
		n += len(f)
	}
	if t.cork != nil {
		if _, err := t.cork.uncork(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (t *wsTransport) writeGoodbye(errFrame []byte, code int, text string, deadline time.Time) error {
	if errFrame != nil {
		if _, err := t.writeFrames([][]byte{errFrame}, deadline); err != nil {
			return err
		}
	}
	if code == 0 {
		return nil
	}
	if err := t.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), deadline); err != nil {
		return fmt.Errorf("write close frame: %w", err)
	}
	return nil
}

func (t *wsTransport) closeWrite() { halfClose(t.c.NetConn()) }

func (t *wsTransport) close() {
	t.closeOnce.Do(func() {
		// The peer may be gone already; there is nothing left to tell it.
		_ = t.c.NetConn().Close()
	})
}

func (t *wsTransport) kind() int          { return transportWS }
func (t *wsTransport) remoteAddr() string { return t.c.RemoteAddr().String() }

// tcpWriteBuffer batches the frames of one writeFrames call into few writes.
const tcpWriteBuffer = 4 << 10

type tcpTransport struct {
	conn      net.Conn
	br        *bufio.Reader // the frame reader's source: a frame's prefix and payload in one read
	fr        *protocol.FrameReader
	bw        *bufio.Writer // writes to out
	out       withinWriter
	closeOnce sync.Once
}

// withinWriter writes to conn within the deadline by, set on the socket only
// if a write has to wait (sockio.WriteWithin; see corkConn for why).
type withinWriter struct {
	conn net.Conn
	by   time.Time
}

func (w *withinWriter) Write(p []byte) (int, error) {
	return sockio.WriteWithin(w.conn, p, w.by)
}

func newTCPTransport(c net.Conn) *tcpTransport {
	br := bufio.NewReaderSize(c, streamReadBuffer)
	t := &tcpTransport{
		conn: c,
		br:   br,
		fr:   protocol.NewFrameReader(br, protocol.MaxFrameBytes),
		out:  withinWriter{conn: c},
	}
	t.bw = bufio.NewWriterSize(&t.out, tcpWriteBuffer)
	return t
}

func (t *tcpTransport) readFrame() ([]byte, error) {
	b, err := t.fr.ReadFrame()
	if err != nil {
		return nil, fmt.Errorf("read tcp frame: %w", err)
	}
	return b, nil
}

func (t *tcpTransport) setReadDeadline(d time.Time) error {
	if err := t.conn.SetReadDeadline(d); err != nil {
		return fmt.Errorf("set read deadline: %w", err)
	}
	return nil
}

func (t *tcpTransport) drain() {
	// The stream may be mid-frame: discard raw bytes, not frames.
	_, _ = io.Copy(io.Discard, t.br) // ends at the deadline or EOF; either is fine
}

// quiet: ReadFrame reads exactly one frame, so between two calls the frame
// reader holds nothing and br holds only bytes of frames not read yet.
func (t *tcpTransport) quiet() bool { return t.br.Buffered() == 0 }

func (t *tcpTransport) waitReadable() error { return peekOne(t.br) }

func (t *tcpTransport) writeFrames(frames [][]byte, deadline time.Time) (int, error) {
	t.out.by = deadline
	n := 0
	for _, f := range frames {
		if err := protocol.WriteFrame(t.bw, f); err != nil {
			return n, fmt.Errorf("write tcp frame: %w", err)
		}
		n += len(f)
	}
	if err := t.bw.Flush(); err != nil {
		return n, fmt.Errorf("flush tcp frames: %w", err)
	}
	return n, nil
}

func (t *tcpTransport) writeGoodbye(errFrame []byte, _ int, _ string, deadline time.Time) error {
	if errFrame == nil {
		return nil
	}
	_, err := t.writeFrames([][]byte{errFrame}, deadline)
	return err
}

func (t *tcpTransport) closeWrite() { halfClose(t.conn) }

func (t *tcpTransport) close() {
	t.closeOnce.Do(func() {
		_ = t.conn.Close() // the peer may be gone already
	})
}

func (t *tcpTransport) kind() int          { return transportTCP }
func (t *tcpTransport) remoteAddr() string { return t.conn.RemoteAddr().String() }

// halfClose sends FIN after everything written so far, where the connection
// supports it (TLS and pipes do not; they are closed in full later).
func halfClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() // best effort: the full close follows anyway
	}
}
