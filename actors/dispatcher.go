package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/internal/warm"
)

// workerDispatcher runs mailbox batches like protoactor's default
// dispatcher (one goroutine per batch, never a fixed pool: a grain blocks in
// its durable append, and group commit needs all those appends in flight at
// once), but on warm goroutines (package warm) that wait a moment for the
// next batch instead of exiting. A fresh goroutine starts with a small stack
// and the grain's intent path (decode, engine, encode, store call) grew it
// by copying on every batch: 4.6 % of the node's CPU in runtime.copystack
// under grain.Receive in the open1000 profile.
type workerDispatcher struct {
	throughput int
	pool       *warm.Pool
}

var _ actor.Dispatcher = (*workerDispatcher)(nil)

func newWorkerDispatcher(throughput, maxIdle int, idleFor time.Duration) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, pool: warm.New(maxIdle, idleFor)}
}

// Schedule implements actor.Dispatcher: the goroutine parked last takes
// fn, or a new one runs it. It never waits.
func (d *workerDispatcher) Schedule(fn func()) { d.pool.Go(fn) }

// Throughput implements actor.Dispatcher.
func (d *workerDispatcher) Throughput() int { return d.throughput }

// parked reports how many goroutines wait for a batch.
func (d *workerDispatcher) parked() int { return d.pool.Parked() }
