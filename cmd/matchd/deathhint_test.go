package main

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestChaosClosedConnectionsConfirmDeath: a member killed with SIGKILL
// leaves its peers' topology long before memberlist's probes could declare
// it dead (its closed connections and refused ports confirm the death,
// cluster/hint.go), while a frozen member (SIGSTOP), whose sockets stay
// open, stays in the topology for as long as the probes allow. The members
// probe every 2 s, so probes alone need at least (1 + SuspicionMult) × 2 s
// = 8 s to declare a death: the kill must be seen within 4 s, the freeze
// must not be for those 4 s.
func TestChaosClosedConnectionsConfirmDeath(t *testing.T) {
	const probe = 2 * time.Second
	earliestByProbes := 4 * probe
	common := []string{
		"--database-url", pgtest.URL(t), "--database-schema", pgtest.NewSchema(t),
		"--cluster-name", "hint-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--probe-interval", probe.String(), "--log-level", "info",
	}
	a := startProc(t, "a", common...)
	b := startProc(t, "b", append(common, "--join", a.gossip)...)
	c := startProc(t, "c", append(common, "--join", a.gossip)...)
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(3, a, b, c))

	// Frozen: its sockets stay open, so no hint; only probes may decide.
	if err := c.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	frozen := time.Now()
	for time.Since(frozen) < earliestByProbes/2 {
		if err := seeMembers(3, a, b)(); err != nil {
			t.Fatalf("%v after %v frozen: a frozen member was declared dead before the probes could", err, time.Since(frozen).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond) // sampling a condition that must keep holding
	}
	if err := c.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(3, a, b))

	// Killed: its kernel closed its sockets; the survivors confirm at once.
	killed := time.Now()
	c.kill()
	clustertest.Eventually(t, earliestByProbes/2, 10*time.Millisecond, seeMembers(2, a, b))
	t.Logf("killed member out of both survivors' topology after %v (probes alone: ≥ %v)", time.Since(killed).Round(time.Millisecond), earliestByProbes)
}

// TestChaosClosedConnectionHintOff: with --closed-connection-hint=false a
// killed member is left to the probes, which need at least 8 s here: the
// survivor still counts it after 4 s (the flag turns the hint off, and the
// test above is the hint's doing, not the probes').
func TestChaosClosedConnectionHintOff(t *testing.T) {
	const probe = 2 * time.Second
	common := []string{
		"--database-url", pgtest.URL(t), "--database-schema", pgtest.NewSchema(t),
		"--cluster-name", "nohint-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--probe-interval", probe.String(), "--log-level", "info", "--closed-connection-hint=false",
	}
	a := startProc(t, "a", common...)
	b := startProc(t, "b", append(common, "--join", a.gossip)...)
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(2, a))
	killed := time.Now()
	b.kill()
	for time.Since(killed) < 2*probe {
		if n := a.topologyMembers(); n != 2 {
			t.Fatalf("a sees %d members %v after the kill: without the hint only the probes may decide, and they need ≥ %v", n, time.Since(killed).Round(time.Millisecond), 4*probe)
		}
		time.Sleep(50 * time.Millisecond) // sampling a condition that must keep holding
	}
}
