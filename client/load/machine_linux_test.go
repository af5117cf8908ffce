//go:build linux

package load

import (
	"os"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// TestLoadDatabaseCPU: --database-pid puts that process tree's CPU over the
// window in the report. The "database" is this test process, which runs
// the edge and the bots meanwhile, so its share cannot be zero; reading a
// tree with children is internal/proccpu's own test.
func TestLoadDatabaseCPU(t *testing.T) {
	r := run(t, config(startServer(t), func(c *Config) {
		c.Matches, c.Rate, c.Warmup, c.Duration, c.DatabasePID = 1, 2, 500*time.Millisecond, 2*time.Second, os.Getpid()
	}))
	if r.Machine == nil || r.Machine.DatabaseCores == nil {
		t.Fatalf("no database share in the report: %+v", r)
	}
	if cores := *r.Machine.DatabaseCores; cores <= 0 || cores > float64(r.Machine.CPUs)+0.05 {
		t.Errorf("database cores %v, want a share of this busy process", cores)
	}
}

// TestLoadNodeSystemCalls: a real edge's registry (edge.NewRegistry)
// exports its process's read and write system calls, and the report
// divides the window's by its intents. The node shares this process with
// the bots, so the counts hold theirs too; an intent costs at least one
// read and one write of the node's socket either way.
func TestLoadNodeSystemCalls(t *testing.T) {
	srv := edgetest.Start(t, edgetest.NewMatches(), func(c *edge.Config) { c.Registry = edge.NewRegistry() })
	r := run(t, config(srv, func(c *Config) {
		c.Matches, c.Rate, c.Warmup, c.Duration, c.MetricsURL = 2, 5, 500*time.Millisecond, 2*time.Second, srv.HTTPURL+"/metrics"
	}))
	if r.Intents == 0 || r.Node == nil {
		t.Fatalf("no intents or no node usage: %+v", r)
	}
	if r.Node.ReadCallsPerIntent < 1 || r.Node.WriteCallsPerIntent < 1 {
		t.Errorf("%.2f reads and %.2f writes per intent over %d intents, want at least one of each",
			r.Node.ReadCallsPerIntent, r.Node.WriteCallsPerIntent, r.Intents)
	}
}
