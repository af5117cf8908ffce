package persistence_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestOpenChoosesTheStore: no URL opens the embedded store in DataDir, a
// URL the PostgreSQL store in its schema with the statement timer wired;
// either one that cannot open says which store and where.
func TestOpenChoosesTheStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	t.Run("embedded", func(t *testing.T) {
		c := persistence.OpenConfig{DataDir: filepath.Join(t.TempDir(), "store"), Logger: quiet}
		s, err := persistence.Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if _, ok := s.(*persistence.EmbeddedStore); !ok {
			t.Fatalf("Open without a URL = %T, want the embedded store", s)
		}
		if c.Kind() != "embedded:"+c.DataDir {
			t.Fatalf("Kind = %q", c.Kind())
		}
		if err := s.CreateMatch(ctx, "m1", []byte("meta")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(c.DataDir, persistence.EmbeddedFileName)); err != nil {
			t.Fatalf("the store is not in DataDir: %v", err)
		}
	})

	t.Run("embedded unusable", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "a-file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := persistence.Open(ctx, persistence.OpenConfig{DataDir: file, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "open embedded store in "+file) {
			t.Fatalf("Open in a file = %v, want an error naming the directory", err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		var observed atomic.Int64
		c := persistence.OpenConfig{URL: pgtest.URL(t), Schema: pgtest.NewSchema(t), TCP: persistence.DefaultTCPTimeouts,
			Logger: quiet, Statements: prometheus.ObserverFunc(func(float64) { observed.Add(1) })}
		s, err := persistence.Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if _, ok := s.(*persistence.PostgresStore); !ok {
			t.Fatalf("Open with a URL = %T, want the PostgreSQL store", s)
		}
		if c.Kind() != "postgres" {
			t.Fatalf("Kind = %q; it must never show the URL", c.Kind())
		}
		if err := s.CreateMatch(ctx, "m1", []byte("meta")); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Claim(ctx, "m1", "owner")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "m1", rec.Epoch, []persistence.LogEntry{{Seq: 1, Payload: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		if observed.Load() == 0 {
			t.Fatal("the append's statement was not timed")
		}
	})

	t.Run("postgres unreachable", func(t *testing.T) {
		_, err := persistence.Open(ctx, persistence.OpenConfig{URL: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "open PostgreSQL store") {
			t.Fatalf("Open of an unreachable server = %v, want an error naming the store", err)
		}
	})
}
