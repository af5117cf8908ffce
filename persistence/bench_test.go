package persistence_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// benchPayload is about the size of one encoded intent with its id.
var benchPayload = make([]byte, 64)

// benchSnapshot is about the size of a mid-game match state.
var benchSnapshot = make([]byte, 4<<10)

// benchMatch creates and claims one match.
func benchMatch(b *testing.B, s persistence.Store, id string) int64 {
	b.Helper()
	ctx := context.Background()
	if err := s.CreateMatch(ctx, id, nil); err != nil {
		b.Fatal(err)
	}
	rec, err := s.Claim(ctx, id, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return rec.Epoch
}

// benchAppend measures the latency of one single-entry append, and its CPU
// time in this process and in PostgreSQL (pool nil: not PostgreSQL).
func benchAppend(b *testing.B, s persistence.Store, pool *pgxpool.Pool) {
	epoch := benchMatch(b, s, "bench-append")
	ctx := context.Background()
	cpu := startCPU(b, pool)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Append(ctx, "bench-append", epoch, []persistence.LogEntry{{Seq: int64(i + 1), Payload: benchPayload}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.report(b)
}

// benchSaveSnapshot measures the latency of replacing a 4 KiB snapshot.
func benchSaveSnapshot(b *testing.B, s persistence.Store) {
	ctx := context.Background()
	epoch := benchMatch(b, s, "bench-snapshot")
	if err := s.Append(ctx, "bench-snapshot", epoch, []persistence.LogEntry{{Seq: 1, Payload: benchPayload}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.SaveSnapshot(ctx, "bench-snapshot", epoch, persistence.Snapshot{Seq: 1, Data: benchSnapshot}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchConcurrentMatches measures append throughput with about 1,000
// matches appending single entries at once, one goroutine per match, each
// waiting for its append before the next (as a match grain does).
func benchConcurrentMatches(b *testing.B, s persistence.Store, pool *pgxpool.Pool) {
	procs := runtime.GOMAXPROCS(0)
	perProc := (1000 + procs - 1) / procs
	n := perProc * procs
	type match struct {
		id    string
		epoch int64
		seq   int64
	}
	ms := make([]match, n)
	for i := range ms {
		ms[i].id = fmt.Sprintf("bench-c-%04d", i)
		ms[i].epoch = benchMatch(b, s, ms[i].id)
	}
	// Warm up: every match appends once at the same time, so the pool has
	// opened its connections before anything is timed.
	var wg sync.WaitGroup
	for i := range ms {
		m := &ms[i]
		wg.Go(func() {
			m.seq++
			if err := s.Append(context.Background(), m.id, m.epoch, []persistence.LogEntry{{Seq: m.seq, Payload: benchPayload}}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	// RunParallel is called again with a larger b.N; each call hands every
	// match to exactly one goroutine, which continues its log.
	run := func(b *testing.B) {
		var next atomic.Int64
		cpu := startCPU(b, pool)
		b.ReportAllocs()
		b.SetParallelism(perProc)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			m := &ms[next.Add(1)-1]
			ctx := context.Background()
			for pb.Next() {
				m.seq++
				if err := s.Append(ctx, m.id, m.epoch, []persistence.LogEntry{{Seq: m.seq, Payload: benchPayload}}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		cpu.report(b)
	}
	b.Run(fmt.Sprintf("matches=%d", n), run)
}

func BenchmarkPGAppend(b *testing.B) {
	b.Run("group", func(b *testing.B) {
		s := pgtest.NewStore(b)
		benchAppend(b, s, s.Pool())
	})
	b.Run("direct", func(b *testing.B) {
		s := pgtest.NewStore(b, persistence.WithoutGroupCommit())
		benchAppend(b, s, s.Pool())
	})
}

// BenchmarkPGAppendBatch measures one group-commit batch of a fixed number
// of single-entry appends, each of its own match (one op = one batch): the
// per-batch cost the dispatcher pays, without its timing deciding the batch
// sizes. Under load most batches hold 1 to 3 appends.
func BenchmarkPGAppendBatch(b *testing.B) {
	for _, n := range []int{1, 2, 3, 16} {
		b.Run(fmt.Sprintf("appends=%d", n), func(b *testing.B) {
			s := pgtest.NewStore(b)
			batch := make([]persistence.BatchAppend, n)
			for i := range batch {
				batch[i].MatchID = fmt.Sprintf("bench-batch-%02d", i)
				batch[i].Epoch = benchMatch(b, s, batch[i].MatchID)
				batch[i].Entries = make([]persistence.LogEntry, 1)
			}
			ctx := context.Background()
			cpu := startCPU(b, s.Pool())
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for j := range batch {
					batch[j].Entries[0] = persistence.LogEntry{Seq: int64(i + 1), Payload: benchPayload}
				}
				for j, err := range persistence.FlushBatch(ctx, s, batch) {
					if err != nil {
						b.Fatalf("append %d: %v", j, err)
					}
				}
			}
			b.StopTimer()
			cpu.report(b)
		})
	}
}

func BenchmarkPGSaveSnapshot(b *testing.B) { benchSaveSnapshot(b, pgtest.NewStore(b)) }

func BenchmarkEmbeddedAppend(b *testing.B) { benchAppend(b, openEmbeddedB(b), nil) }

func BenchmarkEmbeddedSaveSnapshot(b *testing.B) { benchSaveSnapshot(b, openEmbeddedB(b)) }

func BenchmarkPGAppendConcurrent(b *testing.B) {
	configs := []struct {
		name string
		opts []persistence.PostgresOption
	}{
		{"direct/conns=16", []persistence.PostgresOption{persistence.WithMaxConns(16), persistence.WithoutGroupCommit()}},
		{"direct/conns=64", []persistence.PostgresOption{persistence.WithMaxConns(64), persistence.WithoutGroupCommit()}},
		{"group/conns=16", []persistence.PostgresOption{persistence.WithMaxConns(16),
			persistence.WithGroupCommit(persistence.GroupCommitConfig{})}},
		{"group/conns=4", []persistence.PostgresOption{persistence.WithMaxConns(4),
			persistence.WithGroupCommit(persistence.GroupCommitConfig{})}},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			s := pgtest.NewStore(b, c.opts...)
			benchConcurrentMatches(b, s, s.Pool())
			if st := s.GroupCommitStats(); st.Batches > 0 {
				b.Logf("group commit: %d appends in %d batches (%.1f per batch), %d retried",
					st.Appends, st.Batches, float64(st.Appends)/float64(st.Batches), st.Retries)
			}
		})
	}
}

func BenchmarkEmbeddedAppendConcurrent(b *testing.B) {
	benchConcurrentMatches(b, openEmbeddedB(b), nil)
}

func openEmbeddedB(b *testing.B) *persistence.EmbeddedStore {
	b.Helper()
	s, err := persistence.OpenEmbedded(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	return s
}

// BenchmarkPGClaimHerd claims 500 matches at once (8 logged intents each),
// as a survivor does after a member's death, on the pool a 2-core member
// gets by default (4 connections, 2 of them the group-commit writers'):
// grouped claims against claims one at a time.
func BenchmarkPGClaimHerd(b *testing.B) {
	const herd, logged = 500, 8
	for _, grouped := range []bool{true, false} {
		name := "grouped"
		if !grouped {
			name = "one-at-a-time"
		}
		b.Run(name, func(b *testing.B) {
			s := pgtest.NewStore(b, persistence.WithMaxConns(4), persistence.WithGroupCommit(persistence.GroupCommitConfig{}))
			if !grouped {
				persistence.ClaimOneAtATime(s)
			}
			ctx := context.Background()
			ids := make([]string, herd)
			for i := range ids {
				ids[i] = fmt.Sprintf("herd-%s-%d", name, i)
				if err := s.CreateMatch(ctx, ids[i], []byte("meta")); err != nil {
					b.Fatal(err)
				}
				rec, err := s.Claim(ctx, ids[i], "old")
				if err != nil {
					b.Fatal(err)
				}
				es := make([]persistence.LogEntry, logged)
				for j := range es {
					es[j] = persistence.LogEntry{Seq: int64(j + 1), Payload: make([]byte, 64)}
				}
				if err := s.Append(ctx, ids[i], rec.Epoch, es); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				var g errgroup.Group
				for _, id := range ids {
					g.Go(func() error {
						_, err := s.Claim(ctx, id, "new")
						return err
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/herd")
		})
	}
}
