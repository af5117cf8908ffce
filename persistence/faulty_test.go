package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

func TestFaultyStore(t *testing.T) {
	t.Parallel()
	errDisk := errors.New("disk on fire")
	one := func(seq int64) []persistence.LogEntry {
		return []persistence.LogEntry{{Seq: seq, Payload: []byte("p")}}
	}
	setup := func(t *testing.T) (*persistence.FaultyStore, int64) {
		t.Helper()
		f := persistence.NewFaultyStore(openEmbedded(t, t.TempDir()))
		ctx := testContext(t)
		if err := f.CreateMatch(ctx, "m", nil); err != nil {
			t.Fatal(err)
		}
		rec, err := f.Claim(ctx, "m", "a")
		if err != nil {
			t.Fatal(err)
		}
		return f, rec.Epoch
	}
	lastSeq := func(t *testing.T, f *persistence.FaultyStore) int64 {
		t.Helper()
		rec, err := f.Inner().Claim(testContext(t), "m", "check")
		if err != nil {
			t.Fatal(err)
		}
		return rec.LastSeq()
	}

	t.Run("FailNextWritesNothing", func(t *testing.T) {
		f, epoch := setup(t)
		f.FailNext(persistence.MethodAppend, 2, errDisk)
		for i := range 2 {
			if err := f.Append(testContext(t), "m", epoch, one(1)); !errors.Is(err, errDisk) {
				t.Fatalf("call %d: err = %v, want the injected error", i, err)
			}
		}
		if err := f.Append(testContext(t), "m", epoch, one(1)); err != nil {
			t.Fatalf("third call: %v, want the fault used up", err)
		}
		if got := f.Calls(persistence.MethodAppend); got != 3 {
			t.Errorf("Calls = %d, want 3", got)
		}
		if got := lastSeq(t, f); got != 1 {
			t.Errorf("last seq = %d, want 1: failed calls must not write", got)
		}
	})

	t.Run("LoseReplyNextWrites", func(t *testing.T) {
		f, epoch := setup(t)
		f.LoseReplyNext(persistence.MethodAppend, 1, nil)
		if err := f.Append(testContext(t), "m", epoch, one(1)); !errors.Is(err, persistence.ErrInjected) {
			t.Fatalf("err = %v, want ErrInjected", err)
		}
		if got := lastSeq(t, f); got != 1 {
			t.Errorf("last seq = %d, want 1: the write behind a lost reply lands", got)
		}
	})

	t.Run("FaultsArePerMethod", func(t *testing.T) {
		f, epoch := setup(t)
		f.FailNext(persistence.MethodSaveSnapshot, 1, nil)
		if err := f.Append(testContext(t), "m", epoch, one(1)); err != nil {
			t.Fatalf("append: %v", err)
		}
		err := f.SaveSnapshot(testContext(t), "m", epoch, persistence.Snapshot{Seq: 1})
		if !errors.Is(err, persistence.ErrInjected) {
			t.Fatalf("snapshot: err = %v, want ErrInjected", err)
		}
	})

	t.Run("Latency", func(t *testing.T) {
		f, epoch := setup(t)
		const delay = 50 * time.Millisecond
		f.SetLatency(persistence.MethodAppend, delay)
		start := time.Now()
		if err := f.Append(testContext(t), "m", epoch, one(1)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("append took %s, want at least %s", took, delay)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if err := f.Append(ctx, "m", epoch, one(2)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("append with a deadline shorter than the latency: err = %v, want DeadlineExceeded", err)
		}
		if got := lastSeq(t, f); got != 1 {
			t.Errorf("last seq = %d, want 1", got)
		}
	})

	t.Run("Hold", func(t *testing.T) {
		f, epoch := setup(t)
		release := f.Hold(persistence.MethodAppend)
		done := make(chan error, 1)
		go func() { done <- f.Append(testContext(t), "m", epoch, one(1)) }()
		for deadline := time.Now().Add(10 * time.Second); f.Calls(persistence.MethodAppend) == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the held append never reached the store")
			}
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("held append returned before its release: %v", err)
		default:
		}
		release()
		if err := <-done; err != nil {
			t.Fatalf("released append: %v", err)
		}
		release() // a second release is harmless
		if err := f.Append(testContext(t), "m", epoch, one(2)); err != nil {
			t.Fatalf("append after release: %v", err)
		}
		f.Hold(persistence.MethodAppend)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if err := f.Append(ctx, "m", epoch, one(3)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("held append whose context ends: err = %v, want DeadlineExceeded", err)
		}
		if got := lastSeq(t, f); got != 2 {
			t.Errorf("last seq = %d, want 2", got)
		}
	})

	t.Run("Reset", func(t *testing.T) {
		f, epoch := setup(t)
		f.FailNext(persistence.MethodAppend, 5, nil)
		f.Reset()
		if err := f.Append(testContext(t), "m", epoch, one(1)); err != nil {
			t.Fatalf("append after Reset: %v", err)
		}
		if got := f.Calls(persistence.MethodAppend); got != 1 {
			t.Errorf("Calls after Reset = %d, want 1", got)
		}
	})
}
