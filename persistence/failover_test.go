package persistence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// The tests here cut an append's session in PostgreSQL itself
// (pg_terminate_backend, what a shutdown or a failover does to every
// session) at the two moments that matter: before its statement committed,
// and after it committed locally while it waited for a synchronous standby.
// In both, Append must answer what happened instead of an unknown outcome.

// appName gives a store's sessions a name of their own, so that the test
// finds them in pg_stat_activity among other tests' sessions.
func appName(t *testing.T) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "failover_" + hex.EncodeToString(b[:])
}

func withAppName(url, name string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "application_name=" + name
}

// openNamed opens a store in a fresh schema of the server at url whose
// sessions are named name.
func openNamed(t *testing.T, url, name string, opts ...persistence.PostgresOption) *persistence.PostgresStore {
	t.Helper()
	base := []persistence.PostgresOption{persistence.WithSchema(pgtest.NewSchemaAt(t, url)), quiet()}
	s, err := persistence.OpenPostgres(testContext(t), withAppName(url, name), append(base, opts...)...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitingBackend polls until a session named app other than except waits on
// waitEvent and returns its pid.
func waitingBackend(t *testing.T, conn *pgx.Conn, app, waitEvent string, except int32) int32 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var pid int32
		err := conn.QueryRow(testContext(t), `SELECT pid FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event = $2 AND pid <> $3 LIMIT 1`, app, waitEvent, except).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no session %s waiting on %s within 30 s", app, waitEvent)
	return 0
}

// waitSyncRepActive waits until a commit on the server at url waits for a
// synchronous standby. Every session reads synchronous_standby_names at its
// next statement, but commits wait only once the checkpointer has read it
// too, a moment later on a busy machine: until then an append would commit
// without waiting, and the test would wait for nothing. So a probe commits
// until one waits (its wait is then cancelled: it committed locally, and
// wrote only a temporary table).
func waitSyncRepActive(t *testing.T, url string, admin *pgx.Conn) {
	t.Helper()
	app := appName(t)
	probe := connect(t, withAppName(url, app))
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		tx, err := probe.Begin(testContext(t))
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		// Only a transaction that wrote to the write-ahead log waits at its
		// commit: a temporary table's catalog rows are logged.
		if _, err := tx.Exec(testContext(t), fmt.Sprintf("CREATE TEMP TABLE syncrep_probe_%d ()", i)); err != nil {
			t.Fatalf("probe: %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- tx.Commit(testContext(t)) }()
		if pid, ok := syncRepWaiter(t, admin, app, done); ok {
			if _, err := admin.Exec(testContext(t), "SELECT pg_cancel_backend($1)", pid); err != nil {
				t.Fatalf("cancel the probe's wait: %v", err)
			}
			<-done // a cancelled wait still commits (with a warning)
			return
		}
		<-done // committed without waiting: not in force yet
	}
	t.Fatal("no commit waited for the synchronous standby within 30 s")
}

// syncRepWaiter polls, for up to a second or until done has an answer,
// for the session named app waiting on SyncRep.
func syncRepWaiter(t *testing.T, admin *pgx.Conn, app string, done <-chan error) (int32, bool) {
	t.Helper()
	for start := time.Now(); time.Since(start) < time.Second && len(done) == 0; time.Sleep(5 * time.Millisecond) {
		var pid int32
		err := admin.QueryRow(testContext(t), `SELECT pid FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event = 'SyncRep'`, app).Scan(&pid)
		if err == nil {
			return pid, true
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
	}
	return 0, false
}

func terminate(t *testing.T, conn *pgx.Conn, pid int32) {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(testContext(t), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(testContext(t), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// claimed creates a match, claims it and returns its epoch.
func claimed(t *testing.T, s persistence.Store, id string) int64 {
	t.Helper()
	ctx := testContext(t)
	if err := s.CreateMatch(ctx, id, []byte("meta")); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Claim(ctx, id, "owner")
	if err != nil {
		t.Fatal(err)
	}
	return rec.Epoch
}

// logOf returns the match's log as "seq:epoch:payload" strings.
func logOf(t *testing.T, conn *pgx.Conn, schema, id string) []string {
	t.Helper()
	rows, err := conn.Query(testContext(t), fmt.Sprintf("SELECT seq, epoch, payload FROM %s.match_log WHERE match_id = $1 ORDER BY seq",
		pgx.Identifier{schema}.Sanitize()), id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var seq, epoch int64
		var p []byte
		err := r.Scan(&seq, &epoch, &p)
		return fmt.Sprintf("%d:%d:%s", seq, epoch, p), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// schemaOf reads the schema a store's sessions use.
func schemaOf(t *testing.T, s *persistence.PostgresStore) string {
	t.Helper()
	var schema string
	if err := s.Pool().QueryRow(testContext(t), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

var failoverModes = []struct {
	name string
	opts []persistence.PostgresOption
}{
	{"GroupCommit", nil},
	{"Direct", []persistence.PostgresOption{persistence.WithoutGroupCommit()}},
}

// TestPGAppendSessionCutBeforeCommit: the append waits on the match row
// (another session holds it) when its session is terminated. Append retries
// on a new session and commits the entry once; if a newer claim took the
// match meanwhile, it answers ErrFenced.
func TestPGAppendSessionCutBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, mode := range failoverModes {
		for _, newClaim := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/newClaim=%v", mode.name, newClaim), func(t *testing.T) {
				t.Parallel()
				url, app := pgtest.URL(t), appName(t)
				s := openNamed(t, url, app, mode.opts...)
				admin := connect(t, url)
				schema := schemaOf(t, s)
				epoch := claimed(t, s, "m1")

				locker, err := connect(t, url).Begin(testContext(t))
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = locker.Rollback(context.Background()) }()
				tbl := pgx.Identifier{schema, "matches"}.Sanitize()
				if _, err := locker.Exec(testContext(t), "SELECT 1 FROM "+tbl+" WHERE match_id = 'm1' FOR UPDATE"); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					done <- s.Append(testContext(t), "m1", epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte("first")}})
				}()
				terminate(t, admin, waitingBackend(t, admin, app, "transactionid", 0))
				if newClaim {
					// What a Claim does, in the session that holds the row.
					if _, err := locker.Exec(testContext(t), "UPDATE "+tbl+" SET epoch = epoch + 1 WHERE match_id = 'm1'"); err != nil {
						t.Fatal(err)
					}
				}
				if err := locker.Commit(testContext(t)); err != nil {
					t.Fatal(err)
				}
				err = <-done
				got := logOf(t, admin, schema, "m1")
				if newClaim {
					if !errors.Is(err, persistence.ErrFenced) || len(got) != 0 {
						t.Fatalf("append cut, then fenced by a newer claim: err %v, log %v; want ErrFenced and an empty log", err, got)
					}
				} else if err != nil || len(got) != 1 || got[0] != fmt.Sprintf("1:%d:first", epoch) {
					t.Fatalf("append cut before commit: err %v, log %v; want nil and the entry once", err, got)
				}
				if n := s.UnknownOutcomes(); n != 1 {
					t.Fatalf("UnknownOutcomes = %d, want 1", n)
				}
			})
		}
	}
}

// TestPGAppendSessionCutAfterLocalCommit: the primary waits for a
// synchronous standby that never confirms, so the append commits locally
// and waits; its session is terminated there (as a failover does). Append
// must find its entry committed, yet answer only once the standby confirms
// (here: once synchronous replication is switched off): acknowledged means
// replicated, even for an outcome found out afterwards.
func TestPGAppendSessionCutAfterLocalCommit(t *testing.T) {
	t.Parallel()
	// A server of its own: the test changes a server-wide setting.
	url, _ := pgtest.Private(t)
	for _, mode := range failoverModes {
		t.Run(mode.name, func(t *testing.T) {
			app := appName(t)
			s := openNamed(t, url, app, mode.opts...)
			admin := connect(t, url)
			schema := schemaOf(t, s)
			epoch := claimed(t, s, "m1")
			setSync := func(names string) {
				t.Helper()
				if _, err := admin.Exec(testContext(t), "ALTER SYSTEM SET synchronous_standby_names = '"+names+"'"); err != nil {
					t.Fatal(err)
				}
				if _, err := admin.Exec(testContext(t), "SELECT pg_reload_conf()"); err != nil {
					t.Fatal(err)
				}
			}
			setSync("matchgrain_absent_standby")
			t.Cleanup(func() { setSync("") })
			waitSyncRepActive(t, url, admin)
			// The setting reaches a session at its next statement: wait until
			// the store's pool reads it.
			deadline := time.Now().Add(10 * time.Second)
			for n, _ := s.SynchronousStandbys(testContext(t)); n != 1; n, _ = s.SynchronousStandbys(testContext(t)) {
				if time.Now().After(deadline) {
					t.Fatalf("SynchronousStandbys = %d, want 1 after setting a synchronous standby", n)
				}
				time.Sleep(10 * time.Millisecond)
			}

			done := make(chan error, 1)
			go func() {
				done <- s.Append(testContext(t), "m1", epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte("first")}})
			}()
			cut := waitingBackend(t, admin, app, "SyncRep", 0)
			terminate(t, admin, cut)
			// The retry found the entry and confirms it with a write of its
			// own, which waits for the standby too (in another session: the
			// terminated one may linger a moment, its commit invisible until
			// it is gone).
			waitingBackend(t, admin, app, "SyncRep", cut)
			select {
			case err := <-done:
				t.Fatalf("Append answered %v before any standby confirmed", err)
			default:
			}
			if got := logOf(t, admin, schema, "m1"); len(got) != 1 {
				t.Fatalf("log %v, want the locally committed entry", got)
			}
			setSync("")
			if err := <-done; err != nil {
				t.Fatalf("append cut after its local commit: %v, want nil", err)
			}
			if got := logOf(t, admin, schema, "m1"); len(got) != 1 || got[0] != fmt.Sprintf("1:%d:first", epoch) {
				t.Fatalf("log %v, want the entry once", got)
			}
			if n, err := s.SynchronousStandbys(testContext(t)); err != nil || n != 0 {
				t.Fatalf("SynchronousStandbys = %d, %v after switching it off, want 0", n, err)
			}
			if n := s.UnknownOutcomes(); n != 1 {
				t.Fatalf("UnknownOutcomes = %d, want 1", n)
			}
			// The next append goes straight through.
			if err := s.Append(testContext(t), "m1", epoch, []persistence.LogEntry{{Seq: 2, Payload: []byte("second")}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPGCreateMatchSessionCut: CreateMatch's insert waits on the same id,
// inserted by another session that has not committed, when its session is
// terminated (as a failover does). It retries on a new session: once the
// other session rolls back, it creates the match with its meta; if the
// other committed, the id is taken and it answers ErrMatchExists.
func TestPGCreateMatchSessionCut(t *testing.T) {
	t.Parallel()
	for _, otherCommits := range []bool{false, true} {
		t.Run(fmt.Sprintf("otherCommits=%v", otherCommits), func(t *testing.T) {
			t.Parallel()
			url, app := pgtest.URL(t), appName(t)
			s := openNamed(t, url, app)
			admin := connect(t, url)
			tbl := pgx.Identifier{schemaOf(t, s), "matches"}.Sanitize()
			other, err := connect(t, url).Begin(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback(context.Background()) }()
			if _, err := other.Exec(testContext(t), "INSERT INTO "+tbl+" (match_id, meta) VALUES ('m1', 'other'::bytea)"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.CreateMatch(testContext(t), "m1", []byte("mine")) }()
			terminate(t, admin, waitingBackend(t, admin, app, "transactionid", 0))
			end := other.Rollback
			if otherCommits {
				end = other.Commit
			}
			if err := end(testContext(t)); err != nil {
				t.Fatal(err)
			}
			err = <-done
			var meta string
			if qerr := admin.QueryRow(testContext(t), "SELECT convert_from(meta, 'UTF8') FROM "+tbl+" WHERE match_id = 'm1'").Scan(&meta); qerr != nil {
				t.Fatal(qerr)
			}
			if otherCommits {
				if !errors.Is(err, persistence.ErrMatchExists) || meta != "other" {
					t.Fatalf("create cut, the id taken meanwhile: err %v, meta %q; want ErrMatchExists and the other's row", err, meta)
				}
			} else if err != nil || meta != "mine" {
				t.Fatalf("create cut before commit: err %v, meta %q; want nil and the match created", err, meta)
			}
		})
	}
}
