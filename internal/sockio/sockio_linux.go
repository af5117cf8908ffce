package sockio

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// conn is a socket whose Read and Write go through raw system calls. It
// keeps the standard connection for everything else (deadlines, addresses,
// Close, CloseWrite).
type conn struct {
	net.Conn
	raw syscall.RawConn
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
	return &conn{Conn: c, raw: raw}
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
	var n int
	var errno syscall.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
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
	var n int
	var errno syscall.Errno
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, renameOp(err, "write")
	case errno != 0:
		return n, c.opError("write", errno)
	}
	return n, nil
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
