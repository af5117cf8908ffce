package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// scriptedGovernor is a governor with the default thresholds on a made-up
// CPU history: advance(d, cores) lets d pass at that many cores and takes
// a sample; *set lists the widths it set (1, or 0 for the default). The
// first sample, at the start, only sets the baseline.
func scriptedGovernor() (g *procGovernor, set *[]int, advance func(d time.Duration, cores float64)) {
	var cpu time.Duration
	set = new([]int)
	g = &procGovernor{
		raiseAt: procRaiseAt, lowerAt: procLowerAt, quietAfter: procQuietAfter,
		readCPU:  func() time.Duration { return cpu },
		setProcs: func(n int) { *set = append(*set, n) },
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	now := time.Unix(1_000_000, 0)
	g.step(now)
	return g, set, func(d time.Duration, cores float64) {
		cpu += time.Duration(cores * float64(d))
		now = now.Add(d)
		g.step(now)
	}
}

// TestProcGovernor drives the governor with a made-up CPU history: one
// processor only after five light seconds in a row at full width, the
// default back at the first second that uses raiseAt of a core, and
// nothing in between (the band between the two thresholds holds either
// width).
func TestProcGovernor(t *testing.T) {
	g, set, advance := scriptedGovernor()
	second := func(cores float64) { advance(time.Second, cores) }
	for i := range 4 {
		second(0.5)
		if len(*set) != 0 {
			t.Fatalf("width set %v after %d light seconds, want nothing before 5", set, i+1)
		}
	}
	second(0.75) // in the band at full width: starts the count over
	for range 4 {
		second(0.5)
	}
	if len(*set) != 0 {
		t.Fatalf("width set %v although a second at 0.75 cores broke the run", *set)
	}
	second(0.5)
	if len(*set) != 1 || (*set)[0] != 1 || !g.narrow {
		t.Fatalf("after 5 light seconds: width set %v, want [1]", *set)
	}
	second(0.75) // in the band on one processor: stays narrow
	second(0.1)
	if len(*set) != 1 {
		t.Fatalf("width set %v while on one processor below raiseAt", *set)
	}
	second(0.85)
	if len(*set) != 2 || (*set)[1] != 0 || g.narrow {
		t.Fatalf("after a second at 0.85 cores: width set %v, want the default (0) last", *set)
	}
	// Widened: light again, and five seconds are needed again.
	for range 4 {
		second(0.2)
	}
	if len(*set) != 2 {
		t.Fatalf("narrowed again (%v) before five light seconds at full width", *set)
	}
	second(0.2)
	if len(*set) != 3 || (*set)[2] != 1 {
		t.Fatalf("width set %v, want one processor again", *set)
	}
	// A stalled clock (two samples at the same instant) changes nothing.
	advance(0, 0)
	if len(*set) != 3 {
		t.Fatalf("a zero-length sample changed the width: %v", *set)
	}
}

// TestProcGovernorQuarters drives the governor at its real sampling
// period: at full width only whole seconds count (one busy quarter in a
// light second does not break the run, and twenty light quarters are five
// seconds); on one processor a single busy quarter brings the default
// width back.
func TestProcGovernorQuarters(t *testing.T) {
	_, set, advance := scriptedGovernor()
	quarter := func(cores float64) { advance(procSample, cores) }
	for i := range 19 {
		// Every fourth quarter busy, its second still light on average (0.5).
		c := 0.3
		if i%4 == 3 {
			c = 1.1
		}
		quarter(c)
		if len(*set) != 0 {
			t.Fatalf("width set %v after %d light quarters, want nothing before 20", set, i+1)
		}
	}
	quarter(0.3)
	if len(*set) != 1 || (*set)[0] != 1 {
		t.Fatalf("after five light seconds in quarters: width set %v, want [1]", *set)
	}
	quarter(0.75)
	quarter(0.5)
	if len(*set) != 1 {
		t.Fatalf("width set %v on one processor below raiseAt", *set)
	}
	quarter(0.9)
	if len(*set) != 2 || (*set)[1] != 0 {
		t.Fatalf("after one busy quarter on one processor: width set %v, want the default (0) last", *set)
	}
	// The second after widening starts at the widening: one light second
	// is not five.
	for range 4 {
		quarter(0.2)
	}
	if len(*set) != 2 {
		t.Fatalf("narrowed again (%v) one second after widening", *set)
	}
}

// TestProcGovernorOff: no governor when turned off or GOMAXPROCS is set.
func TestProcGovernorOff(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if g := newProcGovernor(false, log); g != nil {
		t.Fatal("a governor with --proc-governor=false")
	}
	t.Setenv("GOMAXPROCS", "2")
	if g := newProcGovernor(true, log); g != nil {
		t.Fatal("a governor although GOMAXPROCS is set")
	}
}

// TestProcGovernorRuntime: the governor's own setProcs narrows this
// process to one processor and then gives back the runtime's default,
// not a number it remembered.
func TestProcGovernorRuntime(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in this environment, which turns the governor off")
	}
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skipf("default GOMAXPROCS is %d here: nothing to narrow", before)
	}
	g := newProcGovernor(true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if g == nil {
		t.Fatal("no governor with a default width of", before)
	}
	defer runtime.SetDefaultGOMAXPROCS()
	g.setProcs(1)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after narrowing, want 1", n)
	}
	g.setProcs(0)
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Fatalf("GOMAXPROCS %d after widening, want the default %d", n, before)
	}
	if cpu := processCPU(); cpu <= 0 {
		t.Fatalf("process CPU %v: the governor would read nothing", cpu)
	}
}

// TestProcGovernorIdleNode: a real node with the governor on and nothing
// to do narrows to one processor within a few seconds, as its /metrics
// shows.
func TestProcGovernorIdleNode(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in this environment, which turns the governor off")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the node's default width is already 1")
	}
	p := startProc(t, "w", "--data-dir", filepath.Join(t.TempDir(), "data"), "--proc-governor")
	awaitGauge(t, p, "go_sched_gomaxprocs_threads", 1, 60*time.Second)
}
