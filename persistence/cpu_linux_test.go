//go:build linux

package persistence_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuMeter measures the CPU time a benchmark costs on both sides of the
// socket: this process (the "node") and the PostgreSQL server, whose
// backends share the same cores. Wall time on a shared 2-core machine is
// noisy; CPU time per operation is what the node and the database pay.
type cpuMeter struct {
	postmaster int // 0: the server's processes are not visible from here
	node, pg   time.Duration
}

// startCPU samples the CPU used so far. pool may be nil (no server to
// measure). Call it before b.ResetTimer and report after the loop.
func startCPU(b *testing.B, pool *pgxpool.Pool) *cpuMeter {
	b.Helper()
	m := &cpuMeter{}
	if pool != nil {
		m.postmaster = postmasterPID(b, pool)
	}
	m.node, m.pg = nodeCPU(), m.serverCPU()
	return m
}

// report adds node-cpu-ns/op and, when the server is local, pg-cpu-ns/op.
func (m *cpuMeter) report(b *testing.B) {
	b.Helper()
	node, pg := nodeCPU()-m.node, m.serverCPU()-m.pg
	b.ReportMetric(float64(node.Nanoseconds())/float64(b.N), "node-cpu-ns/op")
	if m.postmaster != 0 {
		b.ReportMetric(float64(pg.Nanoseconds())/float64(b.N), "pg-cpu-ns/op")
	}
}

// nodeCPU is the user and system CPU time of this process, all threads.
func nodeCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postmasterPID finds the server process of pool's database as the parent
// of one of its backends, or 0 if that process is not on this machine.
func postmasterPID(b *testing.B, pool *pgxpool.Pool) int {
	b.Helper()
	var backend int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatalf("backend pid: %v", err)
	}
	f := procStat(backend)
	if f == nil || f[0] != "postgres" {
		return 0 // a remote server, or one another pid namespace hides
	}
	pm, err := strconv.Atoi(f[2])
	if err != nil {
		return 0
	}
	return pm
}

// serverCPU is the CPU time of the postmaster and its children: the live
// ones by their scheduler run time (nanoseconds), the exited ones through
// the postmaster's cutime and cstime (clock ticks).
func (m *cpuMeter) serverCPU() time.Duration {
	if m.postmaster == 0 {
		return 0
	}
	total := runTime(m.postmaster)
	if f := procStat(m.postmaster); f != nil {
		// Fields 16 and 17 of /proc/pid/stat, in USER_HZ (100 on Linux).
		for _, s := range f[14:16] {
			ticks, _ := strconv.ParseInt(s, 10, 64)
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	pm := strconv.Itoa(m.postmaster)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(pid); f != nil && f[2] == pm {
			total += runTime(pid)
		}
	}
	return total
}

// procStat returns the fields of /proc/pid/stat from the command name on
// (f[0] is comm without parentheses, f[2] the parent pid), or nil.
func procStat(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
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

// runTime is a process's time on a CPU so far, from /proc/pid/schedstat.
func runTime(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}
