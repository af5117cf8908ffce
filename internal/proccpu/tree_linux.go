package proccpu

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ): 100 on every
// Linux architecture Go supports.
const userHZ = 100

// Tree is the CPU time root and its children have used so far: the live
// ones by their threads' time on a CPU (runTime), the children root has
// already reaped through its cutime and cstime. The difference of two
// readings is the tree's CPU in between, also when children came or went
// (a reaped child's whole time moves into cutime, in whole ticks, so a
// reading may drop by up to two ticks when a child is reaped); a thread that ends
// within a live process takes its time with it, which does not happen to
// PostgreSQL's single-threaded processes.
// ok is false when root is gone or not visible (another pid namespace).
func Tree(root int) (cpu time.Duration, ok bool) {
	f := stat(root)
	if f == nil {
		return 0, false
	}
	cpu = runTime(root, f)
	for _, s := range f[14:16] { // cutime, cstime: fields 16 and 17
		ticks, _ := strconv.ParseInt(s, 10, 64)
		cpu += time.Duration(ticks) * time.Second / userHZ
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return cpu, true
	}
	parent := strconv.Itoa(root)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		if cf := stat(pid); cf != nil && cf[2] == parent {
			cpu += runTime(pid, cf)
		}
	}
	return cpu, true
}

// Parent returns a process's command name and its parent's pid; ok is
// false if the process is not visible.
func Parent(pid int) (comm string, ppid int, ok bool) {
	f := stat(pid)
	if f == nil {
		return "", 0, false
	}
	pp, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], pp, true
}

// stat returns the fields of /proc/PID/stat from the command name on (f[0]
// is the name without its parentheses, f[2] the parent's pid, f[11] and
// f[12] utime and stime, f[14] and f[15] cutime and cstime), or nil.
func stat(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The name may hold spaces and parentheses: the fields that follow
	// start after the last ')'.
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return nil
	}
	f := append([]string{s[open+1 : end]}, strings.Fields(s[end+1:])...)
	if len(f) < 16 {
		return nil
	}
	return f
}

// runTime is a process's time on a CPU so far: the sum over its threads
// of their time in /proc/PID/task/TID/schedstat, in nanoseconds (the
// process's own schedstat is its main thread's only, which in a Go program
// may sit parked while other threads work), or, where the kernel keeps no
// schedstat, its stat fields f (utime and stime of all its threads, in
// ticks).
func runTime(pid int, f []string) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	if tasks, err := os.ReadDir(dir); err == nil {
		var sum time.Duration
		counted := false
		for _, t := range tasks {
			raw, err := os.ReadFile(dir + t.Name() + "/schedstat")
			if err != nil {
				continue // the thread ended meanwhile
			}
			if fs := strings.Fields(string(raw)); len(fs) > 0 {
				if ns, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
					sum += time.Duration(ns)
					counted = true
				}
			}
		}
		if counted {
			return sum
		}
	}
	var ticks int64
	for _, s := range f[11:13] {
		t, _ := strconv.ParseInt(s, 10, 64)
		ticks += t
	}
	return time.Duration(ticks) * time.Second / userHZ
}
