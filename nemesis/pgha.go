package nemesis

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// pgHA is the highly available PostgreSQL (deploy/pg-ha.sh: pg_auto_failover
// with a monitor, a primary and a synchronous standby) run in the
// PostgreSQL namespace, for the primary-kill fault.
type pgHA struct {
	script string // deploy/pg-ha.sh
	dir    string // its MATCHGRAIN_PGHA_DIR
	url    string // both nodes, target_session_attrs=read-write
}

// startPGHA starts the formation on the PostgreSQL namespace's address,
// trusting the harness's subnet, with its files under workDir (so that
// Cleanup removes them after a killed run) and a watchdog that stops it
// once this process has exited.
func startPGHA(ctx context.Context, script, workDir string) (*pgHA, error) {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", pgNS, script, "start", "--fast", "--stop-with", strconv.Itoa(os.Getpid()))
	cmd.Env = append(os.Environ(), "PGHA_LISTEN="+pgAddr.String(), "PGHA_CLIENTS="+Subnet.String(), "TMPDIR="+workDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s start in %s: %w: %s", script, pgNS, err, strings.TrimSpace(stderr.String()))
	}
	h := &pgHA{script: script}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			continue
		}
		value = strings.Trim(value, "'")
		switch name {
		case "DATABASE_URL":
			h.url = value
		case "MATCHGRAIN_PGHA_DIR":
			h.dir = value
		}
	}
	if h.url == "" || h.dir == "" {
		return nil, fmt.Errorf("%s start printed no DATABASE_URL or MATCHGRAIN_PGHA_DIR: %q", script, out)
	}
	return h, nil
}

// do runs one of the script's modes on the formation, in its namespace.
func (h *pgHA) do(ctx context.Context, mode string) error {
	return inNS(ctx, pgNS, h.script, mode, h.dir)
}

// killPrimary is the primary-kill fault: SIGKILL to the primary's
// postmaster; the monitor promotes the standby and the old primary's
// keeper brings it back as the new standby.
func (h *pgHA) killPrimary(ctx context.Context) error { return h.do(ctx, "kill-primary") }

// settle heals primary-kill: it waits until one primary and one
// synchronous standby are running again.
func (h *pgHA) settle(ctx context.Context) error { return h.do(ctx, "wait") }

// stop stops the formation and removes its files.
func (h *pgHA) stop(ctx context.Context) error { return h.do(ctx, "stop") }
