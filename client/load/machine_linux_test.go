//go:build linux

package load

import (
	"os"
	"testing"
	"time"
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
