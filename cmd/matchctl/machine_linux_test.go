//go:build linux

package main

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// TestLoadDatabaseCPU: --database-pid puts that process tree's CPU over the
// window in the report. The "database" is this test process, which runs
// the edge and the bots meanwhile, so its share cannot be zero; reading a
// tree with children is internal/proccpu's own test.
func TestLoadDatabaseCPU(t *testing.T) {
	srv := startServer(t)
	code, out, errOut := runCmd(t, "load", "--server", srv.HTTPURL, "--token", edgetest.AdminToken,
		"--matches", "1", "--rate", "2", "--warmup", "500ms", "--duration", "2s", "--metrics", "off", "--json",
		"--database-pid", strconv.Itoa(os.Getpid()))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if r.Machine == nil || r.Machine.DatabaseCores == nil {
		t.Fatalf("no database share in the report:\n%s", out)
	}
	if cores := *r.Machine.DatabaseCores; cores <= 0 || cores > float64(r.Machine.CPUs)+0.05 {
		t.Errorf("database cores %v, want a share of this busy process", cores)
	}
}
