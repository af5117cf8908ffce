package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// An append whose connection dies before its answer arrives (the primary
// was killed, a failover cut every session, a statement timed out) may or
// may not have committed. Halting the writer then is safe but expensive:
// every match with an append in flight would stop and need a new Claim, and
// a failover has thousands in flight. So the store finds the outcome out
// itself, as long as the caller's ctx allows: it waits for a writable
// primary and sends the same fenced append again. The compare-and-set
// makes that harmless:
//
//   - if the first one did not commit, the retry commits it (exactly once:
//     both need last_seq to be the seq before the entry);
//   - if it did, the retry is refused as "seq taken", and a confirming
//     write, which succeeds only if the log holds the entry at that seq with
//     this epoch and payload (no other writer can have put it there), says
//     so. The confirming write's own commit waits for the synchronous
//     standby, and the entry precedes it in the write-ahead log: an entry
//     that the old primary committed only locally (its session was cut while
//     it waited for the standby) is acknowledged only once it is replicated.
//
// Every fencing rule holds: a newer epoch refuses both the retry and the
// confirmation, which then answer ErrFenced. Settled appends are counted
// (UnknownOutcomes) and logged at debug level only: a failover settles one
// per match in flight, thousands under load.

// confirmAppendSQL touches the match row only if it is still owned by the
// epoch ($2) and the log holds the entry at seq $3 written by that epoch
// with payload $4.
const confirmAppendSQL = `UPDATE matches SET updated_at = now()
WHERE match_id = $1 AND epoch = $2 AND last_seq >= $3
	AND EXISTS (SELECT 1 FROM match_log WHERE match_id = $1 AND seq = $3 AND epoch = $2 AND payload = $4)`

// Backoff between attempts to reach a writable primary: short at first
// (a dropped connection alone is back in milliseconds), then capped so
// that a promotion is noticed within a fraction of a second.
const (
	resolveFirstBackoff = 20 * time.Millisecond
	resolveMaxBackoff   = 250 * time.Millisecond
)

// resolveAppend settles an append whose outcome is unknown: nil once its
// entries are durable (committed before, or now), a sentinel if the retry
// is refused for a reason other than its own earlier commit, or, when ctx
// ends first, the error that left it unknown. entries must be checked
// (checkEntries) and start at first.
func (s *PostgresStore) resolveAppend(ctx context.Context, matchID string, epoch, first int64, entries []LogEntry, cause error) error {
	s.unknownAppends.Add(1)
	last := entries[len(entries)-1]
	backoff := resolveFirstBackoff
	for attempt := 1; ; attempt++ {
		err := s.appendDirect(ctx, matchID, epoch, first, entries)
		switch {
		case err == nil:
			s.logger.Debug("persistence: append with unknown outcome retried and committed",
				"match", matchID, "seq", first, "attempts", attempt)
			return nil
		case errors.Is(err, ErrFenced):
			tag, cerr := s.pool.Exec(ctx, confirmAppendSQL, matchID, epoch, last.Seq, nonNil(last.Payload))
			if cerr == nil && tag.RowsAffected() == 1 {
				s.logger.Debug("persistence: append with unknown outcome had committed",
					"match", matchID, "seq", first, "attempts", attempt)
				return nil
			}
			if cerr == nil {
				return err // refused, and not because of its own commit
			}
			err = fmt.Errorf("append to match %q at seq %d: confirm: %w", matchID, first, cerr)
		case isSentinel(err):
			return err
		}
		if !unavailable(err) {
			return err
		}
		if err := pause(ctx, &backoff); err != nil {
			return fmt.Errorf("append to match %q at seq %d: outcome unknown after %d attempts (%w): %w",
				matchID, first, attempt, cause, err)
		}
	}
}

// confirmCreateSQL touches the match row only if it holds the meta ($2) the
// create wrote: match ids are random, so only that create can have written it.
const confirmCreateSQL = `UPDATE matches SET updated_at = now() WHERE match_id = $1 AND meta = $2`

// resolveCreate settles a CreateMatch whose outcome is unknown, as
// resolveAppend does an append: it waits for a writable primary and
// inserts again; "exists" then means the first insert had committed if the
// row holds this meta, which a confirming write (waiting for the standby,
// like the insert's own commit) establishes. So a match creation rides
// through a failover instead of failing, and never answers nil for a row
// that is not replicated.
func (s *PostgresStore) resolveCreate(ctx context.Context, matchID string, meta []byte, cause error) error {
	backoff := resolveFirstBackoff
	for attempt := 1; ; attempt++ {
		err := s.insertMatch(ctx, matchID, meta)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrMatchExists):
			tag, cerr := s.pool.Exec(ctx, confirmCreateSQL, matchID, meta)
			if cerr == nil && tag.RowsAffected() == 1 {
				s.logger.Debug("persistence: create with unknown outcome had committed", "match", matchID, "attempts", attempt)
				return nil
			}
			if cerr == nil {
				return err // another row under that id
			}
			err = fmt.Errorf("create match %q: confirm: %w", matchID, cerr)
		}
		if !unavailable(err) {
			return err
		}
		if err := pause(ctx, &backoff); err != nil {
			return fmt.Errorf("create match %q: outcome unknown after %d attempts (%w): %w", matchID, attempt, cause, err)
		}
	}
}

// pause waits out *backoff, then doubles it up to resolveMaxBackoff; it
// returns ctx's error if ctx ends first.
func pause(ctx context.Context, backoff *time.Duration) error {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	*backoff = min(2**backoff, resolveMaxBackoff)
	return nil
}

// isSentinel reports the errors that say nothing was written.
func isSentinel(err error) bool {
	return errors.Is(err, ErrFenced) || errors.Is(err, ErrSeqGap) || errors.Is(err, ErrMatchNotFound) ||
		errors.Is(err, ErrClosed)
}

// unavailable reports an error that the database's absence explains, after
// which the same write may go through later: no answer at all (the
// connection broke, refused or timed out), or the server saying it is
// going away, starting up, in recovery, read-only (a demoted primary, a
// standby) or full. A cancelled or expired caller ctx is not: the caller
// stopped waiting.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch pgErr.Code[:2] {
	case "08", // connection exception
		"57": // operator intervention: admin or crash shutdown, cannot connect now
		return true
	}
	switch pgErr.Code {
	case "25006", // read_only_sql_transaction: reached a standby
		"53300": // too_many_connections
		return true
	}
	return false
}
