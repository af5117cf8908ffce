package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// Errors returned by Node.Request.
var (
	// ErrUnavailable: no attempt got an answer before ctx ended. The error
	// also wraps ctx.Err() and names the last failure.
	ErrUnavailable = errors.New("cluster: grain unavailable")
	// ErrNotSerializable: msg is neither protobuf nor of a type registered
	// with the envelope package, so it could not cross the wire.
	ErrNotSerializable = errors.New("cluster: message type cannot be sent")
	// ErrBadReply: the grain's reply could not be decoded here.
	ErrBadReply = errors.New("cluster: undecodable reply")
	// errNoOwner: the topology has no member hosting the kind (yet).
	errNoOwner = errors.New("no member hosts the kind")
	// errMemberLost: a member left while the attempt was in flight.
	errMemberLost = errors.New("a member left during the attempt")
)

// innerRetries keeps protoactor's Request to a single send: its own retry
// would re-send from an attempt this package may already have abandoned (see
// attempt), doubling deliveries during failover. A stale cached PID costs one
// short backoff instead.
const innerRetries = 1

type reply struct {
	v   any
	err error
}

// Request sends msg to the grain identity of kind, activating it on its owner
// if needed, and returns the reply. Values of envelope-registered types are
// wrapped for the wire here, and a reply *envelope.Msg is unwrapped: callers
// send and receive plain registered values (protobuf messages pass as they
// are).
//
// It retries with jittered exponential backoff until ctx ends: attempts that
// time out (Config.RequestTimeout each), find no owner, or get a
// GrainErrorResponse with reason UNAVAILABLE (a fenced activation) or a
// reply that says its activation is going away (Moving). An
// attempt in flight to a member that leaves the topology is abandoned and
// re-sent at once to the new owner. A timed-out or abandoned attempt may still
// have been delivered, so msg can arrive more than once: grain commands must
// be idempotent.
//
// Any other GrainErrorResponse is returned as an error (errors.As gives the
// *pcluster.GrainErrorResponse). Without a ctx deadline it retries until ctx
// is cancelled or the node stops.
func (n *Node) Request(ctx context.Context, identity, kind string, msg any) (any, error) {
	wire, err := wireMessage(msg)
	if err != nil {
		return nil, err
	}
	// The first attempt here, the rest in retry: the frames of this whole
	// chain sit on the stack of every edge reader waiting for its grain's
	// reply, and the retry loop's locals would make this one twice as large
	// (docs/performance.md §4, "A reader's frames stay small").
	if n.stopped.Load() || ctx.Err() != nil {
		return n.retry(ctx, identity, kind, wire, 0, nil)
	}
	v, again, err := n.attempt(ctx, identity, kind, wire)
	if !again {
		return v, err
	}
	return n.retry(ctx, identity, kind, wire, 1, err)
}

// viewRetries bounds the quick retries of one request refused because the
// answering member's view names another owner (ViewRefusal): the views agree
// again within a detection time (tens of ms with the closed-connection hint,
// about 190 ms seen for a survivor whose stream to a killed member ended
// late, docs/performance.md §3.4), and the growing backoff would add up to
// a second after that. Each quick retry waits between half of Retry.Initial
// and all of it, so the quick ones cover at least viewRetries × Initial/2
// (320 ms with the defaults: a bound in time, not only in count, or on a
// fast machine they were spent before the views agreed) and cost a request
// at most viewRetries refused activations, never a store read; past them it
// backs off as for any other failure.
const viewRetries = 32

// retry goes on with Request after attempts attempts that failed with
// lastErr (none: attempts is 0).
func (n *Node) retry(ctx context.Context, identity, kind string, wire any, attempts int, lastErr error) (any, error) {
	// A lost member means the new topology is already here: no reason to
	// wait before the next attempt.
	wait := attempts > 0 && !errors.Is(lastErr, errMemberLost)
	// refused counts the attempts refused by a member's view (ViewRefusal).
	refused := 0
	if attempts > 0 && errors.Is(lastErr, errViewRefused) {
		refused = 1
	}
	for {
		if wait {
			if err := sleepCtx(ctx, n.retryWait(attempts, refused, lastErr)); err != nil {
				return nil, n.unavailable(identity, kind, attempts, err, lastErr)
			}
		}
		wait = true
		if n.stopped.Load() {
			return nil, ErrStopped
		}
		if err := ctx.Err(); err != nil {
			return nil, n.unavailable(identity, kind, attempts, err, lastErr)
		}
		attempts++
		v, again, err := n.attempt(ctx, identity, kind, wire)
		if !again {
			return v, err
		}
		if lastErr == nil || !isContextErr(err) {
			// An attempt cut by ctx's end says nothing new: the error
			// reports the one before it (a moving activation's reason).
			lastErr = err
		}
		if errors.Is(err, errViewRefused) {
			refused++
		}
		wait = !errors.Is(err, errMemberLost)
	}
}

// retryWait is the wait before the next attempt, after attempts attempts of
// which refused were view refusals, the last failing with lastErr: up to
// Retry.Initial (at least half of it) after a view refusal while the request has had at most
// viewRetries of them, else the backoff, counted without the quick retries.
func (n *Node) retryWait(attempts, refused int, lastErr error) time.Duration {
	if refused <= viewRetries && errors.Is(lastErr, errViewRefused) {
		half := n.cfg.Retry.Initial / 2
		return half + rand.N(n.cfg.Retry.Initial-half+1)
	}
	return n.backoff(max(attempts-min(refused, viewRetries)-1, 0))
}

// attempt runs one protoactor Request. protoactor's call cannot be cancelled
// (and resolving a PID alone may block 5 s), so it runs in its own goroutine,
// bounded by RequestTimeout (the deadline it carries), and is abandoned when ctx ends
// or when the member it went to leaves the topology (its answer would never
// come; only then is the message re-sent, so healthy members do not see
// duplicates at every topology change).
//
// The attempt goes to the cached PID if there is one, else to the owner
// by rendezvous hashing, which is computed only then: it hashes the
// identity once per member and allocates, and nearly every request of a
// running match hits the cache. A cached PID needs no lookup, so its
// attempt sends at once and waits without protoactor's Request
// (attemptLocal, attemptCachedRemote).
func (n *Node) attempt(ctx context.Context, identity, kind string, wire any) (v any, retry bool, err error) {
	timeout := n.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, true, context.DeadlineExceeded
	}
	if pid, ok := n.c.PidCache.Get(identity, kind); ok {
		if pid.Address == n.system.Address() {
			return n.attemptLocal(ctx, identity, kind, pid, wire, timeout)
		}
		return n.attemptCachedRemote(ctx, identity, kind, pid, wire, timeout)
	}
	owner := n.OwnerAddress(identity, kind)
	if owner == "" {
		return nil, true, errNoOwner
	}
	return n.attemptRemote(ctx, identity, kind, owner, wire, timeout)
}

// attemptRemote is attempt through protoactor's Request, to target.
// The attempt carries its deadline, its start plus timeout, and ends then
// (cluster/deadline.go).
func (n *Node) attemptRemote(ctx context.Context, identity, kind, target string, wire any, timeout time.Duration) (v any, retry bool, err error) {
	lost := n.MemberLost()
	sender, msg := newAttemptSender(n.system.Root, n.log, wire, time.Now().Add(timeout))
	defer sender.end()
	t := getTimer(timeout)
	defer putTimer(t)
	done := make(chan reply, 1)
	go func() {
		resp, err := n.c.Request(identity, kind, msg,
			pcluster.WithTimeout(timeout),
			pcluster.WithRetryCount(innerRetries),
			// protoactor's own backoff is nanoseconds; ours runs between attempts.
			pcluster.WithRetryAction(func(i int) int { return i + 1 }),
			pcluster.WithContext(sender))
		done <- reply{resp, err}
	}()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, true, r.err
			}
			return n.unwrapReply(identity, kind, r.v)
		case <-t.C:
			// The receiver drops the message from now on (give or take
			// the clock skew): waiting longer would be for nothing.
			return n.attemptExpired(identity, kind)
		case <-lost:
			if n.hasMember(target) {
				lost = n.MemberLost()
				continue
			}
			return nil, true, memberLostError(target)
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
}

// attemptLocal is attempt for a grain whose cached PID is on this member:
// what protoactor's Request would do with that PID (one send, wait for the
// reply, drop the cache entry on a timeout or dead letter), without its
// per-call goroutine, timeout context, future process, condition variable
// and eager debug-log arguments. Nothing needs resolving, so nothing can
// block: the wait itself selects on ctx, the attempt's timeout and the
// topology, like attempt. Routing is unchanged (the cached PID is the one
// protoactor would use) and so is the guarantee of one writer per match,
// which rests on the store's fence, not on where a request is delivered
// (docs/cluster.md §3.4).
func (n *Node) attemptLocal(ctx context.Context, identity, kind string, pid *actor.PID, wire any, timeout time.Duration) (v any, retry bool, err error) {
	rp := &replyProcess{ch: make(chan any, 1)}
	self := n.replies.add(rp)
	defer n.replies.remove(self)
	t := getTimer(timeout)
	defer putTimer(t)
	lost := n.MemberLost()
	n.system.Root.RequestWithCustomSender(pid, wire, self)
	for {
		select {
		case resp := <-rp.ch:
			if _, dead := resp.(*actor.DeadLetterResponse); dead {
				return n.localFailed(identity, kind, actor.ErrDeadLetter)
			}
			return n.unwrapReply(identity, kind, resp)
		case <-t.C:
			return n.localFailed(identity, kind, actor.ErrTimeout)
		case <-lost:
			if n.hasMember(pid.Address) {
				lost = n.MemberLost()
				continue
			}
			return nil, true, memberLostError(pid.Address)
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
}

// attemptCachedRemote is attempt for a grain whose cached PID is on
// another member: attemptLocal's wait with a reply process that member can
// answer, in place of protoactor's Request (its goroutine, timeout
// context, future and eager debug-log arguments). The PID is known, so the
// send cannot block and nothing needs to wait for a lookup: the message
// leaves now, carrying the attempt's deadline as attemptRemote's does, or
// not at all. Every request of a session whose match lives on another
// member takes this path. Its wait repeats attemptLocal's on purpose: a
// shared helper would add a frame to the stack of every reader waiting for
// its grain, which is sized to fit 4 KiB (docs/performance.md §4, "A
// reader's frames stay small").
func (n *Node) attemptCachedRemote(ctx context.Context, identity, kind string, pid *actor.PID, wire any, timeout time.Duration) (v any, retry bool, err error) {
	t := getTimer(timeout)
	defer putTimer(t)
	msg := wire
	if m, ok := wire.(*envelope.Msg); ok {
		c := *m
		c.Deadline = time.Now().Add(timeout).UnixNano()
		msg = &c
	}
	rp := &replyProcess{ch: make(chan any, 1)}
	self, _ := n.system.ProcessRegistry.Add(rp, "reply$"+n.system.ProcessRegistry.NextId())
	defer n.system.ProcessRegistry.Remove(self)
	lost := n.MemberLost()
	n.system.Root.RequestWithCustomSender(pid, msg, self)
	for {
		select {
		case resp := <-rp.ch:
			if _, dead := resp.(*actor.DeadLetterResponse); dead {
				return n.localFailed(identity, kind, actor.ErrDeadLetter)
			}
			return n.unwrapReply(identity, kind, resp)
		case <-t.C:
			return n.attemptExpired(identity, kind)
		case <-lost:
			if n.hasMember(pid.Address) {
				lost = n.MemberLost()
				continue
			}
			return nil, true, memberLostError(pid.Address)
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
}

// attemptTimers recycles the timers of local attempts: one per request
// of every intent otherwise, a timer and its channel to allocate and
// collect each time. Since Go 1.23 a stopped timer's channel holds no
// stale tick, so a timer from the pool fires only for its new Reset.
var attemptTimers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := attemptTimers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	attemptTimers.Put(t)
}

// localFailed drops the cached PID of a grain that did not answer, here or
// (a dead letter) on another member. Kept out of attemptLocal and
// attemptCachedRemote, whose frames every waiting reader carries: the
// error's formatting would take its room there (docs/performance.md §4,
// "A reader's frames stay small").
//
//go:noinline
func (n *Node) localFailed(identity, kind string, cause error) (any, bool, error) {
	n.c.PidCache.Remove(identity, kind)
	return nil, true, fmt.Errorf("cluster: grain %s/%s: %w", kind, identity, cause)
}

// attemptExpired drops the cached PID of a grain that did not answer
// before the attempt's deadline. The error is a deadline's, as protoactor's
// own timeout was: when the caller's ctx set the deadline, Request reports
// the failure before it instead. Out of line, like localFailed.
//
//go:noinline
func (n *Node) attemptExpired(identity, kind string) (any, bool, error) {
	n.c.PidCache.Remove(identity, kind)
	return nil, true, fmt.Errorf("cluster: grain %s/%s: no answer by the attempt's deadline: %w", kind, identity, context.DeadlineExceeded)
}

// memberLostError is kept out of line for the same reason as localFailed.
//
//go:noinline
func memberLostError(address string) error {
	return fmt.Errorf("%w: %s", errMemberLost, address)
}

// replyProcess receives the one reply of an attemptLocal or
// attemptCachedRemote. Only the first message counts; a late or second one
// (a duplicate reply, a dead letter after the reply) is dropped instead of
// blocking the sender.
type replyProcess struct{ ch chan any }

var _ actor.Process = (*replyProcess)(nil)

// SendUserMessage implements actor.Process.
func (p *replyProcess) SendUserMessage(_ *actor.PID, message any) {
	select {
	case p.ch <- actor.UnwrapEnvelopeMessage(message):
	default:
	}
}

// SendSystemMessage implements actor.Process; a reply never is one.
func (p *replyProcess) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process; the attempt removes the process itself.
func (p *replyProcess) Stop(*actor.PID) {}

// Moving is implemented by replies that can say the activation that
// answered is going away (stopping, fenced by a newer one, or refusing to
// activate on a draining member): Request then drops the cached PID and
// tries again, within ctx and with the same backoff as any other attempt,
// so that callers have one retry policy, this one. The match grain's Reply
// implements it.
type Moving interface {
	// ActivationMoving reports whether the request should go to the
	// identity's next activation, and why (for the error if none answers).
	ActivationMoving() (reason string, moving bool)
}

// ViewRefusal is implemented by Moving replies that can say the activation
// was refused because the answering member's view names another owner than
// the caller's view did. Such views agree again within a detection time, so
// Request retries these refusals after at most Retry.Initial, up to a bound
// (viewRetries), instead of backing off further at each one. The match
// grain's Reply implements it.
type ViewRefusal interface {
	// RefusedByView reports whether the answering member refused because
	// another member owns the identity in its view.
	RefusedByView() bool
}

// unwrapReply turns a grain reply into the caller's value or error.
func (n *Node) unwrapReply(identity, kind string, resp any) (v any, retry bool, err error) {
	switch r := resp.(type) {
	case *envelope.Msg:
		if u, ok := r.V.(*envelope.Unknown); ok {
			return nil, false, fmt.Errorf("%w from %s/%s: %q: %w", ErrBadReply, kind, identity, u.Type, u.Err)
		}
		if m, ok := r.V.(Moving); ok {
			if why, moving := m.ActivationMoving(); moving {
				return n.moving(identity, kind, why, refusedByView(r.V))
			}
		}
		return r.V, false, nil
	case *pcluster.GrainErrorResponse:
		if r.Reason == pcluster.ErrorReason_UNAVAILABLE {
			// A fenced or stopping activation: the next attempt must resolve
			// the identity again instead of reusing the cached PID.
			n.c.PidCache.Remove(identity, kind)
			return nil, true, fmt.Errorf("grain %s/%s: %w", kind, identity, r)
		}
		return nil, false, fmt.Errorf("cluster: grain %s/%s: %w", kind, identity, r)
	case Moving:
		if why, moving := r.ActivationMoving(); moving {
			return n.moving(identity, kind, why, refusedByView(r))
		}
		return resp, false, nil
	default:
		return resp, false, nil
	}
}

// errMoving: the activation that answered is going away (Moving).
var errMoving = errors.New("the activation is going away")

// errViewRefused: the answering member refused the activation because its
// view names another owner (ViewRefusal); it also wraps errMoving.
var errViewRefused = errors.New("refused by the answering member's view")

// refusedByView reports whether reply is a ViewRefusal that says so.
func refusedByView(reply any) bool {
	r, ok := reply.(ViewRefusal)
	return ok && r.RefusedByView()
}

// moving drops the cached PID of an activation that said it is going away,
// for the next attempt to resolve the identity again. Out of line, like
// localFailed.
//
//go:noinline
func (n *Node) moving(identity, kind, why string, byView bool) (any, bool, error) {
	n.c.PidCache.Remove(identity, kind)
	if byView {
		return nil, true, fmt.Errorf("grain %s/%s: %w (%w): %s", kind, identity, errMoving, errViewRefused, why)
	}
	return nil, true, fmt.Errorf("grain %s/%s: %w: %s", kind, identity, errMoving, why)
}

func (n *Node) unavailable(identity, kind string, attempts int, ctxErr, lastErr error) error {
	if lastErr == nil {
		lastErr = ctxErr
	}
	n.log.Debug("cluster: request gave up", slog.String("kind", kind), slog.String("identity", identity),
		slog.Int("attempts", attempts), slog.Any("last_error", lastErr))
	return fmt.Errorf("%w: %s/%s after %d attempts: %w (last error: %v)", ErrUnavailable, kind, identity, attempts, ctxErr, lastErr)
}

// backoff returns the full-jitter wait before retry n (from 0).
func (n *Node) backoff(retry int) time.Duration {
	limit := n.cfg.Retry.Max
	if retry < 30 {
		limit = min(limit, n.cfg.Retry.Initial<<retry)
	}
	return rand.N(limit + 1)
}

// wireMessage returns msg in a form protoactor remote can carry.
func wireMessage(msg any) (any, error) {
	switch msg.(type) {
	case nil:
		return nil, fmt.Errorf("%w: nil", ErrNotSerializable)
	case remote.RootSerializable, proto.Message:
		return msg, nil
	}
	if _, ok := envelope.NameOf(msg); !ok {
		return nil, fmt.Errorf("%w: %T is not protobuf and not registered with envelope.Register", ErrNotSerializable, msg)
	}
	return envelope.Wrap(msg), nil
}

// isContextErr reports whether err is only a context's end.
func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
