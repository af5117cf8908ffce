package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/matchgrain/matchgrain/persistence"
)

// InspectingStore is a store that operators and replays can read whole.
type InspectingStore interface {
	persistence.Store
	persistence.Inspector
}

// RunInspector runs the conformance suite of persistence.Inspector: a
// match read whole (row, snapshot, every log entry however old), a read
// that fences nothing, unfinished matches counted per owner, and bad input
// refused. open returns a ready store for one subtest; the suite closes it.
func RunInspector(t *testing.T, open func(t *testing.T) InspectingStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s InspectingStore)
	}{
		{"ReadMatch", testReadMatch},
		{"ReadUnclaimed", testReadUnclaimed},
		{"ReadInvalid", testReadInvalid},
		{"OwnerCounts", testOwnerCounts},
		{"Closed", testInspectClosed},
	}
	for _, tc := range tests {
		runClosing(t, tc.name, open, tc.fn)
	}
}

func testReadMatch(t *testing.T, s InspectingStore) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, []byte("meta"))
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 5, "p")...)
	snap := persistence.Snapshot{Seq: 3, Data: []byte("snap-3")}
	if err := s.SaveSnapshot(ctx, id, rec.Epoch, snap); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	rec = mustClaim(t, s, id, "b")
	got, err := s.ReadMatch(ctx, id)
	if err != nil {
		t.Fatalf("read running match: %v", err)
	}
	if got.MatchID != id || string(got.Meta) != "meta" || got.Owner != "b" || got.Epoch != rec.Epoch ||
		got.LastSeq != 5 || got.Finished {
		t.Fatalf("running match read as %+v, want owner b, epoch %d, last seq 5, not finished", got, rec.Epoch)
	}
	if got.Snapshot == nil || got.Snapshot.Seq != snap.Seq || !bytes.Equal(got.Snapshot.Data, snap.Data) {
		t.Fatalf("snapshot = %+v, want %+v", got.Snapshot, snap)
	}
	// The whole log, not the tail after the snapshot: a replay starts at 1.
	checkLog(t, got.Log, entries(1, 5, "p"))
	if got.CreatedAt.IsZero() || got.UpdatedAt.Before(got.CreatedAt) {
		t.Fatalf("created %v, updated %v", got.CreatedAt, got.UpdatedAt)
	}

	// The read claimed nothing: the owner still writes at its epoch.
	mustAppend(t, s, id, rec.Epoch, entries(6, 6, "p")...)
	if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
		t.Fatalf("mark finished after a read: %v", err)
	}
	got, err = s.ReadMatch(ctx, id)
	if err != nil {
		t.Fatalf("read finished match: %v", err)
	}
	if !got.Finished || got.LastSeq != 6 || got.Epoch != rec.Epoch {
		t.Fatalf("finished match read as finished=%v last seq %d epoch %d, want true 6 %d",
			got.Finished, got.LastSeq, got.Epoch, rec.Epoch)
	}
	checkLog(t, got.Log, entries(1, 6, "p"))
}

func testReadUnclaimed(t *testing.T, s InspectingStore) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	got, err := s.ReadMatch(testContext(t), id)
	if err != nil {
		t.Fatalf("read unclaimed match: %v", err)
	}
	if got.Owner != "" || got.Epoch != 0 || got.LastSeq != 0 || got.Finished || got.Snapshot != nil ||
		len(got.Log) != 0 || len(got.Meta) != 0 {
		t.Fatalf("unclaimed match read as %+v", got)
	}
}

func testReadInvalid(t *testing.T, s InspectingStore) {
	ctx := testContext(t)
	if _, err := s.ReadMatch(ctx, newID(t, "missing")); !errors.Is(err, persistence.ErrMatchNotFound) {
		t.Fatalf("read missing match: err = %v, want ErrMatchNotFound", err)
	}
	if _, err := s.ReadMatch(ctx, ""); err == nil || errors.Is(err, persistence.ErrMatchNotFound) {
		t.Fatalf("read with an empty id: err = %v, want an argument error", err)
	}
}

// testOwnerCounts uses owners unique to the test, so a store shared with
// other tests does not change the counts it checks.
func testOwnerCounts(t *testing.T, s InspectingStore) {
	ctx := testContext(t)
	a, b := newID(t, "owner-a"), newID(t, "owner-b")
	for i := range 3 {
		id := newID(t, "m")
		mustCreate(t, s, id, nil)
		rec := mustClaim(t, s, id, a)
		if i == 0 {
			if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
				t.Fatalf("mark finished: %v", err)
			}
		}
	}
	done := newID(t, "m")
	mustCreate(t, s, done, nil)
	rec := mustClaim(t, s, done, b)
	if err := s.MarkFinished(ctx, done, rec.Epoch); err != nil {
		t.Fatalf("mark finished: %v", err)
	}
	mustCreate(t, s, newID(t, "unclaimed"), nil)
	got, err := s.OwnerCounts(ctx)
	if err != nil {
		t.Fatalf("owner counts: %v", err)
	}
	if got[a] != 2 {
		t.Fatalf("owner a holds %d unfinished matches, want 2 (one of its three finished): %v", got[a], got)
	}
	if n, ok := got[b]; ok {
		t.Fatalf("owner b counted with %d matches, all finished", n)
	}
	if got[""] < 1 {
		t.Fatalf("never claimed: %d, want at least 1", got[""])
	}
}

func testInspectClosed(t *testing.T, s InspectingStore) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ctx := testContext(t)
	if _, err := s.ReadMatch(ctx, id); !errors.Is(err, persistence.ErrClosed) {
		t.Fatalf("read after close: err = %v, want ErrClosed", err)
	}
	if _, err := s.OwnerCounts(ctx); !errors.Is(err, persistence.ErrClosed) {
		t.Fatalf("owner counts after close: err = %v, want ErrClosed", err)
	}
}

func checkLog(t *testing.T, got, want []persistence.LogEntry) {
	t.Helper()
	checkTail(t, persistence.Recovery{Tail: got}, want)
}
