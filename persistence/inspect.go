package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inspector reads matches for operators without touching their fencing:
// nothing is claimed or written, so it is safe against a live match. Both
// PostgresStore and EmbeddedStore implement it.
type Inspector interface {
	// ReadMatch returns everything stored of one match: its row, the latest
	// snapshot and the whole log, ascending. ErrMatchNotFound if none.
	ReadMatch(ctx context.Context, matchID string) (MatchRecord, error)
	// OwnerCounts returns how many unfinished matches each owner (member
	// id; "" for never claimed) holds by the store's last claim.
	OwnerCounts(ctx context.Context) (map[string]int, error)
}

// MatchRecord is one match as stored.
type MatchRecord struct {
	MatchID              string
	Meta                 []byte
	Owner                string
	Epoch, LastSeq       int64
	Finished             bool
	CreatedAt, UpdatedAt time.Time
	Snapshot             *Snapshot
	Log                  []LogEntry
}

// ReadMatch implements Inspector. One REPEATABLE READ transaction, so row,
// snapshot and log are one consistent picture even while the match runs.
func (s *PostgresStore) ReadMatch(ctx context.Context, matchID string) (MatchRecord, error) {
	if err := s.check("read match"); err != nil {
		return MatchRecord{}, err
	}
	if err := checkID("match id", matchID); err != nil {
		return MatchRecord{}, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return MatchRecord{}, fmt.Errorf("read match %q: begin: %w", matchID, err)
	}
	defer rollback(ctx, tx, s.logger)
	r := MatchRecord{MatchID: matchID}
	err = tx.QueryRow(ctx, `SELECT meta, owner, epoch, last_seq, finished, created_at, updated_at
		FROM matches WHERE match_id = $1`, matchID).
		Scan(&r.Meta, &r.Owner, &r.Epoch, &r.LastSeq, &r.Finished, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return MatchRecord{}, fmt.Errorf("read match %q: %w", matchID, ErrMatchNotFound)
	}
	if err != nil {
		return MatchRecord{}, fmt.Errorf("read match %q: %w", matchID, err)
	}
	var snap Snapshot
	err = tx.QueryRow(ctx, "SELECT seq, data FROM match_snapshots WHERE match_id = $1", matchID).Scan(&snap.Seq, &snap.Data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return MatchRecord{}, fmt.Errorf("read match %q: snapshot: %w", matchID, err)
	default:
		r.Snapshot = &snap
	}
	rows, err := tx.Query(ctx, "SELECT seq, payload FROM match_log WHERE match_id = $1 ORDER BY seq", matchID)
	if err != nil {
		return MatchRecord{}, fmt.Errorf("read match %q: log: %w", matchID, err)
	}
	r.Log, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LogEntry, error) {
		var e LogEntry
		err := row.Scan(&e.Seq, &e.Payload)
		return e, err
	})
	if err != nil {
		return MatchRecord{}, fmt.Errorf("read match %q: log: %w", matchID, err)
	}
	return r, nil
}

// OwnerCounts implements Inspector.
func (s *PostgresStore) OwnerCounts(ctx context.Context) (map[string]int, error) {
	if err := s.check("count owners"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT owner, count(*) FROM matches WHERE NOT finished GROUP BY owner")
	if err != nil {
		return nil, fmt.Errorf("count unfinished matches per owner: %w", err)
	}
	out := map[string]int{}
	var owner string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&owner, &n}, func() error {
		out[owner] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count unfinished matches per owner: %w", err)
	}
	return out, nil
}

var _ Inspector = (*PostgresStore)(nil)
