package sockio

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// conn is a socket whose Read and Write go through raw system calls. It
// keeps the standard connection for everything else (deadlines, addresses,
// Close, CloseWrite).
type conn struct {
	net.Conn
	raw    syscall.RawConn
	rd, wr rawCall
}

// rawCall is the state of one direction's call, kept with the connection so
// that a Read or Write allocates nothing: a closure handed to
// syscall.RawConn escapes, with the variables it captures.
type rawCall struct {
	mu    sync.Mutex // one call at a time, as the standard connection's own lock allows
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool // read or write, bound once
	try   func(fd uintptr) bool // write without waiting, bound once
}

func wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	rc := &conn{Conn: c, raw: raw}
	rc.rd.fn = rc.rd.read
	rc.wr.fn = rc.wr.write
	rc.wr.try = rc.wr.writeNoWait
	return rc
}

func isRaw(c net.Conn) bool {
	_, ok := c.(*conn)
	return ok
}

// Read reads what the socket holds, waiting in the network poller (within
// the read deadline) while it holds nothing.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := c.rd.do(c.raw.Read, p, c.rd.fn)
	switch {
	case err != nil:
		return 0, renameOp(err, "read")
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the network poller (within the write
// deadline) while the socket's buffer is full.
func (c *conn) Write(p []byte) (int, error) {
	return c.writeWith(p, c.wr.fn)
}

// writeWith writes p with fn (c.wr.fn, which waits for room, or c.wr.try,
// which does not) and reports the errors as the standard connection does.
func (c *conn) writeWith(p []byte, fn func(uintptr) bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := c.wr.do(c.raw.Write, p, fn)
	switch {
	case err != nil:
		return n, renameOp(err, "write")
	case errno != 0:
		return n, c.opError("write", errno)
	}
	return n, nil
}

// WriteWithin implements the package's WriteWithin: it writes what the
// socket's buffer takes at once, and only for the rest sets the deadline
// and waits in the poller; then it clears the deadline.
func (c *conn) WriteWithin(p []byte, deadline time.Time) (int, error) {
	n, err := c.writeWith(p, c.wr.try)
	if err != nil || n == len(p) {
		return n, err
	}
	if err := c.Conn.SetWriteDeadline(deadline); err != nil {
		return n, fmt.Errorf("set write deadline: %w", err)
	}
	m, err := c.Write(p[n:])
	// Cleared even after a failure: a deadline left in the past would fail
	// the next call before it tries. A closed socket refuses this, and
	// needs nothing cleared.
	_ = c.Conn.SetWriteDeadline(time.Time{})
	return n + m, err
}

// do runs the call through rawIO (the RawConn's Read or Write) on p with
// fn (o.fn, or o.try) and returns the bytes moved, the system call's error
// and the poller's.
func (o *rawCall) do(rawIO func(func(uintptr) bool) error, p []byte, fn func(uintptr) bool) (int, syscall.Errno, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.errno = p, 0, 0
	err := rawIO(fn)
	o.p = nil // the caller's buffer is not ours to keep alive
	return o.n, o.errno, err
}

// read is one attempt to read into o.p; false asks the poller to wait for
// the socket to become readable.
func (o *rawCall) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.p[0])), uintptr(len(o.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = int(r), e
		return true
	}
}

// write writes what is left of o.p; false asks the poller to wait for
// room in the socket's buffer.
func (o *rawCall) write(fd uintptr) bool {
	for o.n < len(o.p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.p[o.n])), uintptr(len(o.p)-o.n))
		switch e {
		case 0:
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// writeNoWait is write that never asks the poller to wait: it returns
// with what the socket's buffer took.
func (o *rawCall) writeNoWait(fd uintptr) bool {
	o.write(fd)
	return true
}

// CloseWrite half-closes the socket, as the standard TCP connection does.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// opError reports a failed call as the standard connection would.
func (c *conn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// renameOp gives an error of the poller (a deadline, a closed connection)
// the operation name of the standard connection instead of RawConn's
// "raw-read" and "raw-write", so that logs read the same either way.
func renameOp(err error, op string) error {
	if oe, ok := err.(*net.OpError); ok {
		e := *oe
		e.Op = op
		return &e
	}
	return err
}
