package cluster

import (
	"log/slog"
	"sync"
	"time"
)

// Stall detection. A process that did not run for a while (SIGSTOP, a VM
// paused, swapped out) wakes with a view from before the stall: peers may
// have evicted it, or its own probes timed out meanwhile and it is about to
// declare them dead. In either view it owns identities that now live
// elsewhere, and requests queued in its sockets during the stall arrive at
// once. For a quarantine after a stall it should therefore neither reclaim
// nor activate anything; by then the eviction notice has arrived (and the
// process exits) or the view has settled.
//
// A busy machine delays goroutines too (the tests' 2 shared cores under
// -race see 2-4 s), so the threshold is above the usual suspicion timeout's
// order of magnitude and the quarantine grows with the stall: a stall too
// short to have been noticed by peers costs little.
const (
	// stallThreshold: a gap this long between ticks of a goroutine that
	// ticks every stallThreshold/6 means the process did not run.
	stallThreshold = 3 * time.Second
	// The quarantine after a stall lasts twice the stall, within these bounds.
	minStallQuarantine = 3 * time.Second
	maxStallQuarantine = 10 * time.Second
)

type stallWatch struct {
	log   *slog.Logger
	mu    sync.Mutex
	last  time.Time
	until time.Time
}

func newStallWatch(log *slog.Logger) *stallWatch {
	return &stallWatch{log: log, last: time.Now()}
}

func (w *stallWatch) run(quit <-chan struct{}) {
	t := time.NewTicker(stallThreshold / 6)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			w.unsettled()
		}
	}
}

// unsettled observes the time now: a gap since the last observation above
// the threshold starts a quarantine. Checking the gap here, not only on the
// ticker, matters: after a stall every overdue timer fires at once, and a
// caller may run before the ticker goroutine does.
func (w *stallWatch) unsettled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if gap := now.Sub(w.last); gap > stallThreshold {
		q := min(max(2*gap, minStallQuarantine), maxStallQuarantine)
		w.until = now.Add(q)
		w.log.Warn("cluster: this process was stalled; no reclaim or activation until the view settles",
			slog.Duration("stall", gap), slog.Duration("quarantine", q))
	}
	w.last = now
	return now.Before(w.until)
}

// Unsettled reports that this process was stalled (did not run for more
// than 3 s) recently: for twice the stall, between 3 and 10 s. Callers should not reclaim or activate
// grains meanwhile: see the comment on stall detection in cluster/stall.go.
func (n *Node) Unsettled() bool {
	return n.stall.unsettled()
}
