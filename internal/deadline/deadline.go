// Package deadline hands out timeout contexts that calls started close
// together share.
//
// A context.WithTimeout per call costs a context, a runtime timer with its
// closure, a done channel and a link into the parent, and adds and removes
// the timer on a processor's timer heap: at a few thousand store calls and
// grain requests a second that was a fifth of what a node allocated. The
// calls that take such a timeout only wait on it, and a timeout of seconds
// does not need to end to the microsecond, so a Shared rounds each deadline
// up to a tick (1/128 of the timeout) and every call whose deadline rounds
// to the same tick gets the same context: one timer and one channel per
// tick instead of per call.
package deadline

import (
	"context"
	"sync/atomic"
	"time"
)

// Shared makes contexts derived from one parent that end a fixed timeout
// after they are asked for, rounded up by at most a tick. Its contexts
// cannot be cancelled by their callers (others may hold the same one); they
// end at their deadline or when the parent ends. It is safe for concurrent
// use.
type Shared struct {
	parent  context.Context
	timeout time.Duration
	tick    int64 // nanoseconds
	cur     atomic.Pointer[shared]
}

// shared is the context of one tick.
type shared struct {
	tick int64 // the deadline in ticks since the Unix epoch
	ctx  context.Context
}

// New returns a Shared whose contexts end at least timeout after Context is
// called and at most timeout/128 (or 1 ms, if more) later than that.
func New(parent context.Context, timeout time.Duration) *Shared {
	if timeout <= 0 {
		panic("deadline: the timeout must be positive")
	}
	return &Shared{parent: parent, timeout: timeout, tick: int64(max(timeout/128, time.Millisecond))}
}

// Context returns a context that ends no earlier than the timeout from now
// and no later than a tick after that, or when the parent ends.
func (s *Shared) Context() context.Context {
	now := time.Now()
	due := now.UnixNano() + int64(s.timeout)
	t := (due + s.tick - 1) / s.tick
	if c := s.cur.Load(); c != nil && c.tick == t {
		return c.ctx
	}
	// now.Add keeps the monotonic reading, so the timer does not follow
	// changes of the wall clock; the rounding is from the wall clock, which
	// can only move the deadline by those changes' size.
	ctx, cancel := context.WithDeadline(s.parent, now.Add(time.Duration(t*s.tick-due)+s.timeout))
	// Nobody ends a shared context early: its callers finish at different
	// times. Its own timer releases it at the deadline.
	_ = cancel
	c := &shared{tick: t, ctx: ctx}
	// Two callers that race here each make one; the loser's callers keep
	// theirs, which ends at the same deadline.
	s.cur.Store(c)
	return ctx
}
