package persistence

import (
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TCPTimeouts bound how long the store's connections wait on a database host
// that vanished from the network: a machine that died or was cut off sends
// no RST, so without them a pooled connection waits for the operating
// system's retransmissions (about 15 minutes on Linux) and every store call
// on it waits out its whole store timeout. docs/operations.md §11 explains
// the defaults.
type TCPTimeouts struct {
	// UserTimeout is TCP_USER_TIMEOUT: data sent but not acknowledged for
	// this long closes the connection, so a statement sent to a dead host
	// fails after it. Negative leaves the system's default.
	UserTimeout time.Duration
	// KeepAliveIdle is how long a connection stays quiet before the first
	// keep-alive probe, KeepAliveInterval the time between probes and
	// KeepAliveCount how many unanswered probes close it: an idle pooled
	// connection to a dead host is dropped before anyone takes it.
	// KeepAliveIdle negative turns keep-alive off.
	KeepAliveIdle, KeepAliveInterval time.Duration
	KeepAliveCount                   int
}

// DefaultTCPTimeouts are the store's settings unless WithTCPTimeouts says
// otherwise: a dead host found within about 5 s, whether a statement is in
// flight (UserTimeout) or the connection is idle (5 s + 3 probes 1 s apart,
// themselves cut at UserTimeout), well inside the 30 s store timeout a
// highly available setup needs.
var DefaultTCPTimeouts = TCPTimeouts{UserTimeout: 5 * time.Second, KeepAliveIdle: 5 * time.Second, KeepAliveInterval: time.Second, KeepAliveCount: 3}

// WithTCPTimeouts replaces DefaultTCPTimeouts for the store's connections.
func WithTCPTimeouts(t TCPTimeouts) PostgresOption {
	return func(o *pgOptions) { o.tcp = &t }
}

func (t TCPTimeouts) validate() error {
	if t.KeepAliveIdle >= 0 && (t.KeepAliveInterval <= 0 || t.KeepAliveCount <= 0) {
		return fmt.Errorf("persistence: TCP keep-alive needs a positive interval and count (got %v, %d)", t.KeepAliveInterval, t.KeepAliveCount)
	}
	if t.UserTimeout > 0 && t.UserTimeout < time.Millisecond {
		return fmt.Errorf("persistence: TCP user timeout %v is under a millisecond", t.UserTimeout)
	}
	return nil
}

// dialer dials TCP with t set on each connection before it connects (Unix
// sockets are left alone: they have no network to lose), within
// connectTimeout (the URL's connect_timeout; zero is none), as pgx's own
// dialer does.
func (t TCPTimeouts) dialer(connectTimeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connectTimeout}
	if t.KeepAliveIdle < 0 {
		d.KeepAlive = -1
	} else {
		d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: t.KeepAliveIdle, Interval: t.KeepAliveInterval, Count: t.KeepAliveCount}
	}
	if t.UserTimeout > 0 {
		ms := int(t.UserTimeout / time.Millisecond)
		d.Control = func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
			}); err != nil {
				return fmt.Errorf("set TCP_USER_TIMEOUT: %w", err)
			}
			if serr != nil {
				return fmt.Errorf("set TCP_USER_TIMEOUT to %d ms: %w", ms, serr)
			}
			return nil
		}
	}
	return d
}
