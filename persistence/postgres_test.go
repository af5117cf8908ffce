package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/internal/sockio"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/persistence/storetest"
)

// TestPGConformance runs the suite with the default options (group commit
// on) and with every append sent alone.
func TestPGConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) persistence.Store { return pgtest.NewStore(t) })
}

func TestPGConformanceDirect(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return pgtest.NewStore(t, persistence.WithoutGroupCommit())
	})
}

// TestPGConformanceSmallBatches makes batches split often.
func TestPGConformanceSmallBatches(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return pgtest.NewStore(t, persistence.WithMaxConns(8),
			persistence.WithGroupCommit(persistence.GroupCommitConfig{MaxBatch: 3, Writers: 2}))
	})
}

func TestPGReopen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []persistence.PostgresOption
	}{
		{"Default", nil},
		{"Direct", []persistence.PostgresOption{persistence.WithoutGroupCommit()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunReopen(t, func(t *testing.T) func() (persistence.Store, error) {
				schema := pgtest.NewSchema(t)
				return func() (persistence.Store, error) {
					opts := append([]persistence.PostgresOption{persistence.WithSchema(schema), quiet()}, tc.opts...)
					return persistence.OpenPostgres(testContext(t), pgtest.URL(t), opts...)
				}
			})
		})
	}
}

// TestPGMigrationsConcurrent starts several stores on one fresh schema at
// once, as nodes of a cluster do: all must come up, and each migration must
// be recorded once.
func TestPGMigrationsConcurrent(t *testing.T) {
	t.Parallel()
	const nodes = 6
	schema := pgtest.NewSchema(t)
	stores := make([]*persistence.PostgresStore, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			stores[i], errs[i] = persistence.OpenPostgres(testContext(t), pgtest.URL(t), persistence.WithSchema(schema), quiet())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: open: %v", i, err)
		}
		t.Cleanup(func() {
			if err := stores[i].Close(); err != nil {
				t.Errorf("close node %d: %v", i, err)
			}
		})
	}
	var versions, distinct int
	err := stores[0].Pool().QueryRow(testContext(t),
		"SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&versions, &distinct)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if versions == 0 || versions != distinct {
		t.Fatalf("schema_migrations has %d rows for %d versions, want each version once", versions, distinct)
	}
	// Every node sees the same tables.
	for i, s := range stores {
		id := fmt.Sprintf("node-%d-match", i)
		if err := s.CreateMatch(testContext(t), id, nil); err != nil {
			t.Fatalf("node %d: create match: %v", i, err)
		}
	}
}

// TestPGOpenErrors checks the start-up failures a deployment meets first,
// and that the connection string's password never appears in an error.
func TestPGOpenErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		url  string
		opts []persistence.PostgresOption
	}{
		{"Unparsable", "postgres://user:s3cret@127.0.0.1:notaport/db", nil},
		{"Unreachable", "postgres://user:s3cret@127.0.0.1:1/db?connect_timeout=2", nil},
		{"TooFewConnsForGroupCommit", pgtest.URL(t), []persistence.PostgresOption{persistence.WithMaxConns(2),
			persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 2})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := persistence.OpenPostgres(testContext(t), tc.url, tc.opts...)
			if err == nil {
				_ = s.Close() // the test already failed; the close result adds nothing
				t.Fatal("open succeeded, want an error")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

// TestPGGroupCommitBatches drives one writer with many matches at once, so
// that appends really share statements, and mixes in refused appends of
// every kind: each caller must get its own answer.
func TestPGGroupCommitBatches(t *testing.T) {
	t.Parallel()
	var timed, untimed atomic.Int64
	s := pgtest.NewStore(t, persistence.WithMaxConns(4),
		persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 1, MaxBatch: 64}),
		persistence.WithStatementObserver(func(d time.Duration) {
			timed.Add(1)
			if d <= 0 {
				untimed.Add(1)
			}
		}))
	const matches = 60
	type match struct {
		id    string
		epoch int64
	}
	ms := make([]match, matches)
	for i := range ms {
		ms[i].id = fmt.Sprintf("gc-%02d", i)
		if err := s.CreateMatch(testContext(t), ms[i].id, nil); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(testContext(t), ms[i].id, "a")
		if err != nil {
			t.Fatal(err)
		}
		ms[i].epoch = rec.Epoch
		if err := s.Append(testContext(t), ms[i].id, rec.Epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	// i%4: 0 ok (two entries), 1 stale epoch, 2 seq taken, 3 gap.
	want := []error{nil, persistence.ErrFenced, persistence.ErrFenced, persistence.ErrSeqGap}
	errs := make([]error, matches)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, m := range ms {
		wg.Go(func() {
			<-start
			epoch, es := m.epoch, []persistence.LogEntry{{Seq: 2, Payload: []byte("y")}, {Seq: 3, Payload: []byte("z")}}
			switch i % 4 {
			case 1:
				epoch--
			case 2:
				es = []persistence.LogEntry{{Seq: 1, Payload: []byte("dup")}}
			case 3:
				es = []persistence.LogEntry{{Seq: 5, Payload: []byte("gap")}}
			}
			errs[i] = s.Append(testContext(t), m.id, epoch, es)
		})
	}
	close(start)
	wg.Wait()
	st := s.GroupCommitStats()
	if st.Batches == 0 || st.Appends <= st.Batches {
		t.Errorf("group commit stats %+v: no batch carried more than one append", st)
	}
	// Every statement was answered, so each reported its time.
	if n := timed.Load(); n != int64(st.Batches) || untimed.Load() != 0 {
		t.Errorf("%d statement times (%d not positive) for %d batches, want one each", n, untimed.Load(), st.Batches)
	}
	for i, m := range ms {
		if !errors.Is(errs[i], want[i%4]) {
			t.Errorf("match %s (case %d): err = %v, want %v", m.id, i%4, errs[i], want[i%4])
		}
		rec, err := s.Claim(testContext(t), m.id, "check")
		if err != nil {
			t.Fatal(err)
		}
		wantLast := int64(1)
		if i%4 == 0 {
			wantLast = 3
		}
		if rec.LastSeq() != wantLast {
			t.Errorf("match %s (case %d): last seq %d, want %d", m.id, i%4, rec.LastSeq(), wantLast)
		}
	}
}

// TestPGGroupCommitDefault checks that group commit is on by default, and
// off when the pool is too small to spare a connection for it.
func TestPGGroupCommitDefault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		url       string
		wantGroup bool
	}{
		{"DefaultPool", pgtest.URL(t), true},
		{"OneConnection", pgtest.URL(t) + "&pool_max_conns=1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := persistence.OpenPostgres(testContext(t), tc.url, persistence.WithSchema(pgtest.NewSchema(t)), quiet())
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			if err := s.CreateMatch(testContext(t), "m", nil); err != nil {
				t.Fatal(err)
			}
			rec, err := s.Claim(testContext(t), "m", "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(testContext(t), "m", rec.Epoch, []persistence.LogEntry{{Seq: 1}}); err != nil {
				t.Fatal(err)
			}
			if got := s.GroupCommitStats().Appends > 0; got != tc.wantGroup {
				t.Fatalf("append went through group commit: %v, want %v", got, tc.wantGroup)
			}
		})
	}
}

// TestPGGroupCommitClose: Close fails the appends queued behind a batch in
// flight with ErrClosed at once, instead of leaving their callers hanging,
// and lets the batch in flight finish. The batch is held in flight by a row
// lock on its match taken through the store's own pool.
func TestPGGroupCommitClose(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t, persistence.WithMaxConns(4),
		persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 1, Timeout: storetest.Timeout}))
	ctx := testContext(t)
	var epochs [2]int64
	for i, id := range []string{"m", "n"} {
		if err := s.CreateMatch(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, id, "a")
		if err != nil {
			t.Fatal(err)
		}
		epochs[i] = rec.Epoch
	}
	// Every fenced append updates its match's row: holding that row's lock
	// keeps the one writer's batch in flight.
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM matches WHERE match_id = 'm' FOR UPDATE"); err != nil {
		t.Fatalf("lock row: %v", err)
	}
	inflight := make(chan error, 1)
	go func() { inflight <- s.Append(ctx, "m", epochs[0], []persistence.LogEntry{{Seq: 1}}) }()
	for deadline := time.Now().Add(storetest.Timeout); s.GroupCommitStats().Batches != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d batches sent after %v, want the locked one", s.GroupCommitStats().Batches, storetest.Timeout)
		}
	}

	// Queued behind it: the one writer is busy (and "m" is in flight).
	const queued = 10
	errs := make(chan error, queued)
	for i := range queued {
		id, ep, seq := "n", epochs[1], int64(i/2+1)
		if i%2 == 0 {
			id, ep, seq = "m", epochs[0], int64(i/2+2)
		}
		go func() { errs <- s.Append(ctx, id, ep, []persistence.LogEntry{{Seq: seq}}) }()
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()

	// Every queued append is answered ErrClosed while the batch ahead of
	// it is still stuck on the lock: Close failed it, nothing flushed it.
	for range queued {
		select {
		case err := <-errs:
			if !errors.Is(err, persistence.ErrClosed) {
				t.Fatalf("queued append: err = %v, want ErrClosed", err)
			}
		case <-time.After(storetest.Timeout):
			t.Fatal("a queued append is still waiting after Close was called")
		}
	}
	select {
	case err := <-inflight:
		t.Fatalf("the locked batch returned (%v) before its row lock was released", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("unlock row: %v", err)
	}
	// Close waits for the batch in flight, which then commits.
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(storetest.Timeout):
		t.Fatal("Close did not return after the batch in flight could finish")
	}
	select {
	case err := <-inflight:
		if err != nil {
			t.Fatalf("the batch in flight at Close: err = %v, want committed", err)
		}
	case <-time.After(storetest.Timeout):
		t.Fatal("the batch in flight at Close never answered")
	}
	if err := s.Append(ctx, "m", epochs[0], []persistence.LogEntry{{Seq: 100}}); !errors.Is(err, persistence.ErrClosed) {
		t.Fatalf("append after close: err = %v, want ErrClosed", err)
	}
}

// quiet drops the store's logs (migration notices) from test output.
func quiet() persistence.PostgresOption {
	return persistence.WithLogger(slog.New(slog.DiscardHandler))
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), storetest.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// TestPGAppendRefusalsAlike sends the same appends, refused for every
// reason and accepted, through each statement form: alone with one entry
// (scalar parameters) or two (arrays), and in group-commit batches of
// one-entry appends, of two-entry appends and of both mixed. Every form
// must give the same answer with the same explanation, and write exactly
// the accepted entries.
func TestPGAppendRefusalsAlike(t *testing.T) {
	t.Parallel()
	direct := pgtest.NewStore(t, persistence.WithoutGroupCommit())
	group := pgtest.NewStore(t, persistence.WithMaxConns(4),
		persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 1}))
	ctx := testContext(t)
	// Every existing match is claimed twice (epoch 2) and holds seqs 1..3.
	cases := []struct {
		name     string
		want     error
		epoch    int64
		first    int64
		noMatch  bool
		appended bool
	}{
		{name: "Appended", epoch: 2, first: 4, appended: true},
		{name: "StaleEpoch", want: persistence.ErrFenced, epoch: 1, first: 4},
		{name: "SeqTaken", want: persistence.ErrFenced, epoch: 2, first: 3},
		{name: "SeqGap", want: persistence.ErrSeqGap, epoch: 2, first: 6},
		{name: "NotFound", want: persistence.ErrMatchNotFound, epoch: 2, first: 4, noMatch: true},
	}
	type attempt struct {
		form    string
		c       int // index into cases
		entries int
		id      string
	}
	newAttempt := func(s *persistence.PostgresStore, form string, c, entries int) attempt {
		a := attempt{form: form, c: c, entries: entries, id: fmt.Sprintf("%s-%s-%d", form, cases[c].name, entries)}
		if cases[c].noMatch {
			return a
		}
		if err := s.CreateMatch(ctx, a.id, nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := s.Claim(ctx, a.id, "a"); err != nil {
				t.Fatal(err)
			}
		}
		old := []persistence.LogEntry{{Seq: 1, Payload: []byte("old")}, {Seq: 2, Payload: []byte("old")}, {Seq: 3, Payload: []byte("old")}}
		if err := s.Append(ctx, a.id, 2, old); err != nil {
			t.Fatal(err)
		}
		return a
	}
	entriesOf := func(a attempt) []persistence.LogEntry {
		es := make([]persistence.LogEntry, a.entries)
		for i := range es {
			seq := cases[a.c].first + int64(i)
			es[i] = persistence.LogEntry{Seq: seq, Payload: fmt.Appendf(nil, "%s-%d", a.id, seq)}
		}
		return es
	}

	var attempts []attempt
	var errs []error
	stores := map[string]*persistence.PostgresStore{}
	// Alone: one statement per append.
	for c := range cases {
		for _, n := range []int{1, 2} {
			a := newAttempt(direct, "direct", c, n)
			attempts, stores[a.id] = append(attempts, a), direct
			errs = append(errs, direct.Append(ctx, a.id, cases[c].epoch, entriesOf(a)))
		}
	}
	// Batches: every case in one statement, one entry each, two each, and
	// one and two entries side by side.
	for _, b := range []struct {
		form    string
		entries []int
	}{{"group-one", []int{1}}, {"group-two", []int{2}}, {"group-mixed", []int{1, 2}}} {
		var batch []persistence.BatchAppend
		for c := range cases {
			for _, n := range b.entries {
				a := newAttempt(group, b.form, c, n)
				attempts, stores[a.id] = append(attempts, a), group
				batch = append(batch, persistence.BatchAppend{MatchID: a.id, Epoch: cases[c].epoch, Entries: entriesOf(a)})
			}
		}
		errs = append(errs, persistence.FlushBatch(ctx, group, batch)...)
	}

	explained := make(map[int]string) // case -> explanation, match id masked
	for i, a := range attempts {
		tc, err := cases[a.c], errs[i]
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: err = %v, want nil", a.id, err)
			}
		} else {
			if !errors.Is(err, tc.want) {
				t.Errorf("%s: err = %v, want %v", a.id, err, tc.want)
				continue
			}
			msg := strings.ReplaceAll(err.Error(), a.id, "ID")
			if first, ok := explained[a.c]; !ok {
				explained[a.c] = msg
			} else if msg != first {
				t.Errorf("%s: explained as %q, other forms say %q", a.id, msg, first)
			}
		}
		if tc.noMatch {
			continue
		}
		got, err := stores[a.id].ReadLog(ctx, a.id, 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := 3
		if tc.appended {
			want += a.entries
		}
		if len(got) != want {
			t.Errorf("%s: log has %d entries, want %d", a.id, len(got), want)
			continue
		}
		for _, e := range got[3:] {
			if p := fmt.Sprintf("%s-%d", a.id, e.Seq); string(e.Payload) != p {
				t.Errorf("%s: entry %d is %q, want %q", a.id, e.Seq, e.Payload, p)
			}
		}
		if tc.appended {
			rec, err := stores[a.id].Claim(ctx, a.id, "check")
			if err != nil {
				t.Fatal(err)
			}
			if rec.LastSeq() != int64(want) {
				t.Errorf("%s: last seq %d after reclaim, want %d", a.id, rec.LastSeq(), want)
			}
		}
	}
}

// TestPGAppendStatementLost: the append path prepares its statements once
// per connection. If one disappears from the server (DEALLOCATE), an
// append fails with an error that is no sentinel (nothing was written, but
// the caller cannot know), and the next one prepares it again. A group
// batch that loses its statement is retried one append at a time, so its
// appends succeed.
func TestPGAppendStatementLost(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	deallocate := func(s *persistence.PostgresStore, name string) {
		for _, c := range s.Pool().AcquireAllIdle(ctx) {
			// Below pgx.Conn, which keeps believing the statement exists.
			_, err := c.Conn().PgConn().Exec(ctx, "DEALLOCATE "+name).ReadAll()
			c.Release()
			if err != nil {
				t.Fatalf("deallocate %s: %v", name, err)
			}
		}
	}
	t.Run("Direct", func(t *testing.T) {
		s := pgtest.NewStore(t, persistence.WithMaxConns(1))
		if err := s.CreateMatch(ctx, "m", nil); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, "m", "a")
		if err != nil {
			t.Fatal(err)
		}
		seq := int64(0)
		for _, stmt := range []struct {
			name    string
			entries int
		}{{persistence.AppendOneStatement, 1}, {persistence.AppendManyStatement, 2}} {
			next := func() []persistence.LogEntry {
				es := make([]persistence.LogEntry, stmt.entries)
				for i := range es {
					es[i] = persistence.LogEntry{Seq: seq + 1 + int64(i), Payload: []byte("x")}
				}
				return es
			}
			if err := s.Append(ctx, "m", rec.Epoch, next()); err != nil {
				t.Fatal(err)
			}
			seq += int64(stmt.entries)
			deallocate(s, stmt.name)
			err := s.Append(ctx, "m", rec.Epoch, next())
			if err == nil || errors.Is(err, persistence.ErrFenced) || errors.Is(err, persistence.ErrSeqGap) {
				t.Fatalf("%s: append without its statement: err = %v, want a non-sentinel error", stmt.name, err)
			}
			if err := s.Append(ctx, "m", rec.Epoch, next()); err != nil {
				t.Fatalf("%s: append after the statement was lost: %v", stmt.name, err)
			}
			seq += int64(stmt.entries)
		}
		got, err := s.ReadLog(ctx, "m", 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != seq {
			t.Fatalf("log has %d entries, want %d", len(got), seq)
		}
	})
	t.Run("Group", func(t *testing.T) {
		s := pgtest.NewStore(t, persistence.WithMaxConns(2),
			persistence.WithGroupCommit(persistence.GroupCommitConfig{Writers: 1}))
		batch := make([]persistence.BatchAppend, 2)
		for i := range batch {
			id := fmt.Sprintf("g%d", i)
			if err := s.CreateMatch(ctx, id, nil); err != nil {
				t.Fatal(err)
			}
			rec, err := s.Claim(ctx, id, "a")
			if err != nil {
				t.Fatal(err)
			}
			batch[i] = persistence.BatchAppend{MatchID: id, Epoch: rec.Epoch}
		}
		flush := func(seq int64) {
			t.Helper()
			for i := range batch {
				batch[i].Entries = []persistence.LogEntry{{Seq: seq, Payload: []byte("x")}}
			}
			for i, err := range persistence.FlushBatch(ctx, s, batch) {
				if err != nil {
					t.Fatalf("seq %d, append %d: %v", seq, i, err)
				}
			}
		}
		flush(1)
		deallocate(s, persistence.GroupAppendOneStatement)
		retries := s.GroupCommitStats().Retries
		flush(2)
		if got := s.GroupCommitStats().Retries; got != retries+1 {
			t.Fatalf("retries %d, want %d: the batch without its statement was not retried alone", got, retries+1)
		}
		flush(3)
		if got := s.GroupCommitStats().Retries; got != retries+1 {
			t.Fatalf("retries %d, want %d: the statement was not prepared again", got, retries+1)
		}
	})
}

// TestPGConnsAreRaw: the store's connections to PostgreSQL read and write
// through package sockio on Linux, as the edge's client connections do
// (docs/performance.md says what that saves).
func TestPGConnsAreRaw(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got, want := sockio.Raw(c.Conn().PgConn().Conn()), runtime.GOOS == "linux"; got != want {
		t.Fatalf("store connection raw: %v, want %v on %s", got, want, runtime.GOOS)
	}
}

func TestPGInspector(t *testing.T) {
	t.Parallel()
	storetest.RunInspector(t, func(t *testing.T) storetest.InspectingStore { return pgtest.NewStore(t) })
}
