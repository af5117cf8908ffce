package persistence_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestPGClaimTogether: a grouped claim recovers each match exactly as a
// claim of its own would (meta, snapshot, the log after it, finished), bumps
// each epoch once, leaves out matches that do not exist, and changes nothing
// at all when one match of the batch has an inconsistent log.
func TestPGClaimTogether(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	s := pgtest.NewStore(t, persistence.WithSchema(schema), persistence.WithMaxConns(4), quiet())
	ctx := testContext(t)
	entries := func(from, n int) []persistence.LogEntry {
		var es []persistence.LogEntry
		for i := range n {
			es = append(es, persistence.LogEntry{Seq: int64(from + i), Payload: fmt.Appendf(nil, "e%d", from+i)})
		}
		return es
	}
	want := map[string]persistence.Recovery{}
	setup := func(id string, logged int, snapAt int64, finished bool) {
		t.Helper()
		if err := s.CreateMatch(ctx, id, []byte("meta-"+id)); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, id, "old")
		if err != nil {
			t.Fatal(err)
		}
		w := persistence.Recovery{Epoch: rec.Epoch + 1, Meta: []byte("meta-" + id), Finished: finished}
		if logged > 0 {
			if err := s.Append(ctx, id, rec.Epoch, entries(1, logged)); err != nil {
				t.Fatal(err)
			}
			w.Tail = entries(int(snapAt)+1, logged-int(snapAt))
		}
		if snapAt > 0 {
			snap := persistence.Snapshot{Seq: snapAt, Data: []byte("snap-" + id)}
			if err := s.SaveSnapshot(ctx, id, rec.Epoch, snap); err != nil {
				t.Fatal(err)
			}
			w.Snapshot = &snap
		}
		if finished {
			if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
				t.Fatal(err)
			}
		}
		want[id] = w
	}
	setup("empty", 0, 0, false)
	setup("logged", 5, 0, false)
	setup("snapped", 7, 4, false)
	setup("snapped-at-end", 3, 3, false)
	setup("finished", 2, 0, true)
	ids := []string{"snapped", "missing", "empty", "finished", "logged", "snapped-at-end"}

	got, err := persistence.ClaimTogether(ctx, s, "new", ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("recovered %d matches, want %d (no \"missing\")", len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if len(g.Tail) == 0 {
			g.Tail = nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("match %s: grouped claim recovered\n%+v\nwant\n%+v", id, g, w)
		}
	}

	// One inconsistent log: the batch changes nothing, epochs included.
	conn := schemaConn(t, ctx, schema)
	if _, err := conn.Exec(ctx, "UPDATE matches SET last_seq = last_seq + 2 WHERE match_id = 'logged'"); err != nil {
		t.Fatal(err)
	}
	if _, err := persistence.ClaimTogether(ctx, s, "newer", ids); err == nil {
		t.Fatal("a batch with an inconsistent log was claimed")
	}
	var bumped int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM matches WHERE owner = 'newer'").Scan(&bumped); err != nil {
		t.Fatal(err)
	}
	if bumped != 0 {
		t.Errorf("%d matches claimed by a batch that failed", bumped)
	}
}

// TestPGClaimHerdGrouped: many claims at once, queued behind claims that
// wait on row locks, are all answered once the locks go, each with its own
// match's recovery and an epoch bumped exactly once.
func TestPGClaimHerdGrouped(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	s := pgtest.NewStore(t, persistence.WithSchema(schema), persistence.WithMaxConns(4), quiet())
	ctx := testContext(t)
	const n = 60
	epochs := map[string]int64{}
	for i := range n {
		id := fmt.Sprintf("herd-%02d", i)
		if err := s.CreateMatch(ctx, id, []byte(id)); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, id, "old")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, rec.Epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte(id)}}); err != nil {
			t.Fatal(err)
		}
		epochs[id] = rec.Epoch
	}
	tx := lockMatches(t, ctx, schema, "true")
	// Each match is claimed twice: a batch takes a match once, so the
	// second claim must bump its epoch again, after the first.
	var wg sync.WaitGroup
	recs := make([]persistence.Recovery, 2*n)
	errs := make([]error, 2*n)
	for i := range 2 * n {
		wg.Go(func() { recs[i], errs[i] = s.Claim(ctx, fmt.Sprintf("herd-%02d", i%n), "new") })
	}
	pollFor(t, func() bool { return s.Pool().Stat().AcquiredConns() >= 2 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("herd-%02d", i)
		got := []int64{}
		for _, j := range []int{i, i + n} {
			switch {
			case errs[j] != nil:
				t.Errorf("claim %s: %v", id, errs[j])
			case string(recs[j].Meta) != id || len(recs[j].Tail) != 1 || string(recs[j].Tail[0].Payload) != id:
				t.Errorf("claim %s: recovered %+v, want its own meta and entry", id, recs[j])
			default:
				got = append(got, recs[j].Epoch)
			}
		}
		slices.Sort(got)
		if want := []int64{epochs[id] + 1, epochs[id] + 2}; !slices.Equal(got, want) {
			t.Errorf("claim %s twice: epochs %v, want %v", id, got, want)
		}
	}
}

// TestPGClaimTogetherSkipsLockedRows: a grouped claim never waits for a row
// another transaction holds (a frozen member's open transaction): it claims
// the others at once and leaves that one out, for a claim of its own.
func TestPGClaimTogetherSkipsLockedRows(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	s := pgtest.NewStore(t, persistence.WithSchema(schema), persistence.WithMaxConns(4), quiet())
	ctx := testContext(t)
	ids := []string{"a", "b", "c", "d"}
	for _, id := range ids {
		if err := s.CreateMatch(ctx, id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	tx := lockMatches(t, ctx, schema, "match_id = 'c'")
	defer func() { _ = tx.Rollback(context.Background()) }() // only a lock to release
	bctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	got, err := persistence.ClaimTogether(bctx, s, "new", ids)
	if err != nil {
		t.Fatalf("a batch with one locked row: %v", err)
	}
	var claimed []string
	for id, rec := range got {
		if rec.Epoch != 1 {
			t.Errorf("match %s: epoch %d, want 1", id, rec.Epoch)
		}
		claimed = append(claimed, id)
	}
	slices.Sort(claimed)
	if want := []string{"a", "b", "d"}; !slices.Equal(claimed, want) {
		t.Errorf("the batch claimed %v, want %v (not the locked one)", claimed, want)
	}

	// Through Claim, the locked match's own claim waits for its lock.
	done := make(chan error, 1)
	go func() {
		rec, err := s.Claim(ctx, "c", "new")
		if err == nil && rec.Epoch != 1 {
			err = fmt.Errorf("epoch %d, want 1", rec.Epoch)
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the claim of a locked match returned before the lock went: %v", err)
	case <-time.After(200 * time.Millisecond): // it is waiting, as a claim alone did
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("claim of the unlocked match: %v", err)
	}
}
