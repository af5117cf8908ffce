//go:build linux

package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// TestLoadDatabaseCPU: --database-pid adds the CPU of that process and its
// children over the window. The "database" is a shell whose child spins, so
// its share is about one core, and none of it is the root's own.
func TestLoadDatabaseCPU(t *testing.T) {
	srv := startServer(t)
	root := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & wait`)
	root.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := root.Start(); err != nil {
		t.Fatalf("start a busy process tree: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-root.Process.Pid, syscall.SIGKILL)
		_ = root.Wait()
	})
	code, out, errOut := runCmd(t, "load", "--server", srv.HTTPURL, "--token", edgetest.AdminToken,
		"--matches", "1", "--rate", "2", "--warmup", "500ms", "--duration", "2s", "--metrics", "off", "--json",
		"--database-pid", strconv.Itoa(root.Process.Pid))
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
	// A spinning child gets most of a core even on a loaded machine; the
	// root alone (waiting) would be 0.
	if cores := *r.Machine.DatabaseCores; cores < 0.2 || cores > float64(r.Machine.CPUs)+0.05 {
		t.Errorf("database cores %v, want about 1", cores)
	}
}
