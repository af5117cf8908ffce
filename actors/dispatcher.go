package actors

import (
	"sync/atomic"
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
	maxIdle int32
	idleFor time.Duration
	// work hands a batch to a parked goroutine; unbuffered, so a send only
	// succeeds when one is waiting.
	work chan func()
	idle atomic.Int32
}

var _ actor.Dispatcher = (*workerDispatcher)(nil)

func newWorkerDispatcher(throughput, maxIdle int, idleFor time.Duration) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, maxIdle: int32(maxIdle), idleFor: idleFor, work: make(chan func())}
}

// Schedule implements actor.Dispatcher: a parked goroutine takes fn, or a
// new one runs it. It never waits.
func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go d.worker(fn)
	}
}

// Throughput implements actor.Dispatcher.
func (d *workerDispatcher) Throughput() int { return d.throughput }

func (d *workerDispatcher) worker(fn func()) {
	var t *time.Timer
	for {
		fn()
		if d.idle.Add(1) > d.maxIdle {
			d.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(d.idleFor)
		} else {
			t.Reset(d.idleFor)
		}
		select {
		case fn = <-d.work:
			d.idle.Add(-1)
		case <-t.C:
			d.idle.Add(-1)
			return
		}
	}
}
