package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMeasureIdleSpread runs measure.sh's idle workload at a tiny scale
// with the code path of idle50000: 100 sessions, 40 per source address, so
// they bind to 127.0.0.2 to 127.0.0.4 and the node allows 40 connections
// per address. Sessions that all came from one address would be refused
// past the 40th.
func TestMeasureIdleSpread(t *testing.T) {
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/initdb"); err != nil && os.Geteuid() != 0 && os.Getenv("PG_BIN") == "" {
		t.Skip("PostgreSQL 15 is not installed and pg-throwaway.sh cannot install it without root")
	}
	for _, tool := range []string{"python3", "curl"} {
		if !haveTool(t, tool, "measure.sh is not run") {
			return
		}
	}
	s := theServer(t)
	cmd := exec.Command("./measure.sh", "idle100")
	cmd.Env = append(os.Environ(), "MEASURE_MATCHD="+s.bin, "MEASURE_IDLE_PER_ADDRESS=40", "MEASURE_IDLE_HOLD=1s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("measure.sh idle100: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "idle: 100 of 100 sessions connected, 0 dropped") {
		t.Errorf("measure.sh idle100 did not hold every session:\n%s", out)
	}
}
