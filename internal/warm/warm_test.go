package warm

import (
	"sync"
	"testing"
	"time"
)

// TestPoolNeverQueues: functions that block never hold up others, however
// many; parked goroutines are bounded and leave when idle, and a parked one
// takes the next function.
func TestPoolNeverQueues(t *testing.T) {
	p := New(4, 50*time.Millisecond)
	const n = 64
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		p.Go(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	select {
	case <-allStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("blocking functions queued behind each other: not all of them started")
	}
	close(release)
	done.Wait()
	wait(t, "every parked goroutine to leave after the idle time", func() bool { return p.Parked() == 0 })
	p.Go(func() {})
	wait(t, "the goroutine of one function to park", func() bool { return p.Parked() == 1 })
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	wait(t, "the same goroutine to park again", func() bool { return p.Parked() == 1 })
}

// wait polls cond until it holds, for 10 s at most.
func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
