package bots

import (
	"context"
	"testing"
	"time"
)

// TestPacerNudge: closing the nudge lets the next intent go at once, also
// when none was ready at that moment (the failover workload's intent right
// after the kill), and only one: later intents wait for the ticks again.
func TestPacerNudge(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readyBefore bool // a bot waits in wait() when the nudge comes
	}{{"bot waiting", true}, {"bot not ready yet", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := newPacer(1.0/3600, &Stats{}) // ticks an hour apart: only the nudge can grant
			nudge := make(chan struct{})
			go p.run(ctx, nudge)
			granted := make(chan bool, 1)
			send := func() { granted <- p.wait(ctx) }
			if tc.readyBefore {
				go send()
				waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.waiting == 1 })
			}
			close(nudge)
			if !tc.readyBefore {
				waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.owed })
				go send()
			}
			awaitGrant(t, granted, "the nudge granted nothing")
			p.done()
			go send()
			select {
			case <-granted:
				t.Fatal("a second intent went without a tick")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

// TestPacerStartsWithTheFirstIntent: ticks before the match's first intent
// is chosen neither happen nor count as skipped; once a bot waits, the
// ticks grant it and go on at the rate.
func TestPacerStartsWithTheFirstIntent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &Stats{}
	p := newPacer(1000, st) // a tick a millisecond
	go p.run(ctx, nil)
	time.Sleep(30 * time.Millisecond) // the bots still reading the opening
	if ticks, skipped := st.Ticks(); ticks != 0 || skipped != 0 {
		t.Fatalf("%d ticks (%d skipped) before any intent was chosen, want none", ticks, skipped)
	}
	granted := make(chan bool, 1)
	go func() { granted <- p.wait(ctx) }()
	awaitGrant(t, granted, "the first intent was never granted")
	if ticks, skipped := st.Ticks(); ticks < 1 || skipped != 0 {
		t.Errorf("%d ticks, %d skipped at the first grant, want at least one and none skipped", ticks, skipped)
	}
	p.done()
	waitFor(t, func() bool { ticks, skipped := st.Ticks(); return skipped >= 3 && ticks >= 4 })
}

// awaitGrant waits up to 10 s for a wait's result on granted, which must
// be a grant; none fails the test with missing.
func awaitGrant(t *testing.T, granted <-chan bool, missing string) {
	t.Helper()
	select {
	case ok := <-granted:
		if !ok {
			t.Fatal("wait ended without a grant")
		}
	case <-time.After(10 * time.Second):
		t.Fatal(missing)
	}
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
	}
}
