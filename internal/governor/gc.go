package governor

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// GC lowers the collector's goal (GOGC) while the node allocates
// little for its size and puts it back as soon as it allocates more.
//
// Why: a node's resident memory follows the collector's goal, which at
// GOGC=100 lets the heap grow to twice what is live. A cycle comes each
// time GOGC % of the live heap has been allocated and marks the live heap,
// so cycles per second = allocation rate ÷ (GOGC % × live heap), and their
// CPU is that times the live heap. A node holding quiet connections
// allocates slowly for its heap (heartbeats and seat keep-alives: measured
// 6 MB/s for 80 MB live at 10,000 connections, one GOGC=25 cycle every
// 3 s); a node playing matches allocates fast for its heap (18 MB/s for
// 47 MB live at 1,000 matches × 2 intents/s, a GOGC=25 cycle every 0.6 s).
// Both ratios stay the same as the node grows, which is why the test is
// on cycles per second and not on a rate of bytes. Under load the busy
// percent stands, because there the collector's CPU is what counts, and
// for a small live heap it is raised to keep a minimum headroom (busyFor).
//
// It sets the whole process's GOGC: only the program may decide that, so
// only cmd/matchd starts one (see the package comment).
type GC struct {
	busyPercent  int     // GOGC while the node is busy
	quietPercent int     // GOGC after quietAfter quiet samples
	maxCycles    float64 // quiet: below this many cycles per second at quietPercent
	quietAfter   int     // consecutive quiet samples before lowering
	// minHeadroom raises the busy percent for a small live heap: the heap
	// may grow at least this many bytes past live before a collection.
	minHeadroom uint64
	// freeEvery spaces the collections that going quiet brings: a node
	// that keeps crossing the line pays for one at most this often (the
	// page release holds the heap lock for milliseconds).
	freeEvery time.Duration

	readAllocs func() (allocated, live uint64) // cumulative bytes allocated; heap live after the last cycle
	setPercent func(int) int                   // debug.SetGCPercent
	freeOS     func()                          // debug.FreeOSMemory
	log        *slog.Logger

	lastAllocs uint64
	lastAt     time.Time
	lastFree   time.Time
	quietRuns  int
	current    int

	// herdPercent is GOGC for herdHold after Herd (0: Herd does nothing);
	// herds carries Herd's signal to Run, herdUntil is when the hold ends.
	herdPercent int
	herdHold    time.Duration
	herds       chan struct{}
	herdUntil   time.Time
}

// GCQuietMaxCycles is the default bound: between the two measured nodes
// above (0.3 and 1.5 cycles per second at GOGC=25).
const GCQuietMaxCycles = 0.6

// GCInterval is how often a GC governor samples: cycles per second are
// judged per whole second.
const GCInterval = time.Second

// GCHerdHold is how long GOGC stays at the herd percent after a member's
// death: the survivors claim, rebuild and re-attach its matches within a
// few seconds (docs/performance.md §3.4).
const GCHerdHold = 10 * time.Second

// SetBusyGC sets the collector's GOGC to busy, the percent a GC governor
// returns to, unless the operator set GOGC, whose choice it leaves alone;
// it reports whether it set it. Call it at start, with or without a
// governor.
func SetBusyGC(busy int) bool {
	if operatorGOGC() {
		return false
	}
	debug.SetGCPercent(busy)
	return true
}

// operatorGOGC reports whether the operator set GOGC in the environment.
func operatorGOGC() bool { return os.Getenv("GOGC") != "" }

// GCConfig is a GC governor's policy.
type GCConfig struct {
	// BusyPercent is GOGC while the node is busy, QuietPercent while it is
	// quiet (0: no governor).
	BusyPercent, QuietPercent int
	// QuietMaxCycles: the node is quiet while collections at QuietPercent
	// would come less often than this many times a second.
	QuietMaxCycles float64
	// MinHeadroom is the least headroom, in bytes past the live heap, kept
	// while busy (0: none), see busyFor.
	MinHeadroom uint64
	// HerdPercent is GOGC for HerdHold after Herd (0: Herd does nothing).
	HerdPercent int
	HerdHold    time.Duration
}

// NewGC returns a governor with policy c, or nil when c.QuietPercent is 0
// (off) or the operator set GOGC, whose choice it leaves alone.
func NewGC(c GCConfig, log *slog.Logger) *GC {
	if c.QuietPercent <= 0 || operatorGOGC() {
		return nil
	}
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	return &GC{
		busyPercent: c.BusyPercent, quietPercent: c.QuietPercent, maxCycles: c.QuietMaxCycles, quietAfter: 5, freeEvery: time.Minute,
		readAllocs: func() (uint64, uint64) {
			metrics.Read(samples)
			var v [2]uint64
			for i, s := range samples {
				if s.Value.Kind() == metrics.KindUint64 {
					v[i] = s.Value.Uint64()
				}
			}
			return v[0], v[1]
		},
		setPercent:  debug.SetGCPercent,
		freeOS:      debug.FreeOSMemory,
		log:         log,
		current:     c.BusyPercent,
		minHeadroom: c.MinHeadroom,
		herdPercent: c.HerdPercent,
		herdHold:    c.HerdHold,
		herds:       make(chan struct{}, 1),
	}
}

// Herd says a herd of work has just begun (another member left or died:
// its matches come back here all at once), when the collector's CPU is
// dearer than memory: GOGC goes to the herd percent for the hold. It
// never blocks.
//
// Why: a survivor's heap and allocation rate jump while it claims and
// rebuilds a dead member's matches and their players re-attach. At the
// busy percent the collector then took a third of the busier survivor's
// CPU (background marking, assists, and scanning the stacks of thousands
// of handshakes) on a machine whose cores were all busy; at 200 the
// survivors spent less CPU per match and the herd's p99 fell, for a few
// seconds of a larger heap (docs/performance.md §3.4).
func (g *GC) Herd() {
	select {
	case g.herds <- struct{}{}:
	default: // one is pending already
	}
}

// Run samples every interval and takes each herd Herd flags until ctx
// ends, then restores the busy percent.
func (g *GC) Run(ctx context.Context, interval time.Duration) {
	everyUntil(ctx, interval, g.step, g.herds, g.herd)
	g.set(g.busyPercent)
}

// herd starts (or extends) a herd's hold at now.
func (g *GC) herd(now time.Time) {
	if g.herdPercent <= 0 {
		return
	}
	g.herdUntil = now.Add(g.herdHold)
	g.quietRuns = 0
	// Never below the busy percent, and a headroom floor above it stands.
	g.set(max(g.herdPercent, g.busyPercent, g.current))
}

// step takes one sample of the allocation rate and sets GOGC from it:
// busy at once when cycles at the quiet percent would come maxCycles times
// a second or more, quiet only after quietAfter samples in a row below
// that, with one full collection then.
func (g *GC) step(now time.Time) {
	allocs, live := g.readAllocs()
	if g.lastAt.IsZero() {
		g.lastAllocs, g.lastAt = allocs, now
		return
	}
	secs := now.Sub(g.lastAt).Seconds()
	if secs <= 0 {
		return
	}
	rate := float64(allocs-g.lastAllocs) / secs
	g.lastAllocs, g.lastAt = allocs, now
	if now.Before(g.herdUntil) {
		return // the herd's percent holds
	}
	if rate >= g.maxCycles*float64(g.quietPercent)/100*float64(live) {
		g.quietRuns = 0
		g.set(g.busyFor(live))
		return
	}
	g.quietRuns++
	if g.quietRuns >= g.quietAfter && g.current != g.quietPercent {
		g.set(g.quietPercent)
		// A quiet node allocates too little to reach even the lower goal
		// soon, so without a collection now the garbage of the busy spell
		// stays resident: collect once, and give the freed pages back.
		if g.lastFree.IsZero() || now.Sub(g.lastFree) >= g.freeEvery {
			g.freeOS()
			g.lastFree = now
		}
	}
}

// busyFor returns the GOGC for a busy node with live bytes of live heap:
// the busy percent, raised so that the heap may grow by at least
// minHeadroom past live (at most maxFloorPercent).
//
// Why: a cycle's cost does not shrink with the heap as its frequency
// grows. Every cycle also scans the goroutine stacks and globals, and a
// short goal makes allocating goroutines assist the marking. A member
// whose sessions' grains live on other members allocates for its
// messages between members as much as a single node does for all its
// matches (protobuf and gRPC buffers), on a third of the live heap: at
// GOGC 40 it collected five times a second, a quarter of its CPU in the
// collector (docs/performance.md §3.5). The floor costs a node whose
// busy percent gives more headroom nothing, and any other node up to the
// floor in memory, which is why it is the operator's choice (matchd
// --gc-min-headroom-mib, off by default).
//
// The floor moves only when it changes by a tenth or more, so that the
// live heap's small moves do not reset GOGC every second.
func (g *GC) busyFor(live uint64) int {
	p := g.busyPercent
	if g.minHeadroom > 0 && live > 0 {
		if f := min(g.minHeadroom*100/live, maxFloorPercent); int(f) > p {
			p = int(f)
		}
	}
	if g.current > g.busyPercent && p > g.busyPercent && 10*absDiff(p, g.current) < g.current {
		return g.current
	}
	return p
}

// maxFloorPercent bounds the GOGC the headroom floor sets: a live heap
// read near zero (right after start) must not lift the goal without
// bound.
const maxFloorPercent = 1000

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

func (g *GC) set(percent int) {
	if percent == g.current {
		return
	}
	g.setPercent(percent)
	g.log.Debug("gc governor: GOGC changed", "gogc", percent, "was", g.current)
	g.current = percent
}
