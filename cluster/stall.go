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
// once (those its senders gave up on claim nothing: they carry their
// deadline, cluster/deadline.go, which works whether or not the stall is
// noticed here). For a quarantine after a stall it should therefore neither
// reclaim nor activate anything; by then the eviction notice has arrived
// (and the process exits) or the view has settled.
//
// The threshold follows the failure detector (FailureDetection.stallThreshold):
// any stall long enough for peers to declare this member dead is longer than
// it, so no member can be evicted by a stall it does not notice. A member
// with no peer in its view cannot be declared dead by anybody and is never
// quarantined (a single node, and every in-process test: their goroutines
// stall for seconds under -race on a loaded machine). Tests whose members
// must ride out such stalls scale the detection timers, and the threshold
// with them.
const (
	// The quarantine after a stall lasts twice the stall, at most this
	// long (or twice the earliest death, if the detector is slower).
	maxStallQuarantine = 10 * time.Second
	// The stall watch ticks this many times per threshold.
	stallTicksPerThreshold = 6
)

type stallWatch struct {
	log       *slog.Logger
	threshold time.Duration
	maxQ      time.Duration
	peers     func() int // other members in this member's view

	mu    sync.Mutex
	last  time.Time
	until time.Time
}

func newStallWatch(log *slog.Logger, fd FailureDetection, peers func() int) *stallWatch {
	return &stallWatch{log: log, threshold: fd.stallThreshold(), maxQ: max(maxStallQuarantine, 2*fd.earliestDeath()),
		peers: peers, last: time.Now()}
}

func (w *stallWatch) run(quit <-chan struct{}) {
	// Count from now: the start before it (joining, dialling peers, the
	// database) is work, not a stall, and can take longer than the
	// threshold on a busy machine.
	w.restart(time.Now())
	t := time.NewTicker(w.threshold / stallTicksPerThreshold)
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

func (w *stallWatch) restart(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = now
}

// unsettled observes the time now: a gap since the last observation above
// the threshold starts a quarantine. Checking the gap here, not only on the
// ticker, matters: after a stall every overdue timer fires at once, and a
// caller may run before the ticker goroutine does.
func (w *stallWatch) unsettled() bool {
	return w.observe(time.Now())
}

func (w *stallWatch) observe(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gap := now.Sub(w.last); gap > w.threshold && w.peers() > 0 {
		q := min(2*gap, w.maxQ)
		w.until = now.Add(q)
		w.log.Warn("cluster: this process was stalled; no reclaim or activation until the view settles",
			slog.Duration("stall", gap), slog.Duration("threshold", w.threshold), slog.Duration("quarantine", q))
	}
	w.last = now
	return now.Before(w.until)
}

// Unsettled reports that this process was stalled recently: it did not run
// for longer than its stall threshold (three quarters of the shortest
// silence after which peers can declare it dead, FailureDetection), and
// twice the stall has not passed since. Callers should not reclaim or
// activate grains meanwhile: see the comment on stall detection in
// cluster/stall.go.
func (n *Node) Unsettled() bool {
	return n.stall.unsettled()
}
