package persistence

import (
	"context"
	"fmt"
	"time"
)

// Retention is implemented by stores that can forget what old finished
// matches no longer need. Only PostgresStore implements it.
type Retention interface {
	// PruneFinishedLogs deletes the log entries of up to limit finished
	// matches last written before the given time, and returns how many
	// matches and entries it pruned. It keeps each match's row (meta,
	// result) and its snapshot, and prunes only matches whose snapshot
	// covers the whole log: such a match still activates and answers with
	// its final state, but it can no longer be replayed from seq 1.
	PruneFinishedLogs(ctx context.Context, before time.Time, limit int) (matches, entries int64, err error)
}

// pruneSQL picks finished, old matches whose snapshot is at their last seq
// and deletes their log in one statement. The fenced writes of a finished
// match's late activation cannot conflict: an append would need last_seq,
// which stays as it is, and entries are only ever added after it.
const pruneSQL = `WITH picked AS (
	SELECT m.match_id FROM matches m
	JOIN match_snapshots s ON s.match_id = m.match_id AND s.seq = m.last_seq
	WHERE m.finished AND m.updated_at < $1
	  AND EXISTS (SELECT 1 FROM match_log l WHERE l.match_id = m.match_id)
	ORDER BY m.updated_at LIMIT $2),
deleted AS (
	DELETE FROM match_log l USING picked WHERE l.match_id = picked.match_id
	RETURNING l.match_id)
SELECT count(DISTINCT match_id), count(*) FROM deleted`

// PruneFinishedLogs implements Retention.
func (s *PostgresStore) PruneFinishedLogs(ctx context.Context, before time.Time, limit int) (int64, int64, error) {
	if err := s.check("prune finished logs"); err != nil {
		return 0, 0, err
	}
	if limit <= 0 {
		return 0, 0, fmt.Errorf("prune finished logs: limit %d must be positive", limit)
	}
	var matches, entries int64
	if err := s.pool.QueryRow(ctx, pruneSQL, before, limit).Scan(&matches, &entries); err != nil {
		return 0, 0, fmt.Errorf("prune logs of matches finished before %s: %w", before.Format(time.RFC3339), err)
	}
	return matches, entries, nil
}

// TableSizes returns the bytes each of the store's tables takes on disk,
// indexes and TOAST included, for capacity planning (docs/operations.md §5).
func (s *PostgresStore) TableSizes(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range []string{"matches", "match_log", "match_snapshots", "used_tickets"} {
		var n int64
		if err := s.pool.QueryRow(ctx, "SELECT pg_total_relation_size(to_regclass($1))", t).Scan(&n); err != nil {
			return nil, fmt.Errorf("size of table %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

var _ Retention = (*PostgresStore)(nil)
