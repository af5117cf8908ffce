package governor

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestGCGovernor drives the governor with a made-up allocation history:
// it lowers GOGC (and collects once) only after five quiet seconds in a
// row, goes back to 100 at the first busy second, and judges quiet by
// cycles per second against the live heap, not by bytes per second.
func TestGCGovernor(t *testing.T) {
	// At GOGC=25, 80 MiB live gives 20 MiB between cycles: 0.6 cycles a
	// second is 12 MiB/s.
	s := newScripted(100, 25, 80<<20)
	quiet, busy := uint64(6<<20), uint64(18<<20)
	for i := range 4 {
		s.second(quiet)
		if len(s.set) != 0 {
			t.Fatalf("GOGC set to %v after %d quiet seconds, want nothing before 5", s.set, i+1)
		}
	}
	s.second(quiet)
	if len(s.set) != 1 || s.set[0] != 25 || s.frees != 1 {
		t.Fatalf("after 5 quiet seconds: GOGC set %v, %d collections; want [25] and 1", s.set, s.frees)
	}
	s.second(quiet)
	if len(s.set) != 1 || s.frees != 1 {
		t.Fatalf("a further quiet second changed GOGC (%v) or collected again (%d)", s.set, s.frees)
	}
	s.second(busy)
	if len(s.set) != 2 || s.set[1] != 100 {
		t.Fatalf("after a busy second GOGC set %v, want 100 last", s.set)
	}
	// Quiet again, but a busy second inside the five starts the count over.
	for range 4 {
		s.second(quiet)
	}
	s.second(busy)
	for range 4 {
		s.second(quiet)
	}
	if len(s.set) != 2 {
		t.Fatalf("GOGC set %v before five quiet seconds in a row", s.set)
	}
	s.second(quiet)
	if len(s.set) != 3 || s.set[2] != 25 || s.frees != 2 {
		t.Fatalf("GOGC set %v, %d collections; want 25 again and a second collection", s.set, s.frees)
	}
	// Busy and quiet again within freeEvery of that collection: GOGC
	// follows, the collection waits.
	s.second(busy)
	for range 5 {
		s.second(quiet)
	}
	if len(s.set) != 5 || s.set[4] != 25 || s.frees != 2 {
		t.Fatalf("GOGC set %v, %d collections; want 25 again without a third collection within freeEvery", s.set, s.frees)
	}

	// The same rate that is quiet for 80 MiB live is busy for a small heap.
	small := newScripted(100, 25, 10<<20)
	for range 10 {
		small.second(quiet)
	}
	if len(small.set) != 0 {
		t.Fatalf("6 MiB/s with 10 MiB live counted as quiet: GOGC set %v", small.set)
	}
}

// scripted is a GC governor on a made-up allocation history, with the
// GOGC values it set and the collections it asked for.
type scripted struct {
	g               *GC
	allocated, live uint64
	set             []int
	frees           int
	now             time.Time
}

// newScripted returns a governor of busy and quiet percents on live bytes
// of live heap, its first sample (the baseline) taken.
func newScripted(busy, quiet int, live uint64) *scripted {
	s := &scripted{live: live, now: time.Unix(1_000_000, 0)}
	s.g = &GC{
		busyPercent: busy, quietPercent: quiet, maxCycles: 0.6, quietAfter: 5, freeEvery: 10 * time.Second, current: busy,
		readAllocs: func() (uint64, uint64) { return s.allocated, s.live },
		setPercent: func(p int) int { s.set = append(s.set, p); return 0 },
		freeOS:     func() { s.frees++ },
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	s.g.step(s.now)
	return s
}

// second allocates rate bytes over the next second, then samples.
func (s *scripted) second(rate uint64) {
	s.allocated += rate
	s.now = s.now.Add(time.Second)
	s.g.step(s.now)
}

// TestGCGovernorOff: no governor when its percent is 0 or GOGC is set.
func TestGCGovernorOff(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if g := NewGC(GCConfig{BusyPercent: 100, QuietMaxCycles: GCQuietMaxCycles, MinHeadroom: 16 << 20, HerdPercent: 200}, log); g != nil {
		t.Fatal("a governor with --gc-quiet-percent 0")
	}
	t.Setenv("GOGC", "100")
	if g := NewGC(GCConfig{BusyPercent: 100, QuietPercent: 25, QuietMaxCycles: GCQuietMaxCycles, MinHeadroom: 16 << 20, HerdPercent: 200}, log); g != nil {
		t.Fatal("a governor although GOGC is set")
	}
}

// TestGCGovernorHeadroomFloor: while busy, a live heap too small for the
// busy percent to leave minHeadroom of headroom gets a higher GOGC; a
// large one keeps the busy percent; the floor follows the live heap only
// when it moves by a tenth or more, never past maxFloorPercent, and a
// quiet node still gets the quiet percent.
func TestGCGovernorHeadroomFloor(t *testing.T) {
	var allocated, live uint64
	var set []int
	g := &GC{
		busyPercent: 40, quietPercent: 25, maxCycles: 0.6, quietAfter: 5, freeEvery: time.Minute, current: 40,
		minHeadroom: 16 << 20,
		readAllocs:  func() (uint64, uint64) { return allocated, live },
		setPercent:  func(p int) int { set = append(set, p); return 0 },
		freeOS:      func() {},
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	now := time.Unix(1_000_000, 0)
	// busy allocates 20 MiB a second: many cycles a second at these sizes.
	second := func(heap uint64) {
		live = heap
		allocated += 20 << 20
		now = now.Add(time.Second)
		g.step(now)
	}
	g.step(now)
	last := func() int {
		if len(set) == 0 {
			return g.busyPercent
		}
		return set[len(set)-1]
	}
	second(16 << 20) // 16 MiB live: 100 % gives 16 MiB of headroom
	if last() != 100 {
		t.Fatalf("16 MiB live: GOGC set %v, want 100 last", set)
	}
	n := len(set)
	second(17 << 20) // 94 %: within a tenth of 100, left alone
	if len(set) != n {
		t.Fatalf("a 6 %% move of the floor reset GOGC: %v", set)
	}
	second(8 << 20) // 200 %
	if last() != 200 {
		t.Fatalf("8 MiB live: GOGC set %v, want 200 last", set)
	}
	second(80 << 20) // 40 % gives 32 MiB: the busy percent
	if last() != 40 {
		t.Fatalf("80 MiB live: GOGC set %v, want the busy 40 last", set)
	}
	second(1) // a live heap read as next to nothing
	if last() != maxFloorPercent {
		t.Fatalf("1 byte live: GOGC set %v, want the cap %d last", set, maxFloorPercent)
	}
	// Quiet: a trickle of allocations for a large heap.
	for range 5 {
		live = 80 << 20
		allocated += 1 << 20
		now = now.Add(time.Second)
		g.step(now)
	}
	if last() != 25 {
		t.Fatalf("quiet: GOGC set %v, want the quiet 25 last", set)
	}
	// Off: the busy percent whatever the heap.
	g.minHeadroom, set = 0, nil
	second(8 << 20)
	if last() != 40 {
		t.Fatalf("no floor, 8 MiB live: GOGC set %v, want 40", set)
	}
}

// TestGCGovernorHerd: a herd (a member left or died) sets the herd
// percent at once and holds it for the hold, busy or quiet; then the
// governor goes on from the rate as before. A second herd within the hold
// extends it; without a herd percent a herd changes nothing; the herd
// percent never lowers GOGC below the busy percent or a headroom floor
// above it.
func TestGCGovernorHerd(t *testing.T) {
	// At GOGC=25, 80 MiB live: 12 MiB/s is 0.6 cycles a second.
	s := newScripted(40, 25, 80<<20)
	g := s.g
	quiet, busy := uint64(6<<20), uint64(18<<20)
	g.herd(s.now)
	if len(s.set) != 0 {
		t.Fatalf("a herd without a herd percent set GOGC %v", s.set)
	}
	g.herdPercent, g.herdHold = 200, 3*time.Second
	g.herd(s.now)
	if !slices.Equal(s.set, []int{200}) {
		t.Fatalf("a herd set GOGC %v, want [200]", s.set)
	}
	s.second(busy)
	s.second(quiet)
	g.herd(s.now) // a second herd within the hold: 3 s from now
	s.second(quiet)
	s.second(busy)
	if !slices.Equal(s.set, []int{200}) {
		t.Fatalf("within the hold GOGC set %v, want 200 kept", s.set)
	}
	s.second(busy)
	if !slices.Equal(s.set, []int{200, 40}) {
		t.Fatalf("after the hold a busy second set GOGC %v, want 40 last", s.set)
	}
	g.herd(s.now)
	for range 8 {
		s.second(quiet)
	}
	if !slices.Equal(s.set, []int{200, 40, 200, 25}) {
		t.Fatalf("a herd, then quiet seconds: GOGC set %v, want 200 then 25 only after five quiet seconds past the hold", s.set)
	}
	// A herd percent below the busy percent gives the busy one.
	s.set = nil
	g.herdPercent = 30
	g.herd(s.now)
	if !slices.Equal(s.set, []int{40}) {
		t.Fatalf("a herd percent of 30 under a busy 40 set GOGC %v, want [40]", s.set)
	}
	// A headroom floor above the herd percent stands.
	s.set = nil
	g.current = 400
	g.herdPercent, g.herdHold = 200, 3*time.Second
	g.herd(s.now)
	if len(s.set) != 0 {
		t.Fatalf("a herd under a floor of 400 set GOGC %v, want it left at 400", s.set)
	}
}

// TestGCGovernorHerdNeverBlocks: Herd only flags a herd for Run, however
// often it is called, and Run takes it.
func TestGCGovernorHerdNeverBlocks(t *testing.T) {
	var set []int
	var mu sync.Mutex
	g := &GC{
		busyPercent: 40, quietPercent: 25, maxCycles: 0.6, quietAfter: 5, freeEvery: time.Minute, current: 40,
		readAllocs: func() (uint64, uint64) { return 0, 1 << 20 },
		setPercent: func(p int) int { mu.Lock(); set = append(set, p); mu.Unlock(); return 0 },
		freeOS:     func() {},
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		herds:      make(chan struct{}, 1),
	}
	g.herdPercent, g.herdHold = 200, time.Minute
	for range 100 {
		g.Herd() // nobody takes them yet: must not block
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx, time.Hour); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(set)
		mu.Unlock()
		if slices.Equal(got, []int{200}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run after a flagged herd set GOGC %v, want [200]", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}
