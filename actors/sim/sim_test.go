package sim

import (
	"errors"
	"flag"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
)

var (
	seedFlag    = flag.Uint64("seed", 0, "replay one simulated match, step for step, with its trace (0: run many)")
	matchesFlag = flag.Int("sim.matches", 0, "simulated matches (default $SIM_MATCHES, else 10,000)")
	firstFlag   = flag.Uint64("sim.first", 1, "the first seed of a run of many")
)

// matches is how many matches TestSimulation runs.
func matches(t *testing.T) int {
	if *matchesFlag > 0 {
		return *matchesFlag
	}
	if v := os.Getenv("SIM_MATCHES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SIM_MATCHES=%q: want a positive number", v)
		}
		return n
	}
	return defaultMatches
}

// defaultMatches is how many matches make test simulates.
const defaultMatches = 10_000

// TestSimulation runs many seeded matches under faults and checks the
// grain's invariants after every step and at the end. A failure names its
// seed; -seed N replays that match alone with its trace.
func TestSimulation(t *testing.T) {
	if *seedFlag != 0 {
		_, err := Simulate(*seedFlag, func(s string) { t.Log(s) })
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	n := matches(t)
	// A match allocates about 100 KiB that dies young; collecting less
	// often saves a fifth of the run's CPU for a few MiB per core.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	start := time.Now()
	st, err := Run(*firstFlag, n)
	t.Logf("%d matches (%d finished), %d steps, %.1f virtual hours, %d log entries; %d slow store calls, %d timed out, %d writes landed after their timeout; in %v",
		st.Matches, st.Finished, st.Steps, float64(st.VirtualMs)/3.6e6, st.LogEntries,
		st.SlowCalls, st.TimedOut, st.LateWrites, time.Since(start).Round(time.Millisecond))
	if err != nil {
		var se *SeedError
		if errors.As(err, &se) {
			t.Fatalf("%v\nreplay: go test ./actors/sim -run 'TestSimulation$' -seed %d -v", err, se.Seed)
		}
		t.Fatal(err)
	}
}

// TestStoreConformance runs the stores' conformance suite against the
// simulated store, so the simulator's fencing is the real stores'.
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store { return NewStore(nil) })
}

// TestSimulationReplaysExactly runs seeds twice and compares their traces
// step for step: a seed that did not replay exactly could not be debugged.
func TestSimulationReplaysExactly(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		var runs [2][]string
		for i := range runs {
			if _, err := Simulate(seed, func(s string) { runs[i] = append(runs[i], s) }); err != nil {
				t.Fatal(err)
			}
		}
		if len(runs[0]) == 0 {
			t.Fatalf("seed %d: no trace", seed)
		}
		if !slices.Equal(runs[0], runs[1]) {
			for i := range min(len(runs[0]), len(runs[1])) {
				if runs[0][i] != runs[1][i] {
					t.Fatalf("seed %d diverges at step %d:\n%s\n%s", seed, i, runs[0][i], runs[1][i])
				}
			}
			t.Fatalf("seed %d: %d and %d trace lines", seed, len(runs[0]), len(runs[1]))
		}
	}
}

// TestSimulationStoreRaces checks that a short run already plays the
// store's races that the invariants are checked under: slow calls, answers
// beaten by their timeout, and writes that land after their caller gave up
// on them (a simulator that stopped playing them would still pass
// TestSimulation).
func TestSimulationStoreRaces(t *testing.T) {
	st, err := Run(1, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d matches: %d slow store calls, %d timed out, %d writes landed after their timeout",
		st.Matches, st.SlowCalls, st.TimedOut, st.LateWrites)
	if st.SlowCalls == 0 || st.TimedOut == 0 || st.LateWrites == 0 {
		t.Fatalf("%d matches played %d slow store calls, %d timeouts, %d late writes: want some of each",
			st.Matches, st.SlowCalls, st.TimedOut, st.LateWrites)
	}
}
