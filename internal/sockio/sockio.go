// Package sockio reads and writes sockets (the edge's client connections, the
// store's PostgreSQL connections, the Go client's) in system calls that
// bypass the Go scheduler's bookkeeping.
//
// A socket owned by Go's network poller is non-blocking: a read or write
// returns at once, with data or with EAGAIN. The standard library still
// makes each such call through syscall.Syscall, which tells the scheduler
// that the goroutine may block. That is cheap in Go, but it wakes the
// runtime's monitor thread (sysmon) whenever the monitor sleeps because the
// process was idle, and then the monitor polls every 20 µs for a while to
// take processors back from calls that might block. A node that serves many
// light matches goes idle and wakes thousands of times a second, so on a
// small machine the monitor used a seventh of the node's CPU time, for
// calls that never block (docs/performance.md has the measurements).
//
// Wrap makes the same reads and writes with syscall.RawSyscall inside the
// connection's syscall.RawConn: the poller still parks the goroutine on
// EAGAIN and honours deadlines, closes and errors exactly as for the
// standard connection.
package sockio

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Wrap returns c with its Read and Write made as raw system calls, where the
// platform supports it (Linux) and c is a socket of the standard library's;
// otherwise it returns c itself. Every other method is c's.
func Wrap(c net.Conn) net.Conn {
	return wrap(c)
}

// DialFunc is the shape of net.Dialer.DialContext, of pgx's and of
// gorilla/websocket's dial hooks.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// WrapDial returns dial with every connection it makes passed through Wrap.
func WrapDial(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Wrap(c), nil
	}
}

// Raw reports whether c is a connection returned by Wrap that reads and
// writes through raw system calls.
func Raw(c net.Conn) bool {
	return isRaw(c)
}

// WriteWithin writes all of p to c within deadline, where a zero deadline
// means none. On a connection returned by Wrap the deadline is set on the
// socket only if the write has to wait for room in its buffer, and cleared
// again after: a write that fits, which is nearly every write of a node,
// then touches no timer. A deadline set on a socket is a timer of the
// runtime's, and a node with thousands of connections that set one per
// write kept a timer per connection in the heaps that the runtime scans
// whenever a modified timer comes due (docs/performance.md). On any other
// connection it sets the deadline and writes, as a caller would.
//
// The caller must not set write deadlines on c otherwise: one left in the
// past would fail the next write before it tries.
func WriteWithin(c net.Conn, p []byte, deadline time.Time) (int, error) {
	if w, ok := c.(withinWriter); ok {
		return w.WriteWithin(p, deadline)
	}
	if err := c.SetWriteDeadline(deadline); err != nil {
		return 0, fmt.Errorf("set write deadline: %w", err)
	}
	return c.Write(p)
}

// withinWriter is a connection that implements WriteWithin itself: Wrap's,
// and wrappers of it that pass the call on.
type withinWriter interface {
	WriteWithin(p []byte, deadline time.Time) (int, error)
}
