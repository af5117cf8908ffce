package persistence_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// pruneScript answers PruneFinishedLogs from a script of match counts and
// records the limits and cut-offs it was called with.
type pruneScript struct {
	mu      sync.Mutex
	answers []int64 // matches pruned per call; an exhausted script prunes none
	fail    bool    // the first call fails
	limits  []int
	befores []time.Time
}

func (p *pruneScript) PruneFinishedLogs(_ context.Context, before time.Time, limit int) (int64, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits = append(p.limits, limit)
	p.befores = append(p.befores, before)
	if p.fail {
		p.fail = false
		return 0, 0, errors.New("scripted failure")
	}
	if len(p.answers) == 0 {
		return 0, 0, nil
	}
	m := p.answers[0]
	p.answers = p.answers[1:]
	return m, 10 * m, nil
}

func (p *pruneScript) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.limits)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPruneFinishedEvery: each tick prunes in batches until a batch comes
// back short, with the cut-off the retention age before now; a failed
// statement ends that tick and the next tick tries again.
func TestPruneFinishedEvery(t *testing.T) {
	rs := &pruneScript{fail: true, answers: []int64{persistence.PruneBatch, persistence.PruneBatch, 3}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		persistence.PruneFinishedEvery(ctx, rs, time.Hour, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	// Tick 1 fails at once; tick 2 makes three calls (full, full, short).
	waitFor(t, 10*time.Second, "four prune calls", func() bool { return rs.calls() >= 4 })
	cancel()
	<-done
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.answers) != 0 {
		t.Fatalf("batches left unasked: %v (calls %d)", rs.answers, len(rs.limits))
	}
	for i, l := range rs.limits {
		if l != persistence.PruneBatch {
			t.Errorf("call %d: limit %d, want %d", i, l, persistence.PruneBatch)
		}
		if age := time.Since(rs.befores[i]); age < time.Hour || age > time.Hour+time.Minute {
			t.Errorf("call %d: cut-off %v ago, want the retention age (1h)", i, age)
		}
	}
}

type purgeCount struct {
	mu      sync.Mutex
	befores []time.Time
}

func (p *purgeCount) PurgeTickets(_ context.Context, before time.Time) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.befores = append(p.befores, before)
	return 1, nil
}

// TestPurgeTicketsEvery: the purge runs at every tick, for tickets expired
// a minute before it, and returns when its context ends.
func TestPurgeTicketsEvery(t *testing.T) {
	p := &purgeCount{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		persistence.PurgeTicketsEvery(ctx, p, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	waitFor(t, 10*time.Second, "two purges", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.befores) >= 2
	})
	cancel()
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.befores {
		if ago := time.Since(b); ago < time.Minute || ago > 2*time.Minute {
			t.Errorf("purge %d: cut-off %v ago, want a minute", i, ago)
		}
	}
}
