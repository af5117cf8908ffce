package deadline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestContextEndsNoEarlierThanTheTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := New(context.Background(), timeout)
	for range 50 {
		before := time.Now()
		ctx := s.Context()
		after := time.Now()
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("shared context has no deadline")
		}
		if d.Before(before.Add(timeout)) {
			t.Fatalf("deadline %v is before the timeout from the call (%v)", d, before.Add(timeout))
		}
		if tick := timeout / 128; d.After(after.Add(timeout + max(tick, time.Millisecond))) {
			t.Fatalf("deadline %v is more than a tick after the timeout from the call (%v)", d, after.Add(timeout))
		}
		time.Sleep(700 * time.Microsecond) // spread the calls over several ticks
	}
}

func TestCallsInOneTickShareAContext(t *testing.T) {
	s := New(context.Background(), time.Hour) // a tick of 28 s
	distinct := map[context.Context]bool{}
	for range 100 {
		distinct[s.Context()] = true
	}
	// 100 calls within microseconds span at most two ticks.
	if len(distinct) > 2 {
		t.Fatalf("100 calls in a row got %d contexts, want one per tick", len(distinct))
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = s.Context() }); allocs >= 1 {
		t.Fatalf("Context allocates %.2f times per call within a tick, want none", allocs)
	}
}

func TestContextEndsAtItsDeadline(t *testing.T) {
	s := New(context.Background(), 30*time.Millisecond)
	ctx := s.Context()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("shared context did not end within 5 s of its 30 ms deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
	}
	if next := s.Context(); next.Err() != nil {
		t.Fatalf("a context asked for after the last one ended is already over: %v", next.Err())
	}
}

func TestParentEndsSharedContexts(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	s := New(parent, time.Hour)
	ctx := s.Context()
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("shared context did not end with its parent")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want Canceled", ctx.Err())
	}
}

func TestConcurrentCallers(t *testing.T) {
	const timeout = 50 * time.Millisecond
	s := New(context.Background(), timeout)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				before := time.Now()
				d, _ := s.Context().Deadline()
				if d.Before(before.Add(timeout)) {
					errs <- errors.New("a concurrent caller got a deadline before its timeout")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
