package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/internal/deadline"
	"github.com/matchgrain/matchgrain/persistence"
)

// GrainDeps is what every match grain of one member shares.
type GrainDeps struct {
	Store  persistence.Store
	Rules  Rules
	Timing Timing
	// Owner names this member in the store's owner column (the member id).
	Owner func() string
	// Now is the grain's clock; nil means time.Now.
	Now func() time.Time
	// Logger receives structured logs; never tickets or hand contents.
	Logger *slog.Logger
	// StoreTimeout bounds one store call (default 5 s).
	StoreTimeout time.Duration
	// Metrics, if set, counts grain activity.
	Metrics *Metrics
	// MayActivate, if set, is asked before an activation claims its match;
	// an error refuses the activation (the request is answered Unavailable
	// and retried by the caller, which finds another member once views
	// settle). matchd passes cluster.ActivationGate's, which refuses while
	// the member starts or drains, after it was evicted, and right after the
	// process was stalled: a claim then would only steal the match from its
	// live owner (docs/operations.md §3).
	MayActivate func() error
	// Owns, if set, reports whether this member owns matchID in its current
	// view of the cluster. An activation on a member that does not own its
	// match refuses to start, and a running one stops at its next tick once
	// it no longer does. protoactor's placement activates whatever a caller
	// with an older view sends it, and re-checks ownership only at the next
	// topology change (docs/cluster.md §3.3): an activation it made just
	// after a change that moved the match away would run on as a second
	// activation for good, answering the seats routed to it from a stale
	// state while the owner's activation serves the others.
	Owns func(matchID string) bool
	// MaxSpectators is how many spectators a match accepts at once
	// (docs/protocol.md §14.7); 0 accepts none.
	MaxSpectators int
	// SpectatorDelayEvents and SpectatorDelay hold every batch back from
	// spectators until that many later events exist (or the match ended)
	// and it is that old (docs/protocol.md §14.5); 0 for neither. The
	// event count stays below Timing.ResumeWindow, so the events it holds
	// back are still in memory.
	SpectatorDelayEvents int
	SpectatorDelay       time.Duration
	// MaxClockSkew is how far this member's wall clock may run ahead of
	// another member's before the deadlines of that member's requests
	// (envelope.Msg.Deadline) are checked too early: a request is dropped
	// only once it is more than MaxClockSkew past its deadline by this
	// member's clock. Default DefaultMaxClockSkew.
	MaxClockSkew time.Duration

	// storeDeadline gives store calls their StoreTimeout; NewMatchKind sets
	// it. The calls of one tick share a context (internal/deadline): a
	// grain only waits on it.
	storeDeadline *deadline.Shared
}

// NewMatchKind returns the cluster kind that hosts match grains on a member.
func NewMatchKind(deps GrainDeps) (*pcluster.Kind, error) {
	d, err := deps.prepare()
	if err != nil {
		return nil, err
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &grain{deps: d, core: newCore(d)} },
		actor.WithDispatcher(grainDispatcher), actor.WithMailbox(stoppingMailbox))
	return pcluster.NewKind(MatchKind, props), nil
}

// NewCores returns a constructor of match cores that share deps, for a
// host other than protoactor (the simulator, actors/sim). Each core is one
// activation: its first input is Activate.
func NewCores(deps GrainDeps) (func() *Core, error) {
	d, err := deps.prepare()
	if err != nil {
		return nil, err
	}
	return func() *Core { return newCore(d) }, nil
}

// prepare checks deps and fills in the defaults.
func (deps GrainDeps) prepare() (*GrainDeps, error) {
	if deps.Store == nil || deps.Rules == nil || deps.Owner == nil {
		return nil, errors.New("match kind needs a store, rules and an owner name")
	}
	if err := deps.Timing.Validate(); err != nil {
		return nil, fmt.Errorf("match kind timing: %w", err)
	}
	switch {
	case deps.MaxSpectators < 0:
		return nil, fmt.Errorf("max-spectators is %d, must not be negative", deps.MaxSpectators)
	case deps.SpectatorDelay < 0:
		return nil, fmt.Errorf("spectator-delay is %v, must not be negative", deps.SpectatorDelay)
	case deps.SpectatorDelayEvents < 0 || deps.SpectatorDelayEvents >= deps.Timing.ResumeWindow:
		return nil, fmt.Errorf("spectator-delay-events is %d, must be 0..%d (below resume-window)", deps.SpectatorDelayEvents, deps.Timing.ResumeWindow-1)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.StoreTimeout <= 0 {
		deps.StoreTimeout = 5 * time.Second
	}
	switch {
	case deps.MaxClockSkew < 0:
		return nil, fmt.Errorf("max-clock-skew is %v, must not be negative", deps.MaxClockSkew)
	case deps.MaxClockSkew == 0:
		deps.MaxClockSkew = DefaultMaxClockSkew
	}
	deps.storeDeadline = deadline.New(context.Background(), deps.StoreTimeout)
	return &deps, nil
}

// DefaultMaxClockSkew is GrainDeps.MaxClockSkew's default: what
// docs/operations.md §10 asks of the members' clocks.
const DefaultMaxClockSkew = time.Second

// grainDispatcher runs every match grain's mailbox of this process; the
// throughput is protoactor's default. At most 256 goroutines of a few KiB
// of stack each park between batches; a steady load keeps about as many as
// run at once (the one parked last is taken first), and the rest leave
// after a second.
var grainDispatcher = newWorkerDispatcher(300, 256, time.Second)

// tick is the grain's own timer message (local only, never serialised).
type tick struct{}

// grain is one activation of a match in protoactor: it turns the actor's
// messages into inputs of its core and carries out each Ready (core.go).
type grain struct {
	deps  *GrainDeps
	core  *Core
	timer *time.Timer
	// id is the match, known from ClusterInit; active says the core was
	// activated, which waits for the first live request (Receive).
	id     string
	active bool
}

// Receive implements actor.Actor.
//
// The core is activated (its match claimed) at the first request whose
// sender still waits for it, not at ClusterInit. protoactor spawns the
// activation when a member's placement actor reads an activation request,
// which carries no deadline: a member that was frozen reads the ones
// queued in its sockets when it wakes, long after their senders gave up on
// it and went to the match's new owner, and claiming then would take the
// match from that owner (docs/operations.md §3). The request that follows
// an activation request carries its deadline (cluster.Node.Request), and
// the sender does not send it at all once it gave up. Every activation
// comes with a request (an attach, an intent, a wake), so a live one
// claims at once, as before.
func (g *grain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		g.id = m.Identity.Identity
		return
	case *envelope.Msg:
		if m.Deadline != 0 && m.Expired(g.deps.Now(), g.deps.MaxClockSkew) {
			g.dropExpired(m)
			return
		}
		if !g.active || g.core.OwnedNow() {
			g.activate(ctx)
		}
		g.carryOut(ctx, g.core.Handle(m.V))
	case *tick:
		if !g.active {
			return // an earlier incarnation's timer (a restart after a panic)
		}
		g.carryOut(ctx, g.core.Tick())
	case *actor.ReceiveTimeout:
		if !g.active {
			return
		}
		g.carryOut(ctx, g.core.Idle())
	case *actor.Stopping:
		g.stopTimer()
		g.core.Stopped()
		return
	default:
		return
	}
	g.carryOut(ctx, g.core.Advance())
}

// activate starts the activation for the request at hand: the first one,
// or a new one in place of an activation refused because another member
// owned the match in this member's view, now that the view names this
// member (Core.OwnedNow). The actor stays, so nothing sent to it is lost.
//
//go:noinline
func (g *grain) activate(ctx actor.Context) {
	if g.active {
		g.core.Stopped()
		g.core = newCore(g.deps)
		ctx.CancelReceiveTimeout()
	}
	g.active = true
	g.carryOut(ctx, g.core.Activate(g.id))
	g.carryOut(ctx, g.core.Advance())
}

// dropExpired drops a request whose sender stopped waiting for it: no
// answer (nobody waits for one), no activation, no change. Out of line:
// rare, and its logging would grow Receive's frame.
//
//go:noinline
func (g *grain) dropExpired(m *envelope.Msg) {
	if g.deps.Metrics != nil {
		g.deps.Metrics.RequestsExpired.Inc()
	}
	g.deps.Logger.Debug("request dropped: its sender stopped waiting for it", "match", g.id, "type", m.Type,
		"late", g.deps.Now().Sub(time.Unix(0, m.Deadline)).Round(time.Millisecond), "activated", g.active)
}

// carryOut does what a step of the core asked, in its order: first the
// store calls it waits for, one at a time, while the mailbox waits too.
func (g *grain) carryOut(ctx actor.Context, rd Ready) {
	for rd.Store != nil {
		rd = g.core.StoreDone(rd.Store.Do(g.deps.storeDeadline.Context(), g.deps.Store))
	}
	for _, s := range rd.Sends {
		if s.To != nil {
			ctx.Send(s.To, envelope.Wrap(s.Msg))
		} else if ctx.Sender() != nil {
			ctx.Respond(envelope.Wrap(s.Msg))
		}
	}
	if rd.IdleStop {
		ctx.SetReceiveTimeout(g.deps.Timing.IdleStop)
	}
	if rd.Stop {
		g.stopTimer()
		ctx.Poison(ctx.Self())
		return
	}
	if rd.Tick {
		g.armTimer(ctx, rd.TickIn)
	}
}

// armTimer arms the activation's one timer. It is re-armed, not made
// anew: every accepted intent moves the deadline, and a new timer each time
// cost an allocation and a timer-heap insert and delete per intent. A tick
// already on its way when the timer is re-armed is harmless: the core only
// acts on what is due and asks for the timer again.
func (g *grain) armTimer(ctx actor.Context, d time.Duration) {
	if g.timer != nil {
		g.timer.Reset(d)
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	g.timer = time.AfterFunc(d, func() { root.Send(self, &tick{}) })
}

func (g *grain) stopTimer() {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}
