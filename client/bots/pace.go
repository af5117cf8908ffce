package bots

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// pacer drives one match open-loop: it ticks Rate times a second, starting
// at a random phase so that many matches do not tick together, and each tick
// lets one waiting bot send its intent. A tick that finds the previous
// intent still in flight, or no intent chosen yet, is skipped: the load
// generator does not catch up later, so a slow server shows up as skipped
// ticks and latency instead of a lower offered rate.
//
// The phase counts from the match's first chosen intent, not from the
// pacer's start: the bots first read the match's opening (their sessions'
// snapshots and first decisions), and a tick a fraction of a millisecond
// after the start, which a random phase sometimes is, would find nothing
// chosen yet and count as skipped although the server was not slow.
type pacer struct {
	interval time.Duration
	stats    *Stats
	grant    chan struct{}
	// started is closed when a bot first waits with a chosen intent.
	started   chan struct{}
	startOnce sync.Once

	mu       sync.Mutex
	waiting  int
	inFlight bool
	// owed: a nudge found no intent ready to send; the next one that is
	// ready goes at once instead of at the next tick.
	owed bool
}

func newPacer(rate float64, st *Stats) *pacer {
	return &pacer{interval: time.Duration(float64(time.Second) / rate), stats: st, grant: make(chan struct{}, 1),
		started: make(chan struct{})}
}

// run ticks until ctx ends, the first time a random phase after the first
// intent is chosen, and once more when nudge is closed (nil: never).
func (p *pacer) run(ctx context.Context, nudge <-chan struct{}) {
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return
		case <-p.started:
			waiting = false
		case <-nudge:
			nudge = nil
			p.tick(true)
		}
	}
	phase := time.NewTimer(rand.N(p.interval))
	defer phase.Stop()
	var t <-chan time.Time // nil until the phase has passed
	for {
		select {
		case <-ctx.Done():
			return
		case <-phase.C:
			tk := time.NewTicker(p.interval)
			defer tk.Stop()
			t = tk.C
		case <-t:
		case <-nudge:
			nudge = nil
			p.tick(true)
			continue
		}
		p.tick(false)
	}
}

// tick lets a waiting bot send; a nudge that finds none waiting (the bot
// still deciding, or its previous intent in flight) is owed to the next
// intent that is ready.
//
// The tick is counted before the grant is sent, so that whoever reads the
// stats after a grant sees the tick that made it.
func (p *pacer) tick(nudged bool) {
	p.mu.Lock()
	ok := p.takeLocked()
	if !ok && nudged {
		p.owed = true
	}
	p.mu.Unlock()
	p.stats.tick(!ok)
	if ok {
		p.grant <- struct{}{} // capacity 1 and one grant per intent in flight: never blocks
	}
}

// grantLocked lets one waiting bot send if none is in flight (p.mu held).
func (p *pacer) grantLocked() {
	if p.takeLocked() {
		p.grant <- struct{}{} // as in tick
	}
}

// takeLocked takes the grant for one waiting bot if none is in flight
// (p.mu held); the caller sends it.
func (p *pacer) takeLocked() bool {
	if p.waiting == 0 || p.inFlight {
		return false
	}
	p.waiting--
	p.inFlight = true
	p.owed = false
	return true
}

// wait blocks the bot that has chosen an intent until a tick lets it send.
func (p *pacer) wait(ctx context.Context) bool {
	p.startOnce.Do(func() { close(p.started) })
	p.mu.Lock()
	p.waiting++
	if p.owed {
		p.grantLocked()
	}
	p.mu.Unlock()
	select {
	case <-p.grant:
		return true
	case <-ctx.Done():
		return false
	}
}

// done says the intent in flight has its result (or was lost).
func (p *pacer) done() {
	p.mu.Lock()
	p.inFlight = false
	if p.owed {
		p.grantLocked()
	}
	p.mu.Unlock()
}
