package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/persistence"
)

// EnvURL names the variable holding the connection string.
const EnvURL = "DATABASE_URL"

// EnvScript overrides where Main looks for pg-throwaway.sh.
const EnvScript = "MATCHGRAIN_PG_SCRIPT"

// url is set once by Main, before any test runs.
var url string

// Main runs the tests with a PostgreSQL available and exits with their
// status. If DATABASE_URL is unset it starts a throwaway server (fsync off)
// and exports DATABASE_URL for the tests and any process they start; the
// server is removed when the tests end, and by a watchdog if the binary dies
// before that.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	stop, err := ensure()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: no PostgreSQL for the tests: %v\n", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// ensure sets url, starting a server if needed, and returns how to stop it.
func ensure() (stop func(), err error) {
	if u := os.Getenv(EnvURL); u != "" {
		url = u
		return func() {}, nil
	}
	u, dir, stop, err := startServer()
	if err != nil {
		return nil, err
	}
	_ = dir // only Private needs the data directory
	url = u
	if err := os.Setenv(EnvURL, url); err != nil {
		stop()
		return nil, fmt.Errorf("export %s: %w", EnvURL, err)
	}
	return stop, nil
}

// startServer starts a throwaway server (fsync off) that a watchdog removes
// if this process dies first, and returns its URL, its directory and how to
// stop it.
func startServer() (u, dir string, stop func(), err error) {
	script, err := scriptPath()
	if err != nil {
		return "", "", nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(script, "start", "--fast", "--stop-with", strconv.Itoa(os.Getpid()))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", nil, fmt.Errorf("%s start: %w\n%s", script, err, stderr.String())
	}
	env, err := parseExports(out)
	if err != nil {
		return "", "", nil, fmt.Errorf("%s start: %w", script, err)
	}
	u, dir = env[EnvURL], env["MATCHGRAIN_PG_DIR"]
	if u == "" || dir == "" {
		return "", "", nil, fmt.Errorf("%s start printed no DATABASE_URL or MATCHGRAIN_PG_DIR:\n%s", script, out)
	}
	return u, dir, func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %s stop %s: %v\n%s", script, dir, err, out)
		}
	}, nil
}

// Private starts a throwaway server of t's own, for a test that restarts or
// stops PostgreSQL and so must not share the server other packages' tests
// use at the same time. It returns the server's URL and its directory (the
// data directory is dir/data, the log dir/server.log); the server is
// removed when t ends.
func Private(t testing.TB) (u, dir string) {
	t.Helper()
	u, dir, stop, err := startServer()
	if err != nil {
		t.Fatalf("pgtest: private PostgreSQL: %v", err)
	}
	t.Cleanup(stop)
	return u, dir
}

// scriptPath finds deploy/pg-throwaway.sh relative to this source file.
func scriptPath() (string, error) {
	if p := os.Getenv(EnvScript); p != "" {
		return p, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate pgtest source to find deploy/pg-throwaway.sh; set %s", EnvScript)
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "pg-throwaway.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("find throwaway PostgreSQL script (set %s or %s): %w", EnvURL, EnvScript, err)
	}
	return p, nil
}

// parseExports reads the script's `export NAME='value'` lines.
func parseExports(out []byte) (map[string]string, error) {
	env := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			return nil, fmt.Errorf("unexpected output line %q", line)
		}
		env[name] = strings.Trim(value, "'")
	}
	return env, sc.Err()
}

// URL returns the connection string of the test PostgreSQL. It fails the
// test if Main did not run and DATABASE_URL is unset.
func URL(t testing.TB) string {
	t.Helper()
	if url == "" {
		if u := os.Getenv(EnvURL); u != "" {
			return u
		}
		t.Fatalf("pgtest: no PostgreSQL: call pgtest.Main from TestMain or set %s", EnvURL)
	}
	return url
}

// NewSchema returns a fresh schema name for t and drops the schema, with
// everything in it, when t ends. The schema itself is created by whoever
// uses it first (OpenPostgres with WithSchema does).
func NewSchema(t testing.TB) string {
	t.Helper()
	return NewSchemaAt(t, URL(t))
}

// NewSchemaAt is NewSchema on the server at u (a Private one, say).
func NewSchemaAt(t testing.TB, u string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: random schema name: %v", err)
	}
	schema := "t_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Errorf("pgtest: connect to drop schema %s: %v", schema, err)
			return
		}
		defer func() {
			if err := conn.Close(ctx); err != nil {
				t.Logf("pgtest: close connection: %v", err)
			}
		}()
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// NewStore opens a PostgresStore in a fresh schema; the store is closed and
// the schema dropped when t ends. Its logger discards (migration notices in
// every test are noise) unless opts set one.
func NewStore(t testing.TB, opts ...persistence.PostgresOption) *persistence.PostgresStore {
	t.Helper()
	schema := NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []persistence.PostgresOption{
		persistence.WithSchema(schema),
		persistence.WithLogger(slog.New(slog.DiscardHandler)),
	}
	s, err := persistence.OpenPostgres(ctx, URL(t), append(base, opts...)...)
	if err != nil {
		t.Fatalf("pgtest: open store in schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: close store: %v", err)
		}
	})
	return s
}
