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
	before, ok := Tree(pid)
	if !ok {
		t.Fatal("Tree: the root is not visible")
	}
	time.Sleep(500 * time.Millisecond)
	during, _ := Tree(pid)
	if d := during - before; d < 100*time.Millisecond || d > time.Second {
		t.Fatalf("a spinning child used %v in 500 ms of wall time, want most of it", d)
	}
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
	time.Sleep(200 * time.Millisecond) // past its start
	before, ok := Tree(pid)
	if !ok {
		t.Fatal("Tree: the process is not visible")
	}
	time.Sleep(500 * time.Millisecond)
	after, _ := Tree(pid)
	if d := after - before; d < 100*time.Millisecond {
		t.Fatalf("a process spinning on a thread other than its main one used %v in 500 ms of wall time, want most of it", d)
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
