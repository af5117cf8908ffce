package persistence

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// OpenConfig says which store a node opens: PostgreSQL when URL is set,
// shared by every member of a cluster; otherwise the embedded single-node
// store in DataDir.
type OpenConfig struct {
	// URL is the PostgreSQL connection string, Schema the schema ("" for
	// the server's search path), TCP the connections' dead-host timeouts.
	URL, Schema string
	TCP         TCPTimeouts
	// DataDir holds the embedded store.
	DataDir string
	// Logger receives the store's background errors and migration notices
	// (default slog.Default()).
	Logger *slog.Logger
	// Statements, if set, times the PostgreSQL store's group-commit
	// statements (NewStatementHistogram).
	Statements prometheus.Observer
}

// Open opens the store c chooses.
func Open(ctx context.Context, c OpenConfig) (Store, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.URL == "" {
		s, err := OpenEmbeddedWithLogger(c.DataDir, c.Logger)
		if err != nil {
			return nil, fmt.Errorf("open embedded store in %s: %w", c.DataDir, err)
		}
		return s, nil
	}
	opts := []PostgresOption{WithLogger(c.Logger), WithTCPTimeouts(c.TCP)}
	if c.Statements != nil {
		opts = append(opts, WithStatementObserver(func(d time.Duration) { c.Statements.Observe(d.Seconds()) }))
	}
	if c.Schema != "" {
		opts = append(opts, WithSchema(c.Schema))
	}
	s, err := OpenPostgres(ctx, c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL store: %w", err)
	}
	return s, nil
}

// Kind names the store c chooses for a node's logs: "postgres", or
// "embedded:" and its directory. Never the URL, which may hold a password.
func (c OpenConfig) Kind() string {
	if c.URL != "" {
		return "postgres"
	}
	return "embedded:" + c.DataDir
}
