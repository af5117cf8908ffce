package grains

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/internal/deadline"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// The Gateway is the edge's Matches: its errors are the edge's sentinels
// (edge.ErrMatchNotFound, edge.ErrTicketUsed, edge.ErrUnavailable,
// edge.ErrBadRequest), with the cause kept in the chain.
var _ edge.Matches = (*Gateway)(nil)

// Requester routes a request to the grain of identity wherever it lives and
// returns its reply. msg is a value registered with envelope.Register; the
// reply may come back unwrapped or as an *envelope.Msg. cluster.Node
// satisfies it, and is where grain calls are retried (timeouts, lost
// members, and an actors.Reply whose activation is going away:
// actors.Reply.ActivationMoving); the Gateway itself never retries.
type Requester interface {
	Request(ctx context.Context, identity, kind string, msg any) (any, error)
}

// GatewayConfig wires a Gateway.
type GatewayConfig struct {
	// System holds the process registry the per-connection seats register
	// their PIDs in (seatProcess).
	System *actor.ActorSystem
	// Cluster routes requests to grains.
	Cluster Requester
	// Store records new matches.
	Store persistence.Store
	// Rules validates deck ids before a match is created.
	Rules actors.Rules
	// Timing must be the grains' timing (SeatKeepAlive is shared).
	Timing actors.Timing
	// Forget drops a finished match from this member's PID cache; may be nil.
	Forget func(identity string)
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds a call that comes without a deadline of its
	// own, and the gateway's own calls (wakes, keep-alives) (default 5 s).
	RequestTimeout time.Duration
	// ReattachTimeout is how long a seat keeps trying to find its grain
	// again before it gives up and the client must reconnect (default 30 s).
	ReattachTimeout time.Duration
}

// Gateway is the edge's door to the match grains: it creates matches and
// attaches connections to seats. Safe for concurrent use.
type Gateway struct {
	cfg GatewayConfig
	log *slog.Logger

	mu sync.Mutex
	// open counts this member's open seats per match, so the PID cache
	// entry of a match is dropped when its last local seat closes
	// (protoactor's cache never forgets by itself, docs/cluster.md §5.1).
	open map[string]int
	// live holds the seats whose keep-alive keepAlives runs, by the slot
	// of the interval in which their match is pinged (keepAliveSlot); the
	// loop runs while there are any (loopRunning).
	live        []map[*Seat]struct{}
	loopRunning bool
	slotSeed    maphash.Seed
	// pingDeadline bounds each keep-alive by two intervals. The pings of
	// one slot start together and so share one context (internal/deadline):
	// a context and its timer per match were a sixth of what a node of
	// 5,000 quiet matches allocated (docs/performance.md).
	pingDeadline *deadline.Shared
}

// NewGateway checks cfg and returns a Gateway.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	if cfg.System == nil || cfg.Cluster == nil || cfg.Store == nil || cfg.Rules == nil {
		return nil, errors.New("gateway needs an actor system, a cluster, a store and rules")
	}
	if err := cfg.Timing.Validate(); err != nil {
		return nil, fmt.Errorf("gateway timing: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.ReattachTimeout <= 0 {
		cfg.ReattachTimeout = 30 * time.Second
	}
	return newGateway(cfg), nil
}

// newGateway makes the Gateway of a checked cfg.
func newGateway(cfg GatewayConfig) *Gateway {
	g := &Gateway{cfg: cfg, log: cfg.Logger, open: map[string]int{}, slotSeed: maphash.MakeSeed(),
		pingDeadline: deadline.New(context.Background(), 2*cfg.Timing.SeatKeepAlive)}
	g.live = make([]map[*Seat]struct{}, keepAliveSlots(cfg.Timing.SeatKeepAlive))
	for i := range g.live {
		g.live[i] = map[*Seat]struct{}{}
	}
	return g
}

// CreateMatch validates the decks, records the match (seat kinds included)
// durably (actors.CreateMatch) and wakes its grain so that its clocks, and
// its bots, run from now.
func (g *Gateway) CreateMatch(ctx context.Context, spec edge.MatchSpec) (string, error) {
	id, err := actors.CreateMatch(ctx, g.cfg.Store, g.cfg.Rules, actors.MatchSpec(spec))
	if errors.Is(err, actors.ErrBadRequest) {
		return "", fmt.Errorf("%w: %w", edge.ErrBadRequest, err)
	}
	if err != nil {
		return "", err
	}
	// The wake gets at most half of what is left of the caller's time (and
	// one attempt's bound): the match is durable already, so the caller
	// must get its id back even while the match's owner is moving (a
	// drain, a failover). A match left asleep loses nothing: its clocks run
	// from CreatedAt, the first attach activates it, and the reclaimer
	// wakes it at its next sweep.
	started := time.Now()
	wctx, cancel := context.WithTimeout(ctx, wakeBudget(ctx, g.cfg.RequestTimeout))
	_, err = g.call(wctx, id, &actors.Wake{})
	cancel()
	if err != nil {
		g.log.Warn("wake new match; left to the first attach or the reclaimer", "match", id,
			"waited", time.Since(started).Round(time.Millisecond), "err", err)
	}
	return id, nil
}

// wakeBudget is how long CreateMatch waits for a new match's grain: one
// attempt's bound, and no more than half the time ctx has left.
func wakeBudget(ctx context.Context, attempt time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(attempt, time.Until(dl)/2)
	}
	return attempt
}

// MatchExists reports whether matchID names a match (activating it).
func (g *Gateway) MatchExists(ctx context.Context, matchID string) (bool, error) {
	_, err := g.call(ctx, matchID, &actors.Wake{})
	if errors.Is(err, edge.ErrMatchNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// NameSeat gives guest seat seat of matchID the name its player chose
// (edge.Matches; actors.NameSeat).
func (g *Gateway) NameSeat(ctx context.Context, matchID string, seat int, name string) error {
	if _, err := g.call(ctx, matchID, &actors.NameSeat{Seat: seat, Name: name}); err != nil {
		return fmt.Errorf("name seat %d of match %s: %w", seat, matchID, err)
	}
	return nil
}

// call sends one request to a grain and turns its reply into an error
// where it is one. It does not retry: the Requester does (cluster.Node
// retries timeouts, lost members and activations that are going away, a
// actors.Reply with actors.ReplyUnavailable, until ctx ends), so a grain call has one
// retry policy. The first attempt's success is handled here and everything
// else in settle, so that the frame every edge reader carries while it
// waits for its grain stays small (docs/performance.md §4, "A reader's
// frames stay small").
func (g *Gateway) call(ctx context.Context, matchID string, msg any) (*actors.Reply, error) {
	res, err := g.attempt(ctx, matchID, msg)
	if err == nil {
		if r := okReply(res); r != nil {
			return r, nil
		}
	}
	return g.settle(matchID, res, err)
}

// okReply returns v as a *actors.Reply (unwrapped by the Requester or still in its
// envelope) if it is one with actors.ReplyOK.
func okReply(v any) *actors.Reply {
	if r, ok := fromEnvelope(v).(*actors.Reply); ok && r.Code == actors.ReplyOK {
		return r
	}
	return nil
}

// settle is call's answer for anything but an actors.ReplyOK: the sentinel of the
// reply's code, or edge.ErrUnavailable when no activation answered in time.
//
//go:noinline
func (g *Gateway) settle(matchID string, res any, err error) (*actors.Reply, error) {
	var r *actors.Reply
	if err == nil {
		r, err = asReply(res)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: match %s: %w", edge.ErrUnavailable, matchID, err)
	}
	switch r.Code {
	case actors.ReplyOK:
		return r, nil
	case actors.ReplyNotFound:
		return r, edge.ErrMatchNotFound
	case actors.ReplyTicketUsed:
		return r, edge.ErrTicketUsed
	case actors.ReplyNotAttached:
		return r, errNotAttached
	case actors.ReplyReplaced:
		return r, errReplaced
	case actors.ReplySpectatorsFull:
		return r, edge.ErrSpectatorsFull
	case actors.ReplyBadRequest:
		return r, fmt.Errorf("%w: %s", edge.ErrBadRequest, r.Message)
	case actors.ReplyUnavailable:
		// A Requester that does not retry (a test's) hands the moving
		// activation's answer back; the next call must resolve the match
		// again instead of reaching it through the cached PID.
		if g.cfg.Forget != nil {
			g.cfg.Forget(matchID)
		}
	}
	return nil, fmt.Errorf("%w: match %s: grain: %s", edge.ErrUnavailable, matchID, r.Message)
}

// attempt is one request of call. A ctx with a deadline (every edge
// request has one, --request-timeout) bounds it as it is: the cluster
// bounds each of its own attempts to reach the grain already
// (cluster.Config.RequestTimeout) and retries within ctx, so a second
// context and timer per request, cut at RequestTimeout, would only hand the
// same retries from the cluster's loop to call's, at an allocation and a
// timer each (BenchmarkGatewayCall). A ctx without a deadline gets
// RequestTimeout.
func (g *Gateway) attempt(ctx context.Context, matchID string, msg any) (any, error) {
	if _, ok := ctx.Deadline(); ok {
		return g.cfg.Cluster.Request(ctx, matchID, actors.MatchKind, msg)
	}
	return g.attemptBounded(ctx, matchID, msg)
}

// attemptBounded is attempt under a deadline of its own; out of line so
// that the usual attempt's frame does not hold its context and deferred
// cancel.
//
//go:noinline
func (g *Gateway) attemptBounded(ctx context.Context, matchID string, msg any) (any, error) {
	rctx, cancel := context.WithTimeout(ctx, g.cfg.RequestTimeout)
	defer cancel()
	return g.cfg.Cluster.Request(rctx, matchID, actors.MatchKind, msg)
}

var (
	errNotAttached = errors.New("seat not attached")
	errReplaced    = errors.New("seat replaced by another connection")
	// ErrDetached: the seat lost its attachment for good (replaced, or its
	// match could not be found again); the connection should close. It is
	// an edge.ErrUnavailable: the client reconnects and resumes.
	ErrDetached = fmt.Errorf("%w: seat detached", edge.ErrUnavailable)
)

// asReply accepts a reply unwrapped by the Requester or still in its envelope.
func asReply(v any) (*actors.Reply, error) {
	v = fromEnvelope(v)
	r, ok := v.(*actors.Reply)
	if !ok {
		return nil, fmt.Errorf("unexpected reply %T", v)
	}
	return r, nil
}

// fromEnvelope takes a reply out of its envelope, if it is still in one.
func fromEnvelope(v any) any {
	if m, ok := v.(*envelope.Msg); ok {
		return m.V
	}
	return v
}

// OpenSeat attaches sink to a seat: the ticket is consumed by the grain
// (exactly once, durably), and when OpenSeat returns the sink has been given
// the ServerHello and the snapshot or resume events (docs/protocol.md §4.2).
// Seat protocol.SeatSpectator attaches a spectator (docs/protocol.md §14):
// the same seat, keep-alive and re-attach, with the grain's spectator rules.
func (g *Gateway) OpenSeat(ctx context.Context, req edge.OpenSeatRequest, sink edge.SeatSink) (edge.Seat, error) {
	if req.Seat < 0 || req.Seat > protocol.SeatSpectator {
		return nil, fmt.Errorf("%w: seat %d", edge.ErrBadRequest, req.Seat)
	}
	s := &Seat{gw: g, matchID: req.MatchID, seat: req.Seat, sink: sink, initial: make(chan struct{}), ticketExpiresMs: req.TicketExpires.UnixMilli()}
	s.lastSeq.Store(req.ResumeFromSeq)
	if err := s.register(g.cfg.System, "seat-"+req.MatchID+"-"+mustRandomSuffix()); err != nil {
		return nil, err
	}
	_, err := g.call(ctx, req.MatchID, &actors.AttachSeat{
		Seat: req.Seat, TicketID: req.TicketID, TicketExpiresMs: req.TicketExpires.UnixMilli(),
		ResumeFromSeq: req.ResumeFromSeq, SessionAddr: s.pid.Address, SessionID: s.pid.Id,
	})
	if err != nil {
		s.proc.Stop(s.pid)
		if errors.Is(err, errReplaced) {
			// A newer connection of this seat holds it (actors/seats.go onAttach).
			return nil, fmt.Errorf("%w: %w", ErrDetached, err)
		}
		return nil, err
	}
	g.mu.Lock()
	g.open[req.MatchID]++ // undone by Close, also on the failure below
	g.mu.Unlock()
	select {
	case <-s.initial:
	case <-ctx.Done():
		s.Close(false)
		return nil, fmt.Errorf("%w: no initial frames: %w", edge.ErrUnavailable, ctx.Err())
	}
	g.addLive(s)
	return s, nil
}

// seatClosed drops the match from the PID cache when no local seat needs it.
func (g *Gateway) seatClosed(matchID string) {
	g.mu.Lock()
	g.open[matchID]--
	last := g.open[matchID] <= 0
	if last {
		delete(g.open, matchID)
	}
	g.mu.Unlock()
	if last && g.cfg.Forget != nil {
		g.cfg.Forget(matchID)
	}
}

func mustRandomSuffix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a clash of
		// math/rand suffixes only makes the seat's registration fail, which
		// is reported.
		return fmt.Sprintf("%x", mrand.Uint64())
	}
	return hex.EncodeToString(b[:])
}

// Seat is one connection's attachment to a seat.
type Seat struct {
	gw      *Gateway
	matchID string
	seat    int
	sink    edge.SeatSink
	pid     *actor.PID
	// proc is what pid resolves to in the process registry (register).
	proc seatProcess
	// ticketExpiresMs is the opening ticket's expiry; re-attaches carry it
	// so that a new activation orders takeovers as the old one did.
	ticketExpiresMs int64

	lastSeq     atomic.Int64
	epoch       atomic.Int64
	initial     chan struct{}
	initialOnce sync.Once
	closeOnce   sync.Once
	detached    atomic.Bool

	// Keep-alive state: pinging is set while a keep-alive for this seat is
	// in flight, which also orders the accesses to failingSince.
	pinging      atomic.Bool
	failingSince time.Time
}

// LastSeq is the last event seq delivered to this seat.
func (s *Seat) LastSeq() int64 { return s.lastSeq.Load() }

// Intent submits an intent as the edge decoded it; the result and events
// arrive through the sink. ci reaches a grain on this member as it is, and
// is encoded only to cross the wire to another (actors.SubmitIntent).
func (s *Seat) Intent(ctx context.Context, ci *protocol.ClientIntent) error {
	return s.request(ctx, &actors.SubmitIntent{Seat: s.seat, SessionID: s.pid.Id, Intent: ci, SeenEpoch: s.epoch.Load()})
}

// Resync asks for events from fromSeq or a snapshot, through the sink.
func (s *Seat) Resync(ctx context.Context, fromSeq int64, full bool) error {
	return s.request(ctx, &actors.ResyncSeat{Seat: s.seat, SessionID: s.pid.Id, FromSeq: fromSeq, Full: full, SeenEpoch: s.epoch.Load()})
}

// maxReattaches bounds the re-attaches of one request: during a rolling
// restart a match can move twice within one request (the re-attach reaches
// the draining owner just before it leaves, the retry its successor).
const maxReattaches = 3

// request sends msg, re-attaching if the grain no longer knows this seat (it
// moved, or a new activation took over). A seat that stays unknown after
// maxReattaches is reported unavailable: the client reconnects and resumes.
func (s *Seat) request(ctx context.Context, msg any) error {
	if s.detached.Load() {
		return ErrDetached
	}
	_, err := s.gw.call(ctx, s.matchID, msg)
	if err == nil {
		return nil
	}
	return s.reattachAndRepeat(ctx, msg, err)
}

// reattachAndRepeat goes on with request after the first call gave err: it
// re-attaches the seat and repeats msg if the grain no longer knew the seat
// (a protocol step, not a retry of the transport, which the Requester
// owns); out of line for the reader's stack, like Gateway.settle.
func (s *Seat) reattachAndRepeat(ctx context.Context, msg any, err error) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if s.detached.Load() {
				return ErrDetached
			}
			_, err = s.gw.call(ctx, s.matchID, msg)
		}
		if !errors.Is(err, errNotAttached) {
			return err
		}
		if attempt == maxReattaches {
			return fmt.Errorf("%w: match %s: %w after %d re-attaches", edge.ErrUnavailable, s.matchID, err, attempt)
		}
		if err := s.reattach(ctx); err != nil {
			return err
		}
	}
}

// reattach attaches this seat again after its grain lost it. If
// another connection holds the seat meanwhile, this one was replaced.
func (s *Seat) reattach(ctx context.Context) error {
	if s.detached.Load() {
		return ErrDetached
	}
	_, err := s.gw.call(ctx, s.matchID, &actors.AttachSeat{
		Seat: s.seat, Reattach: true, ResumeFromSeq: s.lastSeq.Load(), TicketExpiresMs: s.ticketExpiresMs,
		SessionAddr: s.pid.Address, SessionID: s.pid.Id, SeenEpoch: s.epoch.Load(),
	})
	if errors.Is(err, errReplaced) {
		s.detach(edge.DetachReplaced)
		return ErrDetached
	}
	return err
}

// Close ends the attachment; leave says the player left on purpose.
func (s *Seat) Close(leave bool) {
	s.closeOnce.Do(func() {
		s.gw.dropLive(s)
		ctx, cancel := context.WithTimeout(context.Background(), s.gw.cfg.RequestTimeout)
		defer cancel()
		if _, err := s.gw.call(ctx, s.matchID, &actors.DetachSeat{Seat: s.seat, SessionID: s.pid.Id, Leave: leave}); err != nil &&
			!errors.Is(err, edge.ErrMatchNotFound) {
			s.gw.log.Debug("detach seat", "match", s.matchID, "seat", s.seat, "err", err)
		}
		s.proc.Stop(s.pid)
		s.gw.seatClosed(s.matchID)
	})
}

// Keep-alives prove to a grain that its seats' transports are alive, and
// notice when a grain moved or restarted: then the seat re-attaches, resuming
// from the last delivered seq, without the client noticing. If the grain
// cannot be found for ReattachTimeout the client is told to reconnect.
//
// One loop per Gateway does this for all its seats, every SeatKeepAlive,
// with one request per match that covers both seats when both are here: a
// match costs one keep-alive request per interval instead of two, and a seat
// no goroutine or timer of its own. The grain drops a seat after
// keepAliveMisses intervals without contact. (Skipping the ping of a seat
// that had a request of its own since the last tick would save more, but it
// stretches the longest gap between contacts to two intervals, too close to
// the grain's limit on a loaded machine; tried, not kept.)
//
// The interval is cut into slots and each match is pinged in one of them,
// picked by hashing its id, so the requests are spread evenly over the
// interval: pinging every match at one tick made a burst of one goroutine
// and one grain request per match (5,000 at once every 2 s at 5,000
// matches) that everything else queued behind for tens of milliseconds,
// the node's whole latency tail at that size (docs/performance.md §4,
// "Keep-alives spread over the interval"). A match keeps its
// slot, so its seats are still pinged exactly once per interval.

// keepAliveMaxSlots and keepAliveMinTick bound the slots of an interval:
// as many as fit ticks of at least keepAliveMinTick (a test's short
// interval), at most keepAliveMaxSlots (100 ms ticks at the default 2 s).
const (
	keepAliveMaxSlots = 20
	keepAliveMinTick  = 10 * time.Millisecond
)

// keepAliveSlots is how many slots an interval is cut into.
func keepAliveSlots(interval time.Duration) int {
	return max(1, min(keepAliveMaxSlots, int(interval/keepAliveMinTick)))
}

// slotOf is the slot in which the seats of a match are pinged.
func (g *Gateway) slotOf(matchID string) int {
	return int(maphash.String(g.slotSeed, matchID) % uint64(len(g.live)))
}

// addLive starts the keep-alives of s (and the loop, if it is not running).
func (g *Gateway) addLive(s *Seat) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live[g.slotOf(s.matchID)][s] = struct{}{}
	if !g.loopRunning {
		g.loopRunning = true
		go g.keepAlives()
	}
}

func (g *Gateway) dropLive(s *Seat) {
	g.mu.Lock()
	delete(g.live[g.slotOf(s.matchID)], s)
	g.mu.Unlock()
}

// keepAlives is the keep-alive loop: each tick pings the matches of the
// next slot. It ends when no seat is left.
func (g *Gateway) keepAlives() {
	t := time.NewTicker(g.cfg.Timing.SeatKeepAlive / time.Duration(len(g.live)))
	defer t.Stop()
	due := map[string][]*Seat{}
	for slot := 0; ; slot = (slot + 1) % len(g.live) {
		<-t.C
		if !g.pingSlot(slot, due) {
			return
		}
	}
}

// liveSeatsLocked counts the seats in every slot; g.mu must be held.
func (g *Gateway) liveSeatsLocked() int {
	n := 0
	for _, slot := range g.live {
		n += len(slot)
	}
	return n
}

// pingSlot sends the keep-alives of the seats in slot, one request per
// match; false when no seat is left anywhere (the loop has then stopped).
// due is the caller's scratch map, empty on entry and on return: the loop
// reuses it, since a map of a slot's matches made on every tick was a
// fifteenth of what a node of 5,000 quiet matches allocated.
func (g *Gateway) pingSlot(slot int, due map[string][]*Seat) bool {
	g.mu.Lock()
	if g.liveSeatsLocked() == 0 {
		g.loopRunning = false
		g.mu.Unlock()
		return false
	}
	for s := range g.live[slot] {
		if s.pinging.Load() {
			continue
		}
		due[s.matchID] = append(due[s.matchID], s)
	}
	g.mu.Unlock()
	if len(due) == 0 {
		return true
	}
	ctx := g.pingDeadline.Context()
	// One goroutine per match: a match whose member died must not hold up
	// the others' pings while its requests retry.
	for id, seats := range due {
		for _, s := range seats {
			s.pinging.Store(true)
		}
		go g.ping(ctx, id, seats)
	}
	clear(due)
	return true
}

// ping sends one keep-alive for the seats of one match and settles each,
// within ctx.
func (g *Gateway) ping(ctx context.Context, matchID string, seats []*Seat) {
	m := &actors.SeatPing{Seat: seats[0].seat, SessionID: seats[0].pid.Id, SeenEpoch: seats[0].epoch.Load()}
	for _, s := range seats[1:] {
		m.More = append(m.More, actors.PingedSeat{Seat: s.seat, SessionID: s.pid.Id})
		m.SeenEpoch = max(m.SeenEpoch, s.epoch.Load())
	}
	r, err := g.call(ctx, matchID, m)
	for i, s := range seats {
		serr := err
		if err == nil && slices.Contains(r.NotAttached, i) {
			serr = errNotAttached
		}
		if errors.Is(serr, errNotAttached) {
			serr = s.reattach(ctx)
		}
		s.pinged(serr)
	}
	for _, s := range seats {
		s.pinging.Store(false)
	}
}

// pinged settles one seat's keep-alive; err is nil when the grain holds it.
func (s *Seat) pinged(err error) {
	switch {
	case errors.Is(err, ErrDetached):
		s.gw.dropLive(s)
	case err == nil:
		s.failingSince = time.Time{}
	default:
		if s.failingSince.IsZero() {
			s.failingSince = time.Now()
		}
		if time.Since(s.failingSince) > s.gw.cfg.ReattachTimeout {
			s.gw.log.Warn("seat lost its match", "match", s.matchID, "seat", s.seat, "err", err)
			s.detach(edge.DetachUnavailable)
			s.gw.dropLive(s)
		}
	}
}

func (s *Seat) detach(reason edge.DetachReason) {
	if s.detached.CompareAndSwap(false, true) {
		s.sink.Detach(reason)
	}
}

// seatProcess receives what a grain pushes to one seat and hands it to the
// sink in order, dropping what an older activation sends after a newer one
// took over and event batches the seat already has.
//
// It is a bare actor.Process registered under the seat's PID, as protoactor
// registers its futures, not a spawned actor: a push runs in the sender's
// goroutine (the grain's, or protoactor remote's endpoint reader for a grain
// on another member) straight to the sink. A spawned actor cost a mailbox
// hop, with a goroutine start, per pushed batch (two per accepted intent: the
// sender's seat and the other seat), and a mailbox, an actor context and
// props kept per connection. The PID is the same as the actor's was, so
// grains, local or remote, reach it exactly as before.
type seatProcess struct {
	s   *Seat
	reg *actor.ProcessRegistryValue
	// mu serializes the filtering and the sink calls of concurrent senders
	// (an old and a new activation, the endpoint reader), as the mailbox
	// did: Deliver calls never overlap, and since a sender takes it in its
	// own goroutine, each sender's pushes keep its order.
	mu sync.Mutex
	// stopped is set by Stop; a push after it is dropped. Grains may still
	// hold the PID, and a PID value caches the Process it resolved to, so a
	// stopped seatProcess still gets called.
	stopped atomic.Bool
}

var _ actor.Process = (*seatProcess)(nil)

// register makes s reachable at a PID named id in sys's process registry.
// A name already taken is refused, as SpawnNamed refuses it.
func (s *Seat) register(sys *actor.ActorSystem, id string) error {
	s.proc.s, s.proc.reg = s, sys.ProcessRegistry
	pid, ok := sys.ProcessRegistry.Add(&s.proc, id)
	if !ok {
		// The name is another process's: not ours to remove.
		return fmt.Errorf("register seat %s: %w", id, actor.ErrNameExists)
	}
	s.pid = pid
	return nil
}

// SendUserMessage implements actor.Process: it takes a grain's push, in the
// caller's goroutine. The sink must not block (edge.SeatSink), so the critical
// section is short; nothing in it calls a grain or the cluster.
func (p *seatProcess) SendUserMessage(_ *actor.PID, message any) {
	// Remote delivery, and a sender with middleware, wrap the message.
	m, ok := actor.UnwrapEnvelopeMessage(message).(*envelope.Msg)
	if !ok {
		// Nothing else is meant for a seat (not even a PoisonPill: the
		// seat's end is Seat.Close's, which tells the grain first).
		return
	}
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		// A failing sink must not take the sender down with it: a panic
		// here would restart the grain, or end the whole process from
		// protoactor remote's endpoint reader. The spawned actor's
		// supervisor contained it to the seat; so does this.
		if r := recover(); r != nil {
			p.s.logger().Error("seat frames handler panicked", "match", p.s.matchID, "seat", p.s.seat, "panic", r)
		}
	}()
	if p.stopped.Load() {
		return
	}
	switch v := m.V.(type) {
	case *actors.SeatFrames:
		p.s.onFrames(v)
	case *actors.SeatDetached:
		if v.Epoch >= p.s.epoch.Load() {
			p.s.detach(edgeReason(v.Reason))
		}
	}
}

// edgeReason is the edge's name for a grain's detach reason; what the edge
// does not know means the attachment is lost (the client resumes).
func edgeReason(r actors.DetachReason) edge.DetachReason {
	switch r {
	case actors.DetachReplaced:
		return edge.DetachReplaced
	case actors.DetachShutdown:
		return edge.DetachShutdown
	default:
		return edge.DetachUnavailable
	}
}

// SendSystemMessage implements actor.Process. Nothing is needed from
// system messages: nobody watches a seat (a Watch, which only a spawned
// actor would answer, gets no Terminated), and its end is Seat.Close's.
func (p *seatProcess) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process: it unregisters the seat's PID and drops
// what is pushed from now on. It does not wait for a push already past the
// check (as an actor's message in progress also finished), so that a sink
// may close its seat from inside Deliver or Detach without a deadlock.
func (p *seatProcess) Stop(*actor.PID) {
	if p.stopped.Swap(true) {
		return
	}
	p.reg.Remove(p.s.pid)
}

// logger is the seat's gateway's logger (a seat made without one, in
// tests, logs to the default).
func (s *Seat) logger() *slog.Logger {
	if s.gw != nil && s.gw.log != nil {
		return s.gw.log
	}
	return slog.Default()
}

// onFrames filters one push and hands what is left to the sink; the caller
// holds proc.mu.
func (s *Seat) onFrames(f *actors.SeatFrames) {
	cur := s.epoch.Load()
	if f.Epoch < cur {
		return
	}
	if f.Epoch > cur {
		s.epoch.Store(f.Epoch)
	}
	out := make([][]byte, 0, len(f.Frames))
	last := s.lastSeq.Load()
	for _, fr := range f.Frames {
		if f.Initial && isHello(fr) && s.initialDone() {
			// A second answer to this connection's attach (it was retried
			// on a new activation after the first answer was lost): the
			// client has its ServerHello; the state frames still count.
			continue
		}
		if fr.ToSeq > 0 {
			if !f.Initial && !f.Requested && fr.ToSeq <= last && isPushedEvents(fr) {
				continue
			}
			last = max(last, fr.ToSeq)
			if isSnapshot(fr) {
				last = fr.ToSeq
			}
		}
		out = append(out, fr.Data)
	}
	s.lastSeq.Store(last)
	if len(out) > 0 && !s.detached.Load() {
		s.sink.Deliver(out)
	}
	if f.Initial {
		s.initialOnce.Do(func() { close(s.initial) })
	}
}

// initialDone reports whether the first initial frames arrived.
func (s *Seat) initialDone() bool {
	select {
	case <-s.initial:
		return true
	default:
		return false
	}
}

// isPushedEvents, isSnapshot and isHello look at the frame's union key: a
// ServerEvents frame starts with the fixarray(2) byte 0x92 then key 2.
func isPushedEvents(f actors.OutFrame) bool {
	return len(f.Data) > 1 && f.Data[1] == byte(protocol.ServerEventsKind)
}

func isSnapshot(f actors.OutFrame) bool {
	return len(f.Data) > 1 && f.Data[1] == byte(protocol.ServerSnapshotKind)
}

func isHello(f actors.OutFrame) bool {
	return len(f.Data) > 1 && f.Data[1] == byte(protocol.ServerHelloKind)
}

// Status returns the status of matchID (activating its grain).
func (g *Gateway) Status(ctx context.Context, matchID string) (*actors.MatchStatus, error) {
	r, err := g.call(ctx, matchID, &actors.Inspect{})
	if err != nil {
		return nil, err
	}
	if r.Status == nil {
		return nil, fmt.Errorf("match %s: status missing from the grain's answer", matchID)
	}
	return r.Status, nil
}
