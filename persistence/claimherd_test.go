package persistence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestPGClaimHerdLeavesAppendsAConnection: after a member dies its
// survivors claim hundreds of matches at once. Claims that wait (here on
// row locks another transaction holds; in a herd on the database) must not
// take every pooled connection: pgxpool hands connections out in arrival
// order, so the group-commit writers' appends, of every match the member
// runs, would queue behind the whole herd (measured: a survivor's matches
// answered only once its last claim was done). With 4 connections and 2
// writers, at most 2 claims hold a connection.
func TestPGClaimHerdLeavesAppendsAConnection(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	s := pgtest.NewStore(t, persistence.WithSchema(schema), persistence.WithMaxConns(4),
		persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 2}), quiet())
	ctx := testContext(t)
	for i := range 8 {
		if err := s.CreateMatch(ctx, fmt.Sprintf("herd-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateMatch(ctx, "playing", nil); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Claim(ctx, "playing", "a")
	if err != nil {
		t.Fatal(err)
	}

	// Another session locks the herd's rows: their claims wait inside
	// their UPDATE, each on the pooled connection it took.
	tx := lockMatches(t, ctx, schema, "match_id LIKE 'herd-%'")
	var lockerPID uint32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&lockerPID); err != nil {
		t.Fatal(err)
	}
	// Counted from a session of its own: pg_stat_activity is read once
	// per transaction.
	watcher := schemaConn(t, ctx, schema)
	blocked := func() int {
		var n int
		err := watcher.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", lockerPID).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The first two claims find a claimer free each and wait on their
	// locks, one connection each; the rest arrive while both wait.
	var wg sync.WaitGroup
	claimErrs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, claimErrs[i] = s.Claim(ctx, fmt.Sprintf("herd-%d", i), "b")
		})
		if i < 2 {
			pollFor(t, func() bool { return blocked() > i })
		}
	}
	// The herd is waiting once its claims hold the connections they may
	// (polled: the claims start on their own goroutines).
	pollFor(t, func() bool { return s.Pool().Stat().AcquiredConns() >= 2 })

	// A match that is playing still gets its intent committed.
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = s.Append(actx, "playing", rec.Epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte("x")}})
	if err != nil {
		t.Errorf("append while a herd of claims waits: %v (the claims held %d of 4 connections)", err, s.Pool().Stat().AcquiredConns())
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range claimErrs {
		if err != nil {
			t.Errorf("claim herd-%d after the locks went: %v", i, err)
		}
	}
}

// pollFor waits up to 10 s for cond, polling the store's state.
func pollFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling the pool's state
	}
}

// lockMatches locks the rows of matches that where selects (FOR UPDATE) in
// a transaction of a session of the test's own, and returns the
// transaction open: claims of those rows wait until it ends.
func lockMatches(t *testing.T, ctx context.Context, schema, where string) pgx.Tx {
	t.Helper()
	tx, err := schemaConn(t, ctx, schema).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM matches WHERE "+where+" FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	return tx
}

// schemaConn is a session of the test's own in schema, outside the
// store's pool; it closes when the test ends.
func schemaConn(t *testing.T, ctx context.Context, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
