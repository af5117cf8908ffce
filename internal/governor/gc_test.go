package governor

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestGCGovernor drives the governor with a made-up allocation history:
// it lowers GOGC (and collects once) only after five quiet seconds in a
// row, goes back to 100 at the first busy second, and judges quiet by
// cycles per second against the live heap, not by bytes per second.
func TestGCGovernor(t *testing.T) {
	const live = 80 << 20
	var allocated uint64
	var set []int
	frees := 0
	g := &GC{
		busyPercent: 100, quietPercent: 25, maxCycles: 0.6, quietAfter: 5, freeEvery: 10 * time.Second, current: 100,
		readAllocs: func() (uint64, uint64) { return allocated, live },
		setPercent: func(p int) int { set = append(set, p); return 0 },
		freeOS:     func() { frees++ },
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	// At GOGC=25, 80 MiB live gives 20 MiB between cycles: 0.6 cycles a
	// second is 12 MiB/s.
	quiet, busy := uint64(6<<20), uint64(18<<20)
	now := time.Unix(1_000_000, 0)
	second := func(rate uint64) {
		allocated += rate
		now = now.Add(time.Second)
		g.step(now)
	}
	g.step(now) // the first sample only sets the baseline
	for i := range 4 {
		second(quiet)
		if len(set) != 0 {
			t.Fatalf("GOGC set to %v after %d quiet seconds, want nothing before 5", set, i+1)
		}
	}
	second(quiet)
	if len(set) != 1 || set[0] != 25 || frees != 1 {
		t.Fatalf("after 5 quiet seconds: GOGC set %v, %d collections; want [25] and 1", set, frees)
	}
	second(quiet)
	if len(set) != 1 || frees != 1 {
		t.Fatalf("a further quiet second changed GOGC (%v) or collected again (%d)", set, frees)
	}
	second(busy)
	if len(set) != 2 || set[1] != 100 {
		t.Fatalf("after a busy second GOGC set %v, want 100 last", set)
	}
	// Quiet again, but a busy second inside the five starts the count over.
	for range 4 {
		second(quiet)
	}
	second(busy)
	for range 4 {
		second(quiet)
	}
	if len(set) != 2 {
		t.Fatalf("GOGC set %v before five quiet seconds in a row", set)
	}
	second(quiet)
	if len(set) != 3 || set[2] != 25 || frees != 2 {
		t.Fatalf("GOGC set %v, %d collections; want 25 again and a second collection", set, frees)
	}
	// Busy and quiet again within freeEvery of that collection: GOGC
	// follows, the collection waits.
	second(busy)
	for range 5 {
		second(quiet)
	}
	if len(set) != 5 || set[4] != 25 || frees != 2 {
		t.Fatalf("GOGC set %v, %d collections; want 25 again without a third collection within freeEvery", set, frees)
	}

	// The same rate that is quiet for 80 MiB live is busy for a small heap.
	g2 := *g
	g2.current, g2.quietRuns, set = 100, 0, nil
	small := uint64(10 << 20)
	g2.readAllocs = func() (uint64, uint64) { return allocated, small }
	g2.lastAt = time.Time{}
	g2.step(now)
	for range 10 {
		allocated += quiet
		now = now.Add(time.Second)
		g2.step(now)
	}
	if len(set) != 0 {
		t.Fatalf("6 MiB/s with 10 MiB live counted as quiet: GOGC set %v", set)
	}
}

// TestGCGovernorOff: no governor when its percent is 0 or GOGC is set.
func TestGCGovernorOff(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if g := NewGC(100, 0, GCQuietMaxCycles, log); g != nil {
		t.Fatal("a governor with --gc-quiet-percent 0")
	}
	t.Setenv("GOGC", "100")
	if g := NewGC(100, 25, GCQuietMaxCycles, log); g != nil {
		t.Fatal("a governor although GOGC is set")
	}
}
