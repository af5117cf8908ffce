package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestGCGovernorQuietNode: a real node with nothing to do lowers its
// collector's GOGC to --gc-quiet-percent, as its /metrics shows: the
// runtime metrics the governor reads exist and say "quiet".
func TestGCGovernorQuietNode(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in this environment, which turns the governor off")
	}
	p := startProc(t, "q", "--data-dir", filepath.Join(t.TempDir(), "data"), "--gc-quiet-percent", "30")
	awaitGauge(t, p, "go_gc_gogc_percent", 30, 60*time.Second)
}

// TestGCBusyPercentHoldsOnABusyStart: with the governor off, a real node's
// collector runs at --gc-busy-percent from its start, as its /metrics
// shows (Go's own default would read 100).
func TestGCBusyPercentHoldsOnABusyStart(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in this environment, which the node leaves alone")
	}
	p := startProc(t, "b", "--data-dir", filepath.Join(t.TempDir(), "data"), "--gc-quiet-percent", "0", "--gc-busy-percent", "70")
	awaitGauge(t, p, "go_gc_gogc_percent", 70, 30*time.Second)
}

// awaitGauge polls p's /metrics until the unlabelled gauge name reads want,
// and fails the test if it does not within d.
func awaitGauge(t *testing.T, p *proc, name string, want float64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var got float64
	for time.Now().Before(deadline) {
		if f := scrapeFamilies(t, p.http)[name]; f != nil && len(f.GetMetric()) == 1 {
			if got = f.GetMetric()[0].GetGauge().GetValue(); got == want {
				return
			}
		}
		// Not faster: a scrape is most of what an empty node allocates,
		// and every half second it keeps a few MiB of heap busy by the GC
		// governor's measure (collections at the quiet percent would come
		// too often) when the busy percent is below 100.
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("%s is %v after %v, want %v", name, got, d, want)
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

// TestGCHerdPercentAfterAMemberDies: when another member of its cluster
// is killed, a real member's collector runs at --gc-herd-percent while it
// takes the dead member's matches over, as its /metrics shows; before the
// kill it never does.
func TestGCHerdPercentAfterAMemberDies(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in this environment, which turns the governor off")
	}
	const herd = 170 // neither a busy nor a quiet percent of these nodes
	common := []string{
		"--database-url", pgtest.URL(t), "--database-schema", pgtest.NewSchema(t),
		"--cluster-name", "herd-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--log-level", "info", "--gc-herd-percent", strconv.Itoa(herd),
	}
	a := startProc(t, "a", common...)
	b := startProc(t, "b", append(common, "--join", a.gossip)...)
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(2, a))
	if f := scrapeFamilies(t, a.http)["go_gc_gogc_percent"]; f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("a's /metrics has no go_gc_gogc_percent")
	} else if got := f.GetMetric()[0].GetGauge().GetValue(); got == herd {
		t.Fatalf("a's GOGC is the herd percent %d before any member left", herd)
	}
	b.kill()
	// The herd percent holds for 10 s from the member's departure, which
	// the closed connections confirm within a second: the gauge is polled
	// every 2 s.
	awaitGauge(t, a, "go_gc_gogc_percent", herd, 8*time.Second)
}
