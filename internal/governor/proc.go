package governor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/matchgrain/matchgrain/internal/proccpu"
)

// Proc runs the node's Go code on one processor (GOMAXPROCS=1)
// while one is plenty, and gives it back the default width as soon as
// that one gets busy.
//
// Why: a node serving matches is mostly idle between intents, and every
// intent hands work from one goroutine to another several times (the
// connection's reader, the grain's turn, the durable append, the
// writers). Each hand-off that makes a goroutine runnable while another
// processor sits idle wakes a second OS thread, which looks for work,
// mostly finds none and goes back to sleep: two futex calls and a spell
// of spinning that do nothing for the intent. The open loop's profile
// puts the scheduler at 18 % of node CPU; with one processor the ready
// goroutine simply runs next on the same thread (measured: node CPU per
// intent 0.85–0.90 of the default's, docs/performance.md). On a machine the
// node shares with PostgreSQL that spinning also takes CPU from the
// database. But one processor is a queue: once it is busy most of the
// time, runnable goroutines wait for it, so the governor returns to the
// default width at once when the node uses raiseAt of a core (sampled
// every quarter of a second while narrow), and only narrows again after
// quietAfter whole seconds in a row below lowerAt cores at full width
// (the spinning makes full width cost more than one processor for the
// same work, which is why lowerAt is below raiseAt).
//
// It is opt-in (--proc-governor): with one processor a goroutine made
// runnable while that processor is in a system call or marking for the
// collector waits for it, and at 1,000 matches × 2 intents/s on a busy
// machine the median intent took 4.5 instead of 3.3 ms; on a quiet one
// the median held and the p99 rose by a quarter (docs/performance.md). A
// node playing as fast as it can at full width stays there, but one that
// starts such a load while narrow stays narrow if the other processes on
// the machine keep it under raiseAt (a closed loop of 100 matches did, at
// 6 % fewer intents a second). Nodes that share a small machine and are
// billed for CPU are the ones to turn it on for.
//
// Like GC, it sets a process-wide knob (GOMAXPROCS) that only the program
// may set, so only cmd/matchd starts one.
type Proc struct {
	raiseAt    float64 // cores of node CPU at one processor that bring the default width back
	lowerAt    float64 // cores of node CPU at full width below which one processor is enough
	quietAfter int     // whole seconds in a row below lowerAt before narrowing

	readCPU  func() time.Duration // the process's CPU time so far (user and system)
	setProcs func(n int)          // 1: one processor; 0: back to the runtime's default
	log      *slog.Logger

	lastCPU   time.Duration // at the last sample
	lastAt    time.Time
	secCPU    time.Duration // at the start of the current whole second at full width
	secAt     time.Time
	quietRuns int  // whole seconds in a row under lowerAt at full width
	narrow    bool // running on one processor
}

// Defaults: the open loop of 1,000 matches × 2 intents/s uses about 0.5
// of a core at full width on the measuring machine and stays on one
// processor; the closed loop of 100 matches uses about 0.6 of a core on
// one processor (0.75 at full width) and stays where it is.
//
// ProcSample is how often the governor looks while on one processor: a
// surge gets the default width back within a quarter of a second, not a
// whole one. Narrowing still waits for procQuietAfter whole seconds, each
// averaged over its samples, so that one light quarter does not count.
const (
	procRaiseAt    = 0.8
	procLowerAt    = 0.7
	procQuietAfter = 5
	ProcSample     = 250 * time.Millisecond
)

// NewProc returns a governor, or nil when it is off: turned off by
// the operator, GOMAXPROCS set in the environment (the operator's choice
// stands), or a default width of one already.
func NewProc(on bool, log *slog.Logger) *Proc {
	if !on || os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	if runtime.GOMAXPROCS(0) <= 1 {
		return nil
	}
	return &Proc{
		raiseAt: procRaiseAt, lowerAt: procLowerAt, quietAfter: procQuietAfter,
		readCPU: proccpu.Self,
		setProcs: func(n int) {
			if n > 0 {
				runtime.GOMAXPROCS(n)
				return
			}
			// The default follows the container's CPU limit and keeps
			// following it; GOMAXPROCS(n) would pin a number.
			runtime.SetDefaultGOMAXPROCS()
		},
		log: log,
	}
}

// Run samples every interval until ctx ends, then restores the default width.
func (g *Proc) Run(ctx context.Context, interval time.Duration) {
	everyUntil(ctx, interval, g.step, nil, nil)
	g.widen(0)
}

// step takes one sample of the node's CPU use and sets the width from it:
// on one processor every sample may widen; at full width only whole
// seconds count towards narrowing.
func (g *Proc) step(now time.Time) {
	cpu := g.readCPU()
	if g.lastAt.IsZero() {
		g.lastCPU, g.lastAt = cpu, now
		g.secCPU, g.secAt = cpu, now
		return
	}
	secs := now.Sub(g.lastAt).Seconds()
	if secs <= 0 {
		return
	}
	cores := (cpu - g.lastCPU).Seconds() / secs
	g.lastCPU, g.lastAt = cpu, now
	if g.narrow {
		if cores >= g.raiseAt {
			g.widen(cores)
			g.secCPU, g.secAt = cpu, now
		}
		return
	}
	span := now.Sub(g.secAt)
	if span < time.Second {
		return
	}
	cores = (cpu - g.secCPU).Seconds() / span.Seconds()
	g.secCPU, g.secAt = cpu, now
	if cores >= g.lowerAt {
		g.quietRuns = 0
		return
	}
	g.quietRuns++
	if g.quietRuns >= g.quietAfter {
		g.setProcs(1)
		g.narrow = true
		g.log.Debug("proc governor: one processor", "cores", fmt.Sprintf("%.2f", cores))
	}
}

// widen returns to the default width if narrowed; cores is the sample that
// asked for it, for the log.
func (g *Proc) widen(cores float64) {
	if !g.narrow {
		return
	}
	g.setProcs(0)
	g.narrow, g.quietRuns = false, 0
	g.log.Debug("proc governor: default width", "procs", runtime.GOMAXPROCS(0), "cores", fmt.Sprintf("%.2f", cores))
}
