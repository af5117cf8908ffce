package proccpu

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestTreeCountsChildren: a shell whose child spins uses about a core,
// though the shell itself only waits; and the spinner's time stays counted
// once it is killed and reaped (through the root's cutime).
func TestTreeCountsChildren(t *testing.T) {
	root := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & wait; sleep 5`)
	root.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := root.Start(); err != nil {
		t.Fatalf("start a busy process tree: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-root.Process.Pid, syscall.SIGKILL)
		_ = root.Wait()
	})
	pid := root.Process.Pid
	start := time.Now()
	before, ok := Tree(pid)
	if !ok {
		t.Fatal("Tree: the root is not visible")
	}
	during := cpuReaches(t, pid, start, before, 100*time.Millisecond)
	// Kill the spinner only (the root's children), and let the root reap it.
	var spinner int
	deadline := time.Now().Add(5 * time.Second)
	for spinner == 0 && time.Now().Before(deadline) {
		for _, p := range children(t, pid) {
			spinner = p
		}
	}
	if spinner == 0 {
		t.Fatal("no child of the root found")
	}
	if err := syscall.Kill(spinner, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the spinner: %v", err)
	}
	for time.Now().Before(deadline) {
		if _, ppid, ok := Parent(spinner); !ok || ppid != pid {
			break // reaped (or gone)
		}
		time.Sleep(10 * time.Millisecond)
	}
	after, _ := Tree(pid)
	// A live child counts to the nanosecond (schedstat), a reaped one in
	// whole ticks (cutime and cstime, each rounded down): the sum may fall
	// by up to two ticks on reaping. Losing the spinner would drop it by
	// the half second it ran.
	if slack := 2 * time.Second / userHZ; after < during-slack {
		t.Fatalf("the tree's CPU fell from %v to %v when a child was reaped (more than the %v of rounding)", during, after, slack)
	}
}

func init() {
	// The main goroutine keeps the main thread: in the helper process of
	// TestTreeCountsAllThreads, whose test then spins on other threads
	// while the main thread waits.
	runtime.LockOSThread()
}

// TestTreeCountsAllThreads: a process whose main thread waits while
// another thread works (a Go program's usual shape) is counted busy.
func TestTreeCountsAllThreads(t *testing.T) {
	if os.Getenv("PROCCPU_SPIN") == "1" {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		}
		return
	}
	spinner := exec.Command(os.Args[0], "-test.run=^TestTreeCountsAllThreads$")
	spinner.Env = append(os.Environ(), "PROCCPU_SPIN=1")
	if err := spinner.Start(); err != nil {
		t.Fatalf("start a spinning copy of the test: %v", err)
	}
	t.Cleanup(func() {
		_ = spinner.Process.Kill()
		_ = spinner.Wait()
	})
	pid := spinner.Process.Pid
	start := time.Now()
	before, ok := Tree(pid)
	if !ok {
		t.Fatal("Tree: the process is not visible")
	}
	cpuReaches(t, pid, start, before, 100*time.Millisecond)
}

// cpuReaches polls Tree(pid) until it counts want more than before (read
// at start), and returns the count. It waits up to 10 s, not a fixed
// window: on a loaded machine (CI runs test binaries side by side on 2
// cores) a spinner gets only a share of a core, and a fixed half second
// measured the box instead of Tree. A tree whose busy part is not counted
// never gets there; one counted twice shows as more CPU than the machine
// has had since start.
func cpuReaches(t *testing.T, pid int, start time.Time, before, want time.Duration) time.Duration {
	t.Helper()
	for {
		now, ok := Tree(pid)
		if !ok {
			t.Fatal("Tree: the process is gone")
		}
		elapsed := time.Since(start)
		if max := time.Duration(runtime.NumCPU())*elapsed + 2*time.Second/userHZ; now-before > max {
			t.Fatalf("Tree counted %v in %v of wall time on %d CPUs: more than the machine had", now-before, elapsed, runtime.NumCPU())
		}
		if now-before >= want {
			return now
		}
		if elapsed > 10*time.Second {
			t.Fatalf("a spinning process counted %v in %v of wall time, want %v", now-before, elapsed, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// children lists root's child pids through Parent.
func children(t *testing.T, root int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pp, ok := Parent(pid); ok && pp == root {
			out = append(out, pid)
		}
	}
	return out
}
