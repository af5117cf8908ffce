package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/nemesis"
)

// TestKilledRunLeavesNothing kills `nemesis run` with SIGKILL once its
// network and a member are up, and expects its watchdog to remove every
// namespace, process, route and directory it made. Needs root and the
// harness's tools; skipped otherwise.
func TestKilledRunLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	for _, tool := range []string{"ip", "nft", "tc", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		t.Skip("no PostgreSQL server installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nemesis")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A "matchd" that never gets ready: the run stays at starting members.
	fake := filepath.Join(dir, "matchd")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--matchd", fake, "--members", "3", "--duration", "1m")
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Up: the first member's namespace holds the fake member.
	var pids []string
	poll(t, 60*time.Second, "the fake member running in mgn-m1", func() bool {
		o, _ := exec.Command("ip", "netns", "pids", "mgn-m1").Output()
		pids = strings.Fields(string(o))
		return len(pids) > 0
	})
	o, _ := exec.Command("ip", "netns", "pids", "mgn-pg").Output()
	pids = append(pids, strings.Fields(string(o))...)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed

	poll(t, 60*time.Second, "no mgn- namespace, blackhole route, directory or process left", func() bool {
		ns, _ := exec.Command("ip", "netns", "list").Output()
		route, _ := exec.Command("ip", "route", "show", "type", "blackhole", "10.77.0.0/24").Output()
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mgn-*"))
		for _, p := range pids {
			if _, err := os.Stat("/proc/" + p); err == nil {
				return false
			}
		}
		return !strings.Contains(string(ns), "mgn-") && strings.TrimSpace(string(route)) == "" && len(dirs) == 0
	})
}

// poll waits for cond, failing the test after timeout.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: not yet %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond) // polling another process's work
	}
}

func TestFaultKinds(t *testing.T) {
	o := &options{kinds: "split, primary-kill", pgHA: "/x/pg-ha.sh"}
	kinds, err := o.faultKinds()
	if err != nil || len(kinds) != 2 || kinds[0] != nemesis.KindSplit || kinds[1] != nemesis.KindPrimaryKill {
		t.Fatalf("faultKinds() = %v, %v", kinds, err)
	}
	for _, bad := range []*options{{kinds: "primary-kill"}, {kinds: "split,nope"}, {kinds: ","}} {
		if kinds, err := bad.faultKinds(); err == nil {
			t.Errorf("--kinds %q (pg-ha %q) = %v, want an error", bad.kinds, bad.pgHA, kinds)
		}
	}
	if kinds, err := (&options{}).faultKinds(); err != nil || kinds != nil {
		t.Errorf("no --kinds = %v, %v; want every kind (nil)", kinds, err)
	}
}
