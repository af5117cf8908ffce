package actors

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestWorkerDispatcherNeverQueues: batches that block (a grain waiting for
// its durable append) never hold up others, however many there are.
func TestWorkerDispatcherNeverQueues(t *testing.T) {
	d := newWorkerDispatcher(300, 4, 50*time.Millisecond)
	const n = 64
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		d.Schedule(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	waitOrFail(t, &started, "all blocking batches to start")
	close(release)
	waitOrFail(t, &done, "all batches to finish")

	// Parked goroutines are bounded and leave when idle.
	waitFor(t, "every parked goroutine to leave after the idle time", func() bool { return d.parked() == 0 })
	// A parked goroutine takes the next batch: the one that ran the first
	// parks when done, and no other starts.
	var again sync.WaitGroup
	again.Add(2)
	d.Schedule(again.Done)
	waitFor(t, "the goroutine of one batch to park", func() bool { return d.parked() >= 1 })
	if n := d.parked(); n != 1 {
		t.Fatalf("%d parked after one batch, want 1", n)
	}
	d.Schedule(again.Done)
	waitOrFail(t, &again, "batches on a parked goroutine")
}

// TestWorkerDispatcherKeepsFewParked: after a burst parks many goroutines,
// a steady load of one batch at a time keeps reusing the goroutine parked
// last, and the others leave after the idle time: a busy node keeps only
// the goroutines (and grown stacks) its concurrency needs.
func TestWorkerDispatcherKeepsFewParked(t *testing.T) {
	const burst = 32
	d := newWorkerDispatcher(300, 64, 300*time.Millisecond)
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(burst)
	done.Add(burst)
	for range burst {
		d.Schedule(func() { started.Done(); <-release; done.Done() })
	}
	waitOrFail(t, &started, "the burst to start")
	close(release)
	waitOrFail(t, &done, "the burst to finish")
	waitFor(t, "the whole burst to park", func() bool { return d.parked() >= burst })
	// One batch every 2 ms: taken in turn, each of the 32 would be reused
	// every 64 ms, well within the idle time, and none would leave. The
	// pause is the load's pace, not a wait for something to happen.
	ran := make(chan struct{}, 1)
	deadline := time.Now().Add(10 * time.Second)
	for d.parked() > 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d still parked under a load of one batch at a time, want at most 2", d.parked())
		}
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		time.Sleep(2 * time.Millisecond)
	}
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

//go:noinline
func useStack(depth int) byte {
	var pad [256]byte
	if depth == 0 {
		return pad[0]
	}
	pad[depth%256] = byte(depth)
	return useStack(depth-1) + pad[(depth+1)%256]
}

// BenchmarkDispatcher runs batches that need about 24 KiB of stack, like a
// grain's intent path, through protoactor's default dispatcher (a new
// goroutine each) and through workerDispatcher.
func BenchmarkDispatcher(b *testing.B) {
	for _, c := range []struct {
		name string
		d    actor.Dispatcher
	}{
		{"goroutine", actor.NewDefaultDispatcher(300)},
		{"worker", newWorkerDispatcher(300, 256, time.Second)},
	} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan struct{}, 1)
			fn := func() { useStack(80); done <- struct{}{} }
			b.ReportAllocs()
			for b.Loop() {
				c.d.Schedule(fn)
				<-done
			}
			runtime.GC()
		})
	}
}
