package persistence_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestCloseLeavesNoGoroutines opens each store, keeps its background
// goroutines busy, closes it, and expects the goroutine count to return to
// where it was. Not parallel: parallel tests wait until it is done, so the
// count is this test's alone.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	open := map[string]func(t *testing.T) persistence.Store{
		"Embedded": func(t *testing.T) persistence.Store {
			s, err := persistence.OpenEmbedded(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"PostgresGroupCommit": func(t *testing.T) persistence.Store {
			s, err := persistence.OpenPostgres(testContext(t), pgtest.URL(t), persistence.WithSchema(pgtest.NewSchema(t)), quiet())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, openStore := range open {
		t.Run(name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			s := openStore(t)
			ctx := testContext(t)
			if err := s.CreateMatch(ctx, "m", nil); err != nil {
				t.Fatal(err)
			}
			rec, err := s.Claim(ctx, "m", "a")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 8)
			for i := range 8 {
				go func() { done <- s.Append(ctx, "m", rec.Epoch, []persistence.LogEntry{{Seq: int64(i + 1)}}) }()
			}
			for range 8 {
				<-done // outcomes vary (seqs race); only the goroutines matter here
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines before open, %d after close:\n%s",
						before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
