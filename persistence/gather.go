package persistence

import (
	"context"
	"sync"
	"time"
)

// gatherer gathers requests that wait while others run and hands them to
// run in batches, on at most workers goroutines at once (each holds one
// pooled connection while it runs a batch). Grouped claims and grouped
// ticket consumption share it. There is no timer: a request that finds a
// worker free starts one at once, and its batch is itself alone.
type gatherer[R any] struct {
	workers int
	// batch is the most requests in one batch.
	batch int
	// ctx is a request's context: one whose caller left is dropped.
	ctx func(R) context.Context
	// key names what a request touches: two with one key never share a
	// batch (the second waits for the next one).
	key func(R) string
	// joins says whether r may join a batch that first started (nil: any
	// may).
	joins func(first, r R) bool
	// run carries out one batch and answers each of its requests.
	run func([]R)

	mu      sync.Mutex
	queue   []R
	running int
}

// add queues r and starts a worker if one is free. The worker runs on a
// goroutine of its own, not the caller's: a caller that became a worker
// would otherwise answer only once it had emptied the queue, last of the
// herd.
func (g *gatherer[R]) add(r R) {
	g.mu.Lock()
	g.queue = append(g.queue, r)
	if g.running < g.workers {
		g.running++
		go g.work()
	}
	g.mu.Unlock()
}

// work runs batches from the queue until it is empty.
func (g *gatherer[R]) work() {
	for {
		batch := g.take()
		if batch == nil {
			return
		}
		g.run(batch)
	}
}

// take removes the next batch from the queue: requests whose callers
// still wait, each key once, that may join the first. nil when the queue
// is empty; the worker is then no longer running.
func (g *gatherer[R]) take() []R {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.queue) > 0 {
		var batch, rest []R
		seen := map[string]bool{}
		for _, r := range g.queue {
			switch {
			case g.ctx(r).Err() != nil:
				// Its caller left: nothing to do for it.
			case len(batch) < g.batch && (len(batch) == 0 || g.joins == nil || g.joins(batch[0], r)) && !seen[g.key(r)]:
				seen[g.key(r)] = true
				batch = append(batch, r)
			default:
				rest = append(rest, r)
			}
		}
		g.queue = rest
		if len(batch) > 0 {
			return batch
		}
	}
	g.running--
	return nil
}

// batchTimeout bounds a batch whose requests carry no deadline.
const batchTimeout = 10 * time.Second

// batchContext bounds a batch by the latest deadline of its requests (or
// batchTimeout if one has none): a request whose caller gives up earlier
// leaves the others their time.
func batchContext[R any](batch []R, ctxOf func(R) context.Context) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, r := range batch {
		dl, ok := ctxOf(r).Deadline()
		if !ok {
			return context.WithTimeout(context.Background(), batchTimeout)
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
