package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerDispatcher runs mailbox batches like protoactor's default
// dispatcher (one goroutine per batch, never a fixed pool: a grain blocks in
// its durable append, and group commit needs all those appends in flight at
// once), but a goroutine that finished a batch waits a moment for the next
// one instead of exiting. A fresh goroutine starts with a small stack and
// the grain's intent path (decode, engine, encode, store call) grew it by
// copying on every batch: 4.6 % of the node's CPU in runtime.copystack under
// grain.Receive in the open1000 profile. A reused goroutine keeps its grown
// stack until the GC shrinks an idle one.
type workerDispatcher struct {
	throughput int
	// maxIdle bounds the goroutines parked between batches.
	maxIdle int
	idleFor time.Duration

	mu sync.Mutex
	// idle holds the parked goroutines, the most recently parked last.
	// Schedule takes the last one: a load that keeps k batches running
	// at once reuses the same k or so goroutines, and the rest, at the
	// bottom, reach idleFor and exit with their grown stacks. (A channel
	// that every parked goroutine waits on hands batches out in turn
	// instead, so under steady load all maxIdle of them stay.)
	idle []*worker
}

// worker is a parked goroutine's hand-over slot; its buffer of one lets
// Schedule hand a batch over without waiting.
type worker struct{ work chan func() }

var _ actor.Dispatcher = (*workerDispatcher)(nil)

func newWorkerDispatcher(throughput, maxIdle int, idleFor time.Duration) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, maxIdle: maxIdle, idleFor: idleFor}
}

// Schedule implements actor.Dispatcher: the goroutine parked last takes
// fn, or a new one runs it. It never waits.
func (d *workerDispatcher) Schedule(fn func()) {
	d.mu.Lock()
	if n := len(d.idle); n > 0 {
		w := d.idle[n-1]
		d.idle[n-1] = nil
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		w.work <- fn
		return
	}
	d.mu.Unlock()
	go d.run(&worker{work: make(chan func(), 1)}, fn)
}

// Throughput implements actor.Dispatcher.
func (d *workerDispatcher) Throughput() int { return d.throughput }

// parked reports how many goroutines wait for a batch.
func (d *workerDispatcher) parked() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.idle)
}

func (d *workerDispatcher) run(w *worker, fn func()) {
	var t *time.Timer
	for {
		fn()
		if !d.park(w) {
			return
		}
		if t == nil {
			t = time.NewTimer(d.idleFor)
		} else {
			t.Reset(d.idleFor)
		}
		select {
		case fn = <-w.work:
		case <-t.C:
			if d.leave(w) {
				return
			}
			// Schedule took it just now; its batch is on the way.
			fn = <-w.work
		}
	}
}

// park puts w on top of the idle stack unless maxIdle are parked.
func (d *workerDispatcher) park(w *worker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.idle) >= d.maxIdle {
		return false
	}
	d.idle = append(d.idle, w)
	return true
}

// leave takes w off the idle stack, where it waits near the bottom; false:
// Schedule has taken it already.
func (d *workerDispatcher) leave(w *worker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, x := range d.idle {
		if x == w {
			n := copy(d.idle[i:], d.idle[i+1:])
			d.idle[i+n] = nil
			d.idle = d.idle[:i+n]
			return true
		}
	}
	return false
}
