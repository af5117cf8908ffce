package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// Timeout bounds every store call the suite makes.
const Timeout = 30 * time.Second

// Run runs the conformance suite. open returns a ready store for one
// subtest; the suite closes it when the subtest ends (Close must therefore
// tolerate a second call if open also registers one).
func Run(t *testing.T, open func(t *testing.T) persistence.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s persistence.Store)
	}{
		{"CreateAndClaim", testCreateAndClaim},
		{"NotFound", testNotFound},
		{"AppendAndRecover", testAppendAndRecover},
		{"SnapshotAndTail", testSnapshotAndTail},
		{"ReadLog", testReadLog},
		{"SnapshotSeqRules", testSnapshotSeqRules},
		{"AppendSeqRules", testAppendSeqRules},
		{"Fencing", testFencing},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ConcurrentAppendsOneSeq", testConcurrentAppendsOneSeq},
		{"AppendRacingClaim", testAppendRacingClaim},
		{"ConcurrentMatches", testConcurrentMatches},
		{"Finished", testFinished},
		{"ListUnfinishedPaging", testListUnfinishedPaging},
		{"Tickets", testTickets},
		{"TicketsConcurrent", testTicketsConcurrent},
		{"Payloads", testPayloads},
		{"InvalidArguments", testInvalidArguments},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		runClosing(t, tc.name, open, tc.fn)
	}
}

// runClosing runs fn in a parallel subtest on a store from open, closed
// when the subtest ends.
func runClosing[S interface{ Close() error }](t *testing.T, name string, open func(t *testing.T) S, fn func(t *testing.T, s S)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		fn(t, s)
	})
}

// RunReopen checks that a store keeps everything across Close and a new
// open. newData prepares empty durable data for one test and returns a
// function that opens a store on it; it is called again after the previous
// store was closed.
func RunReopen(t *testing.T, newData func(t *testing.T) (open func() (persistence.Store, error))) {
	t.Helper()
	open := newData(t)
	ctx := testContext(t)
	base := newID(t, "reopen")
	id, done := base+"-live", base+"-done"
	ticket := newID(t, "ticket")

	s1, err := open()
	if err != nil {
		t.Fatalf("first open: %v", err)
	}
	mustCreate(t, s1, id, []byte("meta-1"))
	mustCreate(t, s1, done, nil)
	rec := mustClaim(t, s1, id, "node-a")
	mustAppend(t, s1, id, rec.Epoch, entries(1, 3, "p")...)
	if err := s1.SaveSnapshot(ctx, id, rec.Epoch, persistence.Snapshot{Seq: 2, Data: []byte("snap-2")}); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	mustAppend(t, s1, id, rec.Epoch, entries(4, 4, "p")...)
	drec := mustClaim(t, s1, done, "node-a")
	if err := s1.MarkFinished(ctx, done, drec.Epoch); err != nil {
		t.Fatalf("mark finished: %v", err)
	}
	if err := s1.ConsumeTicket(ctx, ticket, time.Now().Add(time.Hour), "conn-1"); err != nil {
		t.Fatalf("consume ticket: %v", err)
	}
	keyPurpose, key := newID(t, "purpose"), []byte("kept-across-reopen")
	if ck, ok := s1.(persistence.ClusterKeys); ok {
		if err := ck.EnsureKey(ctx, keyPurpose, key); err != nil {
			t.Fatalf("ensure cluster key: %v", err)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s2, err := open()
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() {
		if err := s2.Close(); err != nil {
			t.Errorf("close reopened store: %v", err)
		}
	})
	rec2 := mustClaim(t, s2, id, "node-b")
	if rec2.Epoch != rec.Epoch+1 {
		t.Errorf("epoch after reopen = %d, want %d", rec2.Epoch, rec.Epoch+1)
	}
	if string(rec2.Meta) != "meta-1" {
		t.Errorf("meta after reopen = %q, want %q", rec2.Meta, "meta-1")
	}
	checkSnapshot(t, rec2, &persistence.Snapshot{Seq: 2, Data: []byte("snap-2")})
	checkTail(t, rec2, entries(3, 4, "p"))
	if err := s2.Append(ctx, id, rec.Epoch, entries(5, 5, "stale")); !errors.Is(err, persistence.ErrFenced) {
		t.Errorf("append with pre-reopen epoch: err = %v, want ErrFenced", err)
	}
	if err := s2.ConsumeTicket(ctx, ticket, time.Now().Add(time.Hour), "conn-2"); !errors.Is(err, persistence.ErrTicketUsed) {
		t.Errorf("ticket used before reopen: err = %v, want ErrTicketUsed", err)
	}
	if err := s2.ConsumeTicket(ctx, ticket, time.Now().Add(time.Hour), "conn-1"); err != nil {
		t.Errorf("ticket used before reopen, by the same consumer again: %v, want it accepted", err)
	}
	got := listWithPrefix(t, s2, base, 10)
	if want := []string{id}; !slices.Equal(got, want) {
		t.Errorf("unfinished after reopen = %v, want %v", got, want)
	}
	// The keys a node signed tickets and seat links with must outlive it.
	if ck, ok := s2.(persistence.ClusterKeys); ok {
		kr, err := ck.KeyRing(ctx, keyPurpose, time.Minute)
		if err != nil || !bytes.Equal(kr.Current.Secret, key) {
			t.Errorf("cluster key after reopen: err %v, same secret %v; want the key kept", err, err == nil && bytes.Equal(kr.Current.Secret, key))
		}
	}
}

func testCreateAndClaim(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, []byte("meta"))
	if err := s.CreateMatch(ctx, id, []byte("other")); !errors.Is(err, persistence.ErrMatchExists) {
		t.Fatalf("second CreateMatch: err = %v, want ErrMatchExists", err)
	}
	rec := mustClaim(t, s, id, "node-a")
	if rec.Epoch != 1 || string(rec.Meta) != "meta" || rec.Snapshot != nil || len(rec.Tail) != 0 || rec.Finished || rec.LastSeq() != 0 {
		t.Fatalf("first claim = %+v, want epoch 1, meta %q, no snapshot, empty tail, unfinished", rec, "meta")
	}
	rec = mustClaim(t, s, id, "node-b")
	if rec.Epoch != 2 || string(rec.Meta) != "meta" {
		t.Fatalf("second claim = %+v, want epoch 2 and the same meta", rec)
	}
	infos := list(t, s, id)
	if len(infos) != 1 || infos[0].Owner != "node-b" || infos[0].Epoch != 2 || infos[0].UpdatedAt.IsZero() {
		t.Fatalf("match info = %+v, want owner node-b, epoch 2, updated time set", infos)
	}
}

func testNotFound(t *testing.T, s persistence.Store) {
	id := newID(t, "missing")
	ops := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Claim", func(ctx context.Context) error { _, err := s.Claim(ctx, id, "n"); return err }},
		{"Append", func(ctx context.Context) error { return s.Append(ctx, id, 1, entries(1, 1, "p")) }},
		{"SaveSnapshot", func(ctx context.Context) error {
			return s.SaveSnapshot(ctx, id, 1, persistence.Snapshot{Seq: 0, Data: []byte("s")})
		}},
		{"MarkFinished", func(ctx context.Context) error { return s.MarkFinished(ctx, id, 1) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if err := op.call(testContext(t)); !errors.Is(err, persistence.ErrMatchNotFound) {
				t.Fatalf("err = %v, want ErrMatchNotFound", err)
			}
		})
	}
}

func testAppendAndRecover(t *testing.T, s persistence.Store) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 3, "p")...)
	mustAppend(t, s, id, rec.Epoch, entries(4, 4, "p")...)
	mustAppend(t, s, id, rec.Epoch, entries(5, 5, "p")...)
	rec2 := mustClaim(t, s, id, "b")
	if rec2.Epoch != rec.Epoch+1 {
		t.Errorf("epoch = %d, want %d", rec2.Epoch, rec.Epoch+1)
	}
	checkSnapshot(t, rec2, nil)
	checkTail(t, rec2, entries(1, 5, "p"))
	if rec2.LastSeq() != 5 {
		t.Errorf("LastSeq = %d, want 5", rec2.LastSeq())
	}
	// The new owner continues the log where the old one stopped.
	mustAppend(t, s, id, rec2.Epoch, entries(6, 6, "p")...)
	checkTail(t, mustClaim(t, s, id, "c"), entries(1, 6, "p"))
}

func testSnapshotAndTail(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 5, "p")...)
	snap3 := persistence.Snapshot{Seq: 3, Data: []byte("state-after-3")}
	if err := s.SaveSnapshot(ctx, id, rec.Epoch, snap3); err != nil {
		t.Fatalf("save snapshot 3: %v", err)
	}
	mustAppend(t, s, id, rec.Epoch, entries(6, 6, "p")...)

	rec = mustClaim(t, s, id, "b")
	checkSnapshot(t, rec, &snap3)
	checkTail(t, rec, entries(4, 6, "p"))
	if rec.LastSeq() != 6 {
		t.Errorf("LastSeq = %d, want 6", rec.LastSeq())
	}

	// A newer snapshot replaces the older one; the tail after it is empty.
	snap6 := persistence.Snapshot{Seq: 6, Data: []byte("state-after-6")}
	if err := s.SaveSnapshot(ctx, id, rec.Epoch, snap6); err != nil {
		t.Fatalf("save snapshot 6: %v", err)
	}
	rec = mustClaim(t, s, id, "c")
	checkSnapshot(t, rec, &snap6)
	checkTail(t, rec, nil)
	if rec.LastSeq() != 6 {
		t.Errorf("LastSeq = %d, want 6", rec.LastSeq())
	}

	// A snapshot of the initial state (seq 0) is legal too.
	other := newID(t, "zero")
	mustCreate(t, s, other, nil)
	orec := mustClaim(t, s, other, "a")
	snap0 := persistence.Snapshot{Seq: 0, Data: []byte("initial")}
	if err := s.SaveSnapshot(ctx, other, orec.Epoch, snap0); err != nil {
		t.Fatalf("save snapshot 0: %v", err)
	}
	mustAppend(t, s, other, orec.Epoch, entries(1, 2, "q")...)
	orec = mustClaim(t, s, other, "b")
	checkSnapshot(t, orec, &snap0)
	checkTail(t, orec, entries(1, 2, "q"))
}

// testReadLog: entries a snapshot covers stay readable (the grain rebuilds
// its event journal from them).
func testReadLog(t *testing.T, s persistence.Store) {
	r, ok := s.(persistence.LogReader)
	if !ok {
		t.Fatalf("%T does not implement persistence.LogReader", s)
	}
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 5, "p")...)
	if err := s.SaveSnapshot(ctx, id, rec.Epoch, persistence.Snapshot{Seq: 4, Data: []byte("s")}); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	for _, tc := range []struct {
		from, to int64
		want     []persistence.LogEntry
	}{
		{1, 4, entries(1, 4, "p")},
		{2, 9, entries(2, 5, "p")},
		{5, 5, entries(5, 5, "p")},
		{6, 9, nil},
	} {
		got, err := r.ReadLog(ctx, id, tc.from, tc.to)
		if err != nil {
			t.Fatalf("ReadLog %d..%d: %v", tc.from, tc.to, err)
		}
		if describe(got) != describe(tc.want) {
			t.Errorf("ReadLog %d..%d = %s, want %s", tc.from, tc.to, describe(got), describe(tc.want))
		}
	}
	if _, err := r.ReadLog(ctx, newID(t, "none"), 1, 3); !errors.Is(err, persistence.ErrMatchNotFound) {
		t.Errorf("ReadLog of an unknown match: %v, want ErrMatchNotFound", err)
	}
}

func testSnapshotSeqRules(t *testing.T, s persistence.Store) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 3, "p")...)
	good := persistence.Snapshot{Seq: 2, Data: []byte("good")}
	if err := s.SaveSnapshot(testContext(t), id, rec.Epoch, good); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	cases := []struct {
		name string
		seq  int64
	}{
		{"BeyondLog", 4},
		{"FarBeyondLog", 100},
		{"Negative", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.SaveSnapshot(testContext(t), id, rec.Epoch, persistence.Snapshot{Seq: tc.seq, Data: []byte("bad")})
			if !errors.Is(err, persistence.ErrSeqGap) {
				t.Fatalf("snapshot at seq %d: err = %v, want ErrSeqGap", tc.seq, err)
			}
		})
	}
	rec = mustClaim(t, s, id, "b")
	checkSnapshot(t, rec, &good)
	checkTail(t, rec, entries(3, 3, "p"))
}

func testAppendSeqRules(t *testing.T, s persistence.Store) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 3, "p")...)
	cases := []struct {
		name    string
		entries []persistence.LogEntry
		want    error
	}{
		{"Gap", entries(5, 5, "x"), persistence.ErrSeqGap},
		{"DuplicateLast", entries(3, 3, "x"), persistence.ErrFenced},
		{"DuplicateFirst", entries(1, 1, "x"), persistence.ErrFenced},
		{"OverlapIntoNew", entries(3, 4, "x"), persistence.ErrFenced},
		{"NotConsecutive", []persistence.LogEntry{{Seq: 4, Payload: []byte("x")}, {Seq: 6, Payload: []byte("x")}}, persistence.ErrSeqGap},
		{"Descending", []persistence.LogEntry{{Seq: 4, Payload: []byte("x")}, {Seq: 3, Payload: []byte("x")}}, persistence.ErrSeqGap},
		{"Zero", entries(0, 0, "x"), persistence.ErrSeqGap},
		{"Negative", []persistence.LogEntry{{Seq: -1}}, persistence.ErrSeqGap},
		{"Empty", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Append(testContext(t), id, rec.Epoch, tc.entries)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Nothing of the rejected appends landed, and the log continues at 4.
	mustAppend(t, s, id, rec.Epoch, entries(4, 4, "p")...)
	checkTail(t, mustClaim(t, s, id, "b"), entries(1, 4, "p"))
}

func testFencing(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	old := mustClaim(t, s, id, "old")
	mustAppend(t, s, id, old.Epoch, entries(1, 2, "old")...)
	cur := mustClaim(t, s, id, "new")
	if cur.Epoch <= old.Epoch {
		t.Fatalf("second claim epoch %d not above %d", cur.Epoch, old.Epoch)
	}

	writes := []struct {
		name string
		call func(ctx context.Context, epoch int64) error
	}{
		{"Append", func(ctx context.Context, epoch int64) error { return s.Append(ctx, id, epoch, entries(3, 3, "stale")) }},
		{"SaveSnapshot", func(ctx context.Context, epoch int64) error {
			return s.SaveSnapshot(ctx, id, epoch, persistence.Snapshot{Seq: 2, Data: []byte("stale")})
		}},
		{"MarkFinished", func(ctx context.Context, epoch int64) error { return s.MarkFinished(ctx, id, epoch) }},
	}
	epochs := []struct {
		name  string
		epoch int64
	}{
		{"OldEpoch", old.Epoch},
		{"NeverClaimedEpoch", cur.Epoch + 5},
		{"ZeroEpoch", 0},
	}
	for _, w := range writes {
		for _, e := range epochs {
			t.Run(w.name+"/"+e.name, func(t *testing.T) {
				if err := w.call(testContext(t), e.epoch); !errors.Is(err, persistence.ErrFenced) {
					t.Fatalf("err = %v, want ErrFenced", err)
				}
			})
		}
	}

	// Nothing the fenced writes tried is visible, and the current owner can
	// still write seq 3 itself.
	if got := list(t, s, id); len(got) != 1 {
		t.Fatalf("fenced MarkFinished finished the match: unfinished = %+v", got)
	}
	mustAppend(t, s, id, cur.Epoch, entries(3, 3, "new")...)
	rec := mustClaim(t, s, id, "check")
	checkSnapshot(t, rec, nil)
	checkTail(t, rec, append(entries(1, 2, "old"), entries(3, 3, "new")...))
	if rec.Finished {
		t.Fatal("fenced MarkFinished finished the match")
	}
	if err := s.Append(ctx, id, cur.Epoch, entries(4, 4, "new")); !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("append after a newer claim: err = %v, want ErrFenced", err)
	}
}

func testConcurrentClaims(t *testing.T, s persistence.Store) {
	const claimers = 8
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	epochs := make([]int64, claimers)
	errs := make([]error, claimers)
	parallel(claimers, func(i int) {
		rec, err := s.Claim(testContext(t), id, fmt.Sprintf("node-%d", i))
		epochs[i], errs[i] = rec.Epoch, err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claimer %d: %v", i, err)
		}
	}
	sorted := slices.Clone(epochs)
	slices.Sort(sorted)
	for i, e := range sorted {
		if e != int64(i+1) {
			t.Fatalf("claim epochs = %v, want each of 1..%d exactly once", sorted, claimers)
		}
	}

	// Every claimer now races to write seq 1: only the last epoch may.
	errs = make([]error, claimers)
	parallel(claimers, func(i int) {
		errs[i] = s.Append(testContext(t), id, epochs[i], entries(1, 1, fmt.Sprintf("epoch-%d", epochs[i])))
	})
	for i, err := range errs {
		switch {
		case epochs[i] == claimers && err != nil:
			t.Errorf("newest epoch %d: append failed: %v", epochs[i], err)
		case epochs[i] != claimers && !errors.Is(err, persistence.ErrFenced):
			t.Errorf("stale epoch %d: err = %v, want ErrFenced", epochs[i], err)
		}
	}
	checkTail(t, mustClaim(t, s, id, "check"), entries(1, 1, fmt.Sprintf("epoch-%d", claimers)))
}

func testConcurrentAppendsOneSeq(t *testing.T, s persistence.Store) {
	// Two writers holding the same epoch is a bug above the store, but even
	// then one seq is written once.
	const writers = 8
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	errs := make([]error, writers)
	parallel(writers, func(i int) {
		errs[i] = s.Append(testContext(t), id, rec.Epoch, entries(1, 1, fmt.Sprintf("w%d", i)))
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both appended seq 1", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, persistence.ErrFenced):
			t.Errorf("writer %d: err = %v, want ErrFenced", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer appended seq 1")
	}
	checkTail(t, mustClaim(t, s, id, "check"), entries(1, 1, fmt.Sprintf("w%d", winner)))
}

// testAppendRacingClaim lets an activation append as fast as it can while a
// second one claims: every append the first got acknowledged must be in the
// second's recovery, none may land after it, and the second continues the
// log without a hole or a double seq.
func testAppendRacingClaim(t *testing.T, s persistence.Store) {
	for round := range 3 {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			id := newID(t, "m")
			mustCreate(t, s, id, nil)
			a := mustClaim(t, s, id, "a")

			var acked atomic.Int64
			var lastErr error
			stopped := make(chan struct{})
			// The goroutine must not touch t: it may outlive a failed test.
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			go func() {
				defer close(stopped)
				for seq := int64(1); ; seq++ {
					if err := s.Append(ctx, id, a.Epoch, entries(seq, seq, "a")); err != nil {
						lastErr = err
						return
					}
					acked.Store(seq)
				}
			}()
			waitFor(t, func() bool { return acked.Load() >= 3 }, "first activation acknowledged 3 appends")

			b := mustClaim(t, s, id, "b")
			ackedAtClaim := acked.Load()
			// At most the one append in flight during the claim can still be
			// acknowledged; every later one must be refused.
			waitFor(t, func() bool {
				select {
				case <-stopped:
					return true
				default:
				}
				if n := acked.Load(); n > ackedAtClaim+1 {
					cancel()
					t.Fatalf("first activation got seqs %d..%d acknowledged after the second claimed", ackedAtClaim+1, n)
				}
				return false
			}, "first activation is fenced")
			if !errors.Is(lastErr, persistence.ErrFenced) {
				t.Fatalf("first activation stopped with %v, want ErrFenced", lastErr)
			}
			// The claim recovers every append acknowledged before it
			// returned, and the one in flight is in its log exactly when it
			// was acknowledged too.
			final := acked.Load()
			if b.LastSeq() < ackedAtClaim {
				t.Fatalf("second claim recovered up to seq %d, but %d were acknowledged when it returned", b.LastSeq(), ackedAtClaim)
			}
			if b.LastSeq() != final {
				t.Fatalf("second claim recovered up to seq %d; first activation had %d acknowledged (%d when the claim returned)",
					b.LastSeq(), final, ackedAtClaim)
			}
			checkTail(t, b, entries(1, final, "a"))
			mustAppend(t, s, id, b.Epoch, entries(final+1, final+1, "b")...)
			checkTail(t, mustClaim(t, s, id, "check"), append(entries(1, final, "a"), entries(final+1, final+1, "b")...))
		})
	}
}

func testConcurrentMatches(t *testing.T, s persistence.Store) {
	// Many matches appending at once (what group commit batches) each keep
	// their own log intact.
	const matches, perMatch = 24, 10
	ids := make([]string, matches)
	epochs := make([]int64, matches)
	for i := range ids {
		ids[i] = newID(t, fmt.Sprintf("m%02d", i))
		mustCreate(t, s, ids[i], nil)
		epochs[i] = mustClaim(t, s, ids[i], "a").Epoch
	}
	// Every other match gets fenced halfway through, so batches mix
	// accepted and refused appends.
	errs := make([]error, matches)
	parallel(matches, func(i int) {
		for seq := int64(1); seq <= perMatch; seq++ {
			if i%2 == 1 && seq == perMatch/2+1 {
				if _, err := s.Claim(testContext(t), ids[i], "thief"); err != nil {
					errs[i] = err
					return
				}
			}
			err := s.Append(testContext(t), ids[i], epochs[i], entries(seq, seq, ids[i]))
			if i%2 == 1 && seq > perMatch/2 {
				if !errors.Is(err, persistence.ErrFenced) {
					errs[i] = fmt.Errorf("append seq %d after being fenced: err = %v, want ErrFenced", seq, err)
					return
				}
				continue
			}
			if err != nil {
				errs[i] = fmt.Errorf("append seq %d: %w", seq, err)
				return
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("match %d: %v", i, err)
		}
	}
	for i, id := range ids {
		want := entries(1, perMatch, id)
		if i%2 == 1 {
			want = entries(1, perMatch/2, id)
		}
		checkTail(t, mustClaim(t, s, id, "check"), want)
	}
}

func testFinished(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	mustAppend(t, s, id, rec.Epoch, entries(1, 2, "p")...)
	if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
		t.Fatalf("mark finished: %v", err)
	}
	if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
		t.Fatalf("mark finished again: %v", err)
	}
	if got := list(t, s, id); len(got) != 0 {
		t.Fatalf("finished match still listed: %+v", got)
	}
	rec = mustClaim(t, s, id, "b")
	if !rec.Finished {
		t.Fatal("claim of a finished match: Finished = false")
	}
	checkTail(t, rec, entries(1, 2, "p"))
}

func testListUnfinishedPaging(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	prefix := newID(t, "page")
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		mustCreate(t, s, id, nil)
		if i%3 == 0 {
			continue // never claimed
		}
		rec := mustClaim(t, s, id, fmt.Sprintf("owner-%d", i))
		if i == 2 || i == 5 {
			if err := s.MarkFinished(ctx, id, rec.Epoch); err != nil {
				t.Fatalf("mark %s finished: %v", id, err)
			}
			continue
		}
	}
	for _, i := range []int{0, 1, 3, 4, 6} {
		want = append(want, fmt.Sprintf("%s-%d", prefix, i))
	}
	for _, limit := range []int{1, 2, 3, 100} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			if got := listWithPrefix(t, s, prefix, limit); !slices.Equal(got, want) {
				t.Fatalf("unfinished = %v, want %v", got, want)
			}
		})
	}
	infos := list(t, s, prefix+"-1")
	if len(infos) != 1 || infos[0].Owner != "owner-1" || infos[0].Epoch != 1 {
		t.Errorf("info of claimed match = %+v, want owner-1 at epoch 1", infos)
	}
	// Claimed moments ago: the age (the owner's lease) is small, not zero
	// by accident of a missing column and not negative.
	if len(infos) == 1 && (infos[0].Age < 0 || infos[0].Age > time.Minute) {
		t.Errorf("age of a match claimed just now = %v, want between 0 and a minute", infos[0].Age)
	}
	infos = list(t, s, prefix+"-0")
	if len(infos) != 1 || infos[0].Owner != "" || infos[0].Epoch != 0 {
		t.Errorf("info of unclaimed match = %+v, want no owner at epoch 0", infos)
	}
	// Ids page in byte order, whatever the backend's locale thinks of case,
	// punctuation or accents.
	order := newID(t, "order")
	var ordered []string
	for _, suffix := range []string{"-b", "-B", "-a", "-_", "-.", "-\u00e9", "-e", "-10", "-9", "- "} {
		mustCreate(t, s, order+suffix, nil)
		ordered = append(ordered, order+suffix)
	}
	slices.Sort(ordered)
	if got := listWithPrefix(t, s, order, 3); !slices.Equal(got, ordered) {
		t.Errorf("unfinished = %q, want byte order %q", got, ordered)
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.ListUnfinished(ctx, prefix, limit); err == nil {
			t.Errorf("ListUnfinished with limit %d: err = nil, want an error", limit)
		}
	}
}

func testTickets(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	valid, expired := newID(t, "valid"), newID(t, "expired")
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), "conn-a"); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), "conn-b"); !errors.Is(err, persistence.ErrTicketUsed) {
		t.Fatalf("second use by another consumer: err = %v, want ErrTicketUsed", err)
	}
	// The consuming connection's attach retried (its answer was lost): accepted.
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), "conn-a"); err != nil {
		t.Fatalf("second use by the same consumer: %v, want it accepted", err)
	}
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), ""); !errors.Is(err, persistence.ErrTicketUsed) {
		t.Fatalf("second use without a consumer: err = %v, want ErrTicketUsed", err)
	}
	// Without a consumer a ticket is single use even for its own caller.
	anon := newID(t, "anon")
	if err := s.ConsumeTicket(ctx, anon, time.Now().Add(time.Hour), ""); err != nil {
		t.Fatalf("first use without a consumer: %v", err)
	}
	if err := s.ConsumeTicket(ctx, anon, time.Now().Add(time.Hour), ""); !errors.Is(err, persistence.ErrTicketUsed) {
		t.Fatalf("second use without a consumer: err = %v, want ErrTicketUsed", err)
	}
	if err := s.ConsumeTicket(ctx, expired, time.Now().Add(-time.Hour), "conn-a"); err != nil {
		t.Fatalf("use of a ticket that expires in the past: %v", err)
	}
	n, err := s.PurgeTickets(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	if n < 1 {
		t.Errorf("purge removed %d tickets, want at least 1", n)
	}
	// The purged ticket is forgotten; the valid one is not.
	if err := s.ConsumeTicket(ctx, expired, time.Now().Add(-time.Hour), "conn-b"); err != nil {
		t.Errorf("use after purge: %v, want it forgotten", err)
	}
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), "conn-b"); !errors.Is(err, persistence.ErrTicketUsed) {
		t.Errorf("unexpired ticket after purge: err = %v, want ErrTicketUsed", err)
	}
	if err := s.ConsumeTicket(ctx, valid, time.Now().Add(time.Hour), "conn-a"); err != nil {
		t.Errorf("unexpired ticket after purge, same consumer: %v, want it accepted", err)
	}
}

func testTicketsConcurrent(t *testing.T, s persistence.Store) {
	const users = 32
	id := newID(t, "ticket")
	errs := make([]error, users)
	parallel(users, func(i int) {
		errs[i] = s.ConsumeTicket(testContext(t), id, time.Now().Add(time.Minute), fmt.Sprintf("conn-%d", i))
	})
	ok := 0
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
			winner = i
		case !errors.Is(err, persistence.ErrTicketUsed):
			t.Errorf("user %d: err = %v, want ErrTicketUsed", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent uses of one ticket succeeded, want exactly 1", ok, users)
	}
	// Only the winner may come back.
	for i := range users {
		err := s.ConsumeTicket(testContext(t), id, time.Now().Add(time.Minute), fmt.Sprintf("conn-%d", i))
		if i == winner && err != nil {
			t.Errorf("winner %d again: %v, want it accepted", i, err)
		}
		if i != winner && !errors.Is(err, persistence.ErrTicketUsed) {
			t.Errorf("loser %d again: err = %v, want ErrTicketUsed", i, err)
		}
	}
}

func testPayloads(t *testing.T, s persistence.Store) {
	big := make([]byte, 1<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		meta    []byte
		payload []byte
		snap    []byte
	}{
		{"Binary", []byte{0, 1, 0xff, 0}, []byte{0, 0, 0}, []byte{0xff, 0}},
		{"Empty", []byte{}, []byte{}, []byte{}},
		{"Nil", nil, nil, nil},
		{"Large", big[:1000], big, big},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			id := newID(t, "m")
			mustCreate(t, s, id, tc.meta)
			rec := mustClaim(t, s, id, "a")
			mustAppend(t, s, id, rec.Epoch, persistence.LogEntry{Seq: 1, Payload: tc.payload}, persistence.LogEntry{Seq: 2, Payload: tc.payload})
			if err := s.SaveSnapshot(ctx, id, rec.Epoch, persistence.Snapshot{Seq: 1, Data: tc.snap}); err != nil {
				t.Fatalf("save snapshot: %v", err)
			}
			rec = mustClaim(t, s, id, "b")
			if !bytes.Equal(rec.Meta, tc.meta) {
				t.Errorf("meta = %d bytes, want %d bytes equal", len(rec.Meta), len(tc.meta))
			}
			checkSnapshot(t, rec, &persistence.Snapshot{Seq: 1, Data: tc.snap})
			checkTail(t, rec, []persistence.LogEntry{{Seq: 2, Payload: tc.payload}})
		})
	}
}

func testInvalidArguments(t *testing.T, s persistence.Store) {
	long := strings.Repeat("x", persistence.MaxIDBytes+1)
	cases := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"CreateEmptyID", func(ctx context.Context) error { return s.CreateMatch(ctx, "", nil) }},
		{"CreateLongID", func(ctx context.Context) error { return s.CreateMatch(ctx, long, nil) }},
		{"ClaimEmptyID", func(ctx context.Context) error { _, err := s.Claim(ctx, "", "a"); return err }},
		{"AppendEmptyID", func(ctx context.Context) error { return s.Append(ctx, "", 1, entries(1, 1, "p")) }},
		{"TicketEmptyID", func(ctx context.Context) error { return s.ConsumeTicket(ctx, "", time.Now(), "c") }},
		{"TicketLongID", func(ctx context.Context) error { return s.ConsumeTicket(ctx, long, time.Now(), "c") }},
		{"TicketLongConsumer", func(ctx context.Context) error { return s.ConsumeTicket(ctx, "t", time.Now(), long) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(testContext(t)); err == nil {
				t.Fatal("err = nil, want an error")
			}
		})
	}
}

func testCancelledContext(t *testing.T, s persistence.Store) {
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, id, rec.Epoch, entries(1, 1, "p")); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := s.Claim(ctx, id, "b"); err == nil {
		t.Fatal("claim with a cancelled ctx: err = nil")
	}
	// The cancelled append wrote nothing: the owner still writes seq 1.
	rec2 := mustClaim(t, s, id, "c")
	checkTail(t, rec2, nil)
	mustAppend(t, s, id, rec2.Epoch, entries(1, 1, "p")...)
}

func testClosed(t *testing.T, s persistence.Store) {
	ctx := testContext(t)
	id := newID(t, "m")
	mustCreate(t, s, id, nil)
	rec := mustClaim(t, s, id, "a")
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Append(ctx, id, rec.Epoch, entries(1, 1, "p")); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("append after close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Claim(ctx, id, "b"); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("claim after close: err = %v, want ErrClosed", err)
	}
	if _, err := s.ListUnfinished(ctx, "", 1); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("list after close: err = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// entries returns log entries from..to with payloads "<prefix>-<seq>".
func entries(from, to int64, prefix string) []persistence.LogEntry {
	var out []persistence.LogEntry
	for seq := from; seq <= to; seq++ {
		out = append(out, persistence.LogEntry{Seq: seq, Payload: fmt.Appendf(nil, "%s-%d", prefix, seq)})
	}
	return out
}

// newID returns an id unique to this test run, readable in failures.
func newID(t *testing.T, kind string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random id: %v", err)
	}
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s.%s.%s", name, kind, hex.EncodeToString(b[:]))
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s persistence.Store, id string, meta []byte) {
	t.Helper()
	if err := s.CreateMatch(testContext(t), id, meta); err != nil {
		t.Fatalf("create match %s: %v", id, err)
	}
}

func mustClaim(t *testing.T, s persistence.Store, id, owner string) persistence.Recovery {
	t.Helper()
	rec, err := s.Claim(testContext(t), id, owner)
	if err != nil {
		t.Fatalf("claim %s as %s: %v", id, owner, err)
	}
	return rec
}

func mustAppend(t *testing.T, s persistence.Store, id string, epoch int64, es ...persistence.LogEntry) {
	t.Helper()
	if err := s.Append(testContext(t), id, epoch, es); err != nil {
		t.Fatalf("append seq %d.. to %s at epoch %d: %v", es[0].Seq, id, epoch, err)
	}
}

func checkTail(t *testing.T, rec persistence.Recovery, want []persistence.LogEntry) {
	t.Helper()
	if len(rec.Tail) != len(want) {
		t.Fatalf("tail has %d entries (%s), want %d (%s)", len(rec.Tail), describe(rec.Tail), len(want), describe(want))
	}
	for i := range want {
		if rec.Tail[i].Seq != want[i].Seq || !bytes.Equal(rec.Tail[i].Payload, want[i].Payload) {
			t.Fatalf("tail = %s, want %s", describe(rec.Tail), describe(want))
		}
	}
}

func describe(es []persistence.LogEntry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString(" ")
		}
		if len(e.Payload) > 32 {
			fmt.Fprintf(&b, "%d:<%d bytes>", e.Seq, len(e.Payload))
		} else {
			fmt.Fprintf(&b, "%d:%q", e.Seq, e.Payload)
		}
	}
	return "[" + b.String() + "]"
}

func checkSnapshot(t *testing.T, rec persistence.Recovery, want *persistence.Snapshot) {
	t.Helper()
	switch {
	case want == nil && rec.Snapshot != nil:
		t.Fatalf("snapshot at seq %d, want none", rec.Snapshot.Seq)
	case want == nil:
	case rec.Snapshot == nil:
		t.Fatalf("no snapshot, want one at seq %d", want.Seq)
	case rec.Snapshot.Seq != want.Seq || !bytes.Equal(rec.Snapshot.Data, want.Data):
		t.Fatalf("snapshot at seq %d with %d bytes, want seq %d with %d bytes equal",
			rec.Snapshot.Seq, len(rec.Snapshot.Data), want.Seq, len(want.Data))
	}
}

// list returns the unfinished-match info of exactly id (empty if finished).
func list(t *testing.T, s persistence.Store, id string) []persistence.MatchInfo {
	t.Helper()
	// The id just before ours cannot be named, but id minus its last byte
	// sorts before it, and only ids sharing that prefix lie in between.
	infos, err := s.ListUnfinished(testContext(t), id[:len(id)-1], 32)
	if err != nil {
		t.Fatalf("list unfinished: %v", err)
	}
	var out []persistence.MatchInfo
	for _, in := range infos {
		if in.MatchID == id {
			out = append(out, in)
		}
	}
	return out
}

// listWithPrefix pages through unfinished matches with the given prefix.
// Ids with a common prefix are contiguous in id order, and the prefix itself
// sorts before all of them, so paging starts right there.
func listWithPrefix(t *testing.T, s persistence.Store, prefix string, limit int) []string {
	t.Helper()
	var out []string
	after := prefix
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("paging with limit %d does not end", limit)
		}
		infos, err := s.ListUnfinished(testContext(t), after, limit)
		if err != nil {
			t.Fatalf("list unfinished after %q: %v", after, err)
		}
		if len(infos) > limit {
			t.Fatalf("page has %d entries, limit %d", len(infos), limit)
		}
		for _, in := range infos {
			if in.MatchID <= after {
				t.Fatalf("page after %q returned %q: not ascending", after, in.MatchID)
			}
			if !strings.HasPrefix(in.MatchID, prefix) {
				return out
			}
			out = append(out, in.MatchID)
			after = in.MatchID
		}
		if len(infos) < limit {
			return out
		}
	}
}

// parallel runs fn(0..n-1) on n goroutines released at once.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// waitFor polls cond until it holds or the suite's timeout passes.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", Timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}
