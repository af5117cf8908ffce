package persistence

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Grouped claims. When a member dies its survivors claim hundreds of its
// matches at once. A claim alone is a transaction of five round trips and
// a commit that waits for the WAL to reach disk; claims that wait for a
// connection while others run are gathered and claimed together, in one
// transaction with the same four statements for all of them, so a herd
// costs a few commits instead of one per match. As with group commit there
// is no timer: a claim that finds a claimer free runs at once and alone,
// exactly as before.
//
// A batch never weakens a claim: as in claimOne, the epoch bump takes each
// row's lock and keeps it until commit, and the snapshot and log reads
// after it (READ COMMITTED: each statement sees everything committed
// before it) include every write the old epoch got acknowledged. The batch
// takes only rows that are free at once (SKIP LOCKED) and leaves the
// others to claims of their own, which wait for the lock as before; if
// anything in the batch fails (an inconsistent log, a lost connection, a
// deadline) the whole transaction rolls back and each claim of the batch
// runs again alone, with its own context.

// maxClaimBatch bounds the matches claimed in one transaction.
const maxClaimBatch = 128

type claimReq struct {
	ctx     context.Context
	matchID string
	owner   string
	done    chan claimResult // buffered: a claimer never blocks on a caller that left
}

type claimResult struct {
	rec Recovery
	err error
}

// claimer gathers claims into batches of one owner's claims, each match
// once; at most workers run at once, each holding one pooled connection
// (the pool less the group-commit writers). Tests and benchmarks set its
// batch to 1 for claims one at a time.
type claimer struct {
	gatherer[*claimReq]
}

func newClaimer(s *PostgresStore, workers int) *claimer {
	return &claimer{gatherer[*claimReq]{workers: workers, batch: maxClaimBatch,
		ctx:   func(r *claimReq) context.Context { return r.ctx },
		key:   func(r *claimReq) string { return r.matchID },
		joins: func(first, r *claimReq) bool { return r.owner == first.owner },
		run:   s.claimBatch}}
}

// claim queues r and returns its result.
func (c *claimer) claim(r *claimReq) (Recovery, error) {
	c.add(r)
	select {
	case res := <-r.done:
		return res.rec, res.err
	case <-r.ctx.Done():
		return Recovery{}, fmt.Errorf("claim match %q: %w", r.matchID, r.ctx.Err())
	}
}

// claimBatch claims every match of batch and answers each request.
func (s *PostgresStore) claimBatch(batch []*claimReq) {
	if len(batch) == 1 {
		r := batch[0]
		rec, err := s.claimOne(r.ctx, r.matchID, r.owner)
		r.done <- claimResult{rec, err}
		return
	}
	recs, err := s.claimTogether(batch)
	if err != nil {
		s.logger.Debug("persistence: grouped claim failed; claiming one at a time", "matches", len(batch), "err", err)
		for _, r := range batch {
			rec, err := s.claimOne(r.ctx, r.matchID, r.owner)
			r.done <- claimResult{rec, err}
		}
		return
	}
	for _, r := range batch {
		rec, ok := recs[r.matchID]
		if !ok {
			// Missing, or its row was locked (SKIP LOCKED): alone, it
			// waits for the lock (or finds it missing) exactly as before.
			rec, err := s.claimOne(r.ctx, r.matchID, r.owner)
			r.done <- claimResult{rec, err}
			continue
		}
		r.done <- claimResult{rec: rec}
	}
}

// claimTogether claims the matches of batch (one owner) in one
// transaction: the recoveries of those that exist and whose rows no other
// transaction holds. It never waits for a row lock (SKIP LOCKED): a batch
// that waited would hold the locks it already has meanwhile, keep every
// other match of the batch waiting for one busy row (a frozen member's
// open transaction), and could deadlock with a transaction that locks
// several of its rows in another order. Any error leaves nothing changed.
func (s *PostgresStore) claimTogether(batch []*claimReq) (map[string]Recovery, error) {
	ctx, cancel := batchContext(batch, func(r *claimReq) context.Context { return r.ctx })
	defer cancel()
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.matchID
	}
	slices.Sort(ids)
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer rollback(ctx, tx, s.logger)

	recs := make(map[string]Recovery, len(ids))
	lastSeqs := make(map[string]int64, len(ids))
	rows, err := tx.Query(ctx, `UPDATE matches m SET epoch = m.epoch + 1, owner = $2, updated_at = now()
		FROM (SELECT match_id FROM matches WHERE match_id = ANY($1) ORDER BY match_id FOR UPDATE SKIP LOCKED) locked
		WHERE m.match_id = locked.match_id
		RETURNING m.match_id, m.epoch, m.meta, m.finished, m.last_seq`, ids, batch[0].owner)
	if err != nil {
		return nil, fmt.Errorf("bump epochs: %w", err)
	}
	for rows.Next() {
		var id string
		var rec Recovery
		var last int64
		if err := rows.Scan(&id, &rec.Epoch, &rec.Meta, &rec.Finished, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("bump epochs: %w", err)
		}
		recs[id], lastSeqs[id] = rec, last
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bump epochs: %w", err)
	}

	rows, err = tx.Query(ctx, "SELECT match_id, seq, data FROM match_snapshots WHERE match_id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	for rows.Next() {
		var id string
		var snap Snapshot
		if err := rows.Scan(&id, &snap.Seq, &snap.Data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read snapshots: %w", err)
		}
		if rec, ok := recs[id]; ok {
			rec.Snapshot = &snap
			recs[id] = rec
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}

	rows, err = tx.Query(ctx, `SELECT l.match_id, l.seq, l.payload FROM match_log l
		LEFT JOIN match_snapshots s ON s.match_id = l.match_id
		WHERE l.match_id = ANY($1) AND l.seq > coalesce(s.seq, 0) ORDER BY l.match_id, l.seq`, ids)
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	for rows.Next() {
		var id string
		var e LogEntry
		if err := rows.Scan(&id, &e.Seq, &e.Payload); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read logs: %w", err)
		}
		if rec, ok := recs[id]; ok {
			rec.Tail = append(rec.Tail, e)
			recs[id] = rec
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	for id, rec := range recs {
		var snapSeq int64
		if rec.Snapshot != nil {
			snapSeq = rec.Snapshot.Seq
		}
		if err := checkTail(id, snapSeq, lastSeqs[id], rec.Tail); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return recs, nil
}
