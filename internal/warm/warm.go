// Package warm runs functions on goroutines that wait a moment for the next
// one instead of exiting.
//
// A fresh goroutine starts on a small stack, and a deep call path (an
// intent's way into a grain and back, a grain's turn: decode, engine,
// encode, store call) grows it by copying every time. A goroutine that
// finished a function and takes the next keeps its grown stack until the
// collector shrinks it, idle. A Pool is never a fixed set of workers: a
// function that blocks (a grain waiting for its durable append) never holds
// up another, which gets a new goroutine when none is parked.
package warm

import (
	"sync"
	"time"
)

// Pool runs functions on warm goroutines. The zero value is not usable; New
// makes one. It is safe for concurrent use.
type Pool struct {
	// maxIdle bounds the goroutines parked between functions.
	maxIdle int
	idleFor time.Duration

	mu sync.Mutex
	// idle holds the parked goroutines, the most recently parked last.
	// Go takes the last one: a load that keeps k functions running at
	// once reuses the same k or so goroutines, and the rest, at the
	// bottom, reach idleFor and exit with their grown stacks. (A channel
	// that every parked goroutine waits on hands functions out in turn
	// instead, so under steady load all maxIdle of them stay.)
	idle []*worker
}

// worker is a parked goroutine's hand-over slot; its buffer of one lets Go
// hand a function over without waiting.
type worker struct{ work chan func() }

// New returns a pool that keeps at most maxIdle goroutines parked, each for
// at most idleFor.
func New(maxIdle int, idleFor time.Duration) *Pool {
	return &Pool{maxIdle: maxIdle, idleFor: idleFor}
}

// Go runs fn on the goroutine parked last, or on a new one. It never waits.
func (p *Pool) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.work <- fn
		return
	}
	p.mu.Unlock()
	go p.run(&worker{work: make(chan func(), 1)}, fn)
}

// Parked reports how many goroutines wait for a function.
func (p *Pool) Parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func (p *Pool) run(w *worker, fn func()) {
	var t *time.Timer
	for {
		fn()
		if !p.park(w) {
			return
		}
		if t == nil {
			t = time.NewTimer(p.idleFor)
		} else {
			t.Reset(p.idleFor)
		}
		select {
		case fn = <-w.work:
		case <-t.C:
			if p.leave(w) {
				return
			}
			// Go took it just now; its function is on the way.
			fn = <-w.work
		}
	}
}

// park puts w on top of the idle stack unless maxIdle are parked.
func (p *Pool) park(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.maxIdle {
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// leave takes w off the idle stack, where it waits near the bottom; false:
// Go has taken it already.
func (p *Pool) leave(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == w {
			n := copy(p.idle[i:], p.idle[i+1:])
			p.idle[i+n] = nil
			p.idle = p.idle[:i+n]
			return true
		}
	}
	return false
}
