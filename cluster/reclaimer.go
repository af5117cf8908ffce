package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Reclaimer defaults.
const (
	DefaultReclaimInterval    = 30 * time.Second
	DefaultReclaimJitter      = 0.2
	DefaultReclaimSettle      = time.Second
	DefaultReclaimPageSize    = 500
	DefaultReclaimConcurrency = 8
	DefaultReclaimWakeTimeout = 10 * time.Second
	maxLoggedWakeFailures     = 3 // per sweep: a dead store or member would repeat the same line thousands of times
)

// ReclaimerConfig configures a Reclaimer. List, Kind and Wake are required.
type ReclaimerConfig struct {
	// Kind is the grain kind the listed identities belong to.
	Kind string
	// List returns up to limit identities that should be active, in strictly
	// ascending order and all greater than after ("" starts from the
	// beginning). Fewer than limit means the end. It is called from one
	// goroutine at a time.
	List func(ctx context.Context, after string, limit int) ([]string, error)
	// Wake returns the message sent to each identity this member owns; the
	// grain only has to accept it (activation is the point).
	Wake func(identity string) any
	// Leased, if set, reports that identity is held by a live owner: another
	// member that is still in this member's view and wrote the identity's
	// state recently (the caller decides what recently is). Such an identity
	// is not woken even when this member's view says it owns it: views
	// differ for a while after a join, and a member that was frozen wakes
	// with a view from before its freeze, in which it may own identities
	// that moved meanwhile. Waking them would only steal them (fencing keeps
	// that safe, but every steal costs the players a pause). Called from the
	// goroutine that calls List, right after List returned the identity.
	Leased func(identity string) bool
	// Interval is the time between sweeps, each shifted by a random ±Jitter
	// fraction so members do not sweep in step. Default 30 s, jitter 0.2.
	Interval time.Duration
	Jitter   float64
	// Settle is how long a topology change waits before an extra sweep, so
	// the views of the members converge first. Default 1 s.
	Settle time.Duration
	// PageSize is the limit passed to List. Default 500.
	PageSize int
	// Concurrency bounds the wake requests in flight. Default 8.
	Concurrency int
	// WakeTimeout bounds one wake request, retries included. Default 10 s.
	WakeTimeout time.Duration
	// Logger defaults to the node's logger.
	Logger *slog.Logger
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	Listed  int // identities List returned
	Owned   int // of those, identities this member owns in its current view
	Skipped int // owned identities already active here (no request sent)
	Leased  int // owned identities left alone because a live owner holds them
	Woken   int // wake requests answered
	Failed  int // wake requests that failed
}

// Reclaimer activates the grains this member owns that should be running,
// without waiting for a client: after a member dies, the survivors each wake
// their new share of its grains, so timers stored with them fire again. It
// knows nothing about what the identities are; List says which should be
// active. Sweeps run periodically and shortly after every topology change.
type Reclaimer struct {
	node *Node
	cfg  ReclaimerConfig
	log  *slog.Logger
}

// NewReclaimer checks cfg and returns a Reclaimer for node; call Run.
func NewReclaimer(node *Node, cfg ReclaimerConfig) (*Reclaimer, error) {
	if node == nil {
		return nil, fmt.Errorf("%w: reclaimer needs a node", ErrInvalidConfig)
	}
	if cfg.Kind == "" || cfg.List == nil || cfg.Wake == nil {
		return nil, fmt.Errorf("%w: reclaimer needs Kind, List and Wake", ErrInvalidConfig)
	}
	if cfg.Interval < 0 || cfg.Settle < 0 || cfg.WakeTimeout < 0 || cfg.PageSize < 0 || cfg.Concurrency < 0 {
		return nil, fmt.Errorf("%w: reclaimer durations and sizes must not be negative", ErrInvalidConfig)
	}
	if cfg.Jitter < 0 || cfg.Jitter >= 1 {
		return nil, fmt.Errorf("%w: reclaimer Jitter must be in [0, 1), got %v", ErrInvalidConfig, cfg.Jitter)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultReclaimInterval
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = DefaultReclaimJitter
	}
	if cfg.Settle == 0 {
		cfg.Settle = DefaultReclaimSettle
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultReclaimPageSize
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultReclaimConcurrency
	}
	if cfg.WakeTimeout == 0 {
		cfg.WakeTimeout = DefaultReclaimWakeTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = node.log
	}
	return &Reclaimer{node: node, cfg: cfg, log: log.With(slog.String("reclaim_kind", cfg.Kind))}, nil
}

// Run sweeps until ctx ends or the node stops, and returns ctx.Err() (or
// ErrStopped). It first waits until the node has joined its seeds (alone, a
// member owns everything and would activate every listed identity), then
// sweeps about Settle later, and again after every topology change.
func (r *Reclaimer) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.node.Joined():
	}
	next := time.NewTimer(r.jittered(r.cfg.Settle))
	defer next.Stop()
	changed := r.node.TopologyChanged()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			changed = r.node.TopologyChanged()
			// Coalesce a burst of changes into one sweep, Settle after the
			// last; the periodic schedule restarts after it.
			next.Reset(r.cfg.Settle)
			continue
		case <-next.C:
		}
		if r.node.stopped.Load() {
			return ErrStopped
		}
		if r.node.Unsettled() {
			// Woken from a stall: the view is from before it (Node.Unsettled).
			next.Reset(r.cfg.Settle)
			continue
		}
		res, err := r.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("cluster: reclaim sweep failed", slog.Any("error", err), slog.Any("result", res))
		case res.Owned > 0:
			r.log.Debug("cluster: reclaim sweep", slog.Any("result", res))
		}
		next.Reset(r.jittered(r.cfg.Interval))
	}
}

// jittered returns d shifted by a random fraction in [-Jitter, +Jitter].
func (r *Reclaimer) jittered(d time.Duration) time.Duration {
	f := 1 + r.cfg.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(d) * f)
}

var errListOrder = errors.New("cluster: reclaim List returned identities out of order")

// Sweep pages through List once and wakes every identity this member owns
// that is not already active here, by this member's current view (Run waits
// for the node to join first; a direct call does not). It returns when all wakes finished; a
// List error stops the sweep early and is returned with the counts so far.
func (r *Reclaimer) Sweep(ctx context.Context) (SweepResult, error) {
	var (
		res           SweepResult
		woken, failed atomic.Int64
		logged        atomic.Int64
		wg            sync.WaitGroup
	)
	finish := func(err error) (SweepResult, error) {
		wg.Wait()
		res.Woken, res.Failed = int(woken.Load()), int(failed.Load())
		return res, err
	}
	sem := make(chan struct{}, r.cfg.Concurrency)
	self := r.node.Self()
	after := ""
	for {
		ids, err := r.cfg.List(ctx, after, r.cfg.PageSize)
		if err != nil {
			return finish(fmt.Errorf("cluster: reclaim list after %q: %w", after, err))
		}
		for _, id := range ids {
			if id <= after {
				return finish(fmt.Errorf("%w: %q after %q", errListOrder, id, after))
			}
			after = id
			res.Listed++
			if r.node.OwnerAddress(id, r.cfg.Kind) != self {
				continue
			}
			res.Owned++
			if pid, ok := r.node.c.PidCache.Get(id, r.cfg.Kind); ok && pid.Address == self {
				// A local activation removes its own entry when it stops,
				// so a local cached PID means the grain is running.
				res.Skipped++
				continue
			}
			if r.cfg.Leased != nil && r.cfg.Leased(id) {
				res.Leased++
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return finish(ctx.Err())
			}
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				defer func() { <-sem }()
				wctx, cancel := context.WithTimeout(ctx, r.cfg.WakeTimeout)
				defer cancel()
				if _, err := r.node.Request(wctx, id, r.cfg.Kind, r.cfg.Wake(id)); err != nil {
					failed.Add(1)
					if logged.Add(1) <= maxLoggedWakeFailures && ctx.Err() == nil {
						r.log.Warn("cluster: reclaim wake failed", slog.String("identity", id), slog.Any("error", err))
					}
					return
				}
				woken.Add(1)
			}(id)
		}
		if len(ids) < r.cfg.PageSize {
			return finish(nil)
		}
	}
}
