package persistence

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the pg_advisory_xact_lock key that serialises schema
// migrations of every node sharing a database ("matchgrain" in ASCII).
const migrationLockKey int64 = 0x6d61746368677261

// migration is one embedded SQL file, named NNNN_description.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded files in version order.
func loadMigrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	out := make([]migration, 0, len(paths))
	seen := make(map[int]string, len(paths))
	for _, p := range paths {
		name := strings.TrimPrefix(p, "migrations/")
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive version and '_'", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", other, name, v)
		}
		seen[v] = name
		body, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate brings the schema up to date in one transaction. The transaction
// holds an advisory lock, so nodes starting together apply each migration
// once and the others wait, then see it recorded. If schema is not empty it
// is created first; the pool's search_path already points at it.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, logger *slog.Logger) error {
	migs, err := loadMigrations()
	if err != nil {
		return err
	}
	if len(migs) == 0 {
		return errors.New("migrate: no embedded migrations")
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer rollback(ctx, tx, logger)

	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
		return fmt.Errorf("migrate: advisory lock: %w", err)
	}
	if schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("migrate: create schema %q: %w", schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("migrate: read applied versions: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("migrate: read applied versions: %w", err)
	}
	done := make(map[int]bool, len(applied))
	newest := 0
	for _, v := range applied {
		done[int(v)] = true
		newest = max(newest, int(v))
	}
	for _, m := range migs {
		if done[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
		logger.Info("persistence: applied schema migration", "migration", m.name, "schema", schema)
	}
	if known := migs[len(migs)-1].version; newest > known {
		// A newer binary migrated this database; this one may not understand
		// it, but refusing to start would block a rolling upgrade.
		logger.Warn("persistence: database schema is newer than this binary",
			"database_version", newest, "binary_version", known)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// rollback ends tx if it is still open; after Commit it is a no-op.
func rollback(ctx context.Context, tx pgx.Tx, logger *slog.Logger) {
	// A rollback after a failed statement or a cancelled ctx fails too; the
	// connection is discarded by pgx then, so there is nothing more to do.
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		logger.Debug("persistence: rollback failed", "err", err)
	}
}
