//go:build linux

package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgrain/matchgrain/internal/proccpu"
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
	m.node, m.pg = proccpu.Self(), m.serverCPU()
	return m
}

// report adds node-cpu-ns/op and, when the server is local, pg-cpu-ns/op.
func (m *cpuMeter) report(b *testing.B) {
	b.Helper()
	node, pg := proccpu.Self()-m.node, m.serverCPU()-m.pg
	b.ReportMetric(float64(node.Nanoseconds())/float64(b.N), "node-cpu-ns/op")
	if m.postmaster != 0 {
		b.ReportMetric(float64(pg.Nanoseconds())/float64(b.N), "pg-cpu-ns/op")
	}
}

// postmasterPID finds the server process of pool's database as the parent
// of one of its backends, or 0 if that process is not on this machine.
func postmasterPID(b *testing.B, pool *pgxpool.Pool) int {
	b.Helper()
	var backend int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatalf("backend pid: %v", err)
	}
	comm, pm, ok := proccpu.Parent(backend)
	if !ok || comm != "postgres" {
		return 0 // a remote server, or one another pid namespace hides
	}
	return pm
}

// serverCPU is the CPU time of the postmaster and its children, those it
// has reaped included.
func (m *cpuMeter) serverCPU() time.Duration {
	if m.postmaster == 0 {
		return 0
	}
	cpu, _ := proccpu.Tree(m.postmaster)
	return cpu
}
