package persistence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestPGPruneFinishedLogs: only finished, old matches whose snapshot covers
// the whole log lose their log; they still claim with their final state.
func TestPGPruneFinishedLogs(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logOf := func(n int64) []persistence.LogEntry {
		var out []persistence.LogEntry
		for i := int64(1); i <= n; i++ {
			out = append(out, persistence.LogEntry{Seq: i, Payload: []byte(fmt.Sprintf("e%d", i))})
		}
		return out
	}
	// setup: 3 log entries, a snapshot at snapSeq, finished or not.
	setup := func(id string, snapSeq int64, finished bool) {
		if err := s.CreateMatch(ctx, id, []byte("meta")); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, id, "owner")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, rec.Epoch, logOf(3)); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(ctx, id, rec.Epoch, persistence.Snapshot{Seq: snapSeq, Data: []byte("final")}); err != nil {
			t.Fatal(err)
		}
		if finished {
			if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
				t.Fatal(err)
			}
		}
	}
	setup("done", 3, true)
	setup("done-snapshot-behind", 2, true)
	setup("running", 3, false)

	if m, e, err := s.PruneFinishedLogs(ctx, time.Now().Add(-time.Hour), 100); err != nil || m != 0 || e != 0 {
		t.Fatalf("prune of matches older than an hour: %d matches, %d entries, %v; want nothing", m, e, err)
	}
	// The database's clock decides; a minute ahead covers any skew with ours.
	m, e, err := s.PruneFinishedLogs(ctx, time.Now().Add(time.Minute), 100)
	if err != nil || m != 1 || e != 3 {
		t.Fatalf("prune: %d matches, %d entries, %v; want 1 and 3", m, e, err)
	}
	rec, err := s.Claim(ctx, "done", "later")
	if err != nil {
		t.Fatalf("claim a pruned match: %v", err)
	}
	if !rec.Finished || rec.Snapshot == nil || rec.Snapshot.Seq != 3 || string(rec.Snapshot.Data) != "final" || len(rec.Tail) != 0 || string(rec.Meta) != "meta" {
		t.Fatalf("pruned match claims as %+v", rec)
	}
	for _, id := range []string{"done-snapshot-behind", "running"} {
		rec, err := s.Claim(ctx, id, "later")
		if err != nil {
			t.Fatal(err)
		}
		if rec.LastSeq() != 3 || rec.Snapshot == nil || int64(len(rec.Tail)) != 3-rec.Snapshot.Seq {
			t.Fatalf("%s was touched: %+v", id, rec)
		}
	}
	if m, e, err := s.PruneFinishedLogs(ctx, time.Now().Add(time.Minute), 100); err != nil || m != 0 || e != 0 {
		t.Fatalf("second prune: %d matches, %d entries, %v; want nothing", m, e, err)
	}
	sizes, err := s.TableSizes(ctx)
	if err != nil || sizes["match_log"] <= 0 || sizes["matches"] <= 0 {
		t.Fatalf("table sizes %v, %v", sizes, err)
	}
}
