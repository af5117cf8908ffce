package governor

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/internal/proccpu"
)

// scriptedGovernor is a governor with the default thresholds on a made-up
// CPU history: advance(d, cores) lets d pass at that many cores and takes
// a sample; *set lists the widths it set (1, or 0 for the default). The
// first sample, at the start, only sets the baseline.
func scriptedGovernor() (g *Proc, set *[]int, advance func(d time.Duration, cores float64)) {
	var cpu time.Duration
	set = new([]int)
	g = &Proc{
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

// wantWidths fails the test unless the governor has set exactly want, in
// order (1: one processor, 0: the default), saying when.
func wantWidths(t *testing.T, set []int, when string, want ...int) {
	t.Helper()
	if !slices.Equal(set, want) {
		t.Fatalf("%s: widths set %v, want %v", when, set, want)
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
		wantWidths(t, *set, fmt.Sprintf("after %d light seconds", i+1))
	}
	second(0.75) // in the band at full width: starts the count over
	for range 4 {
		second(0.5)
	}
	wantWidths(t, *set, "a second at 0.75 cores broke the run")
	second(0.5)
	wantWidths(t, *set, "after 5 light seconds", 1)
	if !g.narrow {
		t.Fatal("on one processor but not narrow")
	}
	second(0.75) // in the band on one processor: stays narrow
	second(0.1)
	wantWidths(t, *set, "on one processor below raiseAt", 1)
	second(0.85)
	wantWidths(t, *set, "after a second at 0.85 cores", 1, 0)
	if g.narrow {
		t.Fatal("back at the default width but still narrow")
	}
	// Widened: light again, and five seconds are needed again.
	for range 4 {
		second(0.2)
	}
	wantWidths(t, *set, "four light seconds at full width", 1, 0)
	second(0.2)
	wantWidths(t, *set, "five light seconds at full width", 1, 0, 1)
	// A stalled clock (two samples at the same instant) changes nothing.
	advance(0, 0)
	wantWidths(t, *set, "a zero-length sample", 1, 0, 1)
}

// TestProcGovernorQuarters drives the governor at its real sampling
// period: at full width only whole seconds count (one busy quarter in a
// light second does not break the run, and twenty light quarters are five
// seconds); on one processor a single busy quarter brings the default
// width back.
func TestProcGovernorQuarters(t *testing.T) {
	_, set, advance := scriptedGovernor()
	quarter := func(cores float64) { advance(ProcSample, cores) }
	for i := range 19 {
		// Every fourth quarter busy, its second still light on average (0.5).
		c := 0.3
		if i%4 == 3 {
			c = 1.1
		}
		quarter(c)
		wantWidths(t, *set, fmt.Sprintf("after %d light quarters", i+1))
	}
	quarter(0.3)
	wantWidths(t, *set, "after five light seconds in quarters", 1)
	quarter(0.75)
	quarter(0.5)
	wantWidths(t, *set, "quarters on one processor below raiseAt", 1)
	quarter(0.9)
	wantWidths(t, *set, "after one busy quarter on one processor", 1, 0)
	// The second after widening starts at the widening: one light second
	// is not five.
	for range 4 {
		quarter(0.2)
	}
	wantWidths(t, *set, "one light second after widening", 1, 0)
}

// TestProcGovernorOff: no governor when turned off or GOMAXPROCS is set.
func TestProcGovernorOff(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if g := NewProc(false, log); g != nil {
		t.Fatal("a governor with --proc-governor=false")
	}
	t.Setenv("GOMAXPROCS", "2")
	if g := NewProc(true, log); g != nil {
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
	g := NewProc(true, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	if cpu := proccpu.Self(); cpu <= 0 {
		t.Fatalf("process CPU %v: the governor would read nothing", cpu)
	}
}
