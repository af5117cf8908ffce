package persistence

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ReadMatch implements Inspector. One read transaction, so row, snapshot
// and log are one consistent picture even while the match runs; it waits
// for no write and blocks none.
func (s *EmbeddedStore) ReadMatch(ctx context.Context, matchID string) (MatchRecord, error) {
	if err := s.check("read match"); err != nil {
		return MatchRecord{}, err
	}
	if err := checkID("match id", matchID); err != nil {
		return MatchRecord{}, err
	}
	op := fmt.Sprintf("read match %q", matchID)
	if err := ctx.Err(); err != nil {
		return MatchRecord{}, fmt.Errorf("%s: %w", op, err)
	}
	var r MatchRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		id := []byte(matchID)
		m, err := loadRecord(tx, op, id)
		if err != nil {
			return err
		}
		r = MatchRecord{MatchID: matchID, Meta: bytes.Clone(nonNil(tx.Bucket(bucketMeta).Get(id))),
			Owner: m.owner, Epoch: m.epoch, LastSeq: m.lastSeq, Finished: m.finished,
			CreatedAt: m.createdAt, UpdatedAt: m.updatedAt}
		if raw := tx.Bucket(bucketSnapshots).Get(id); raw != nil {
			snap, err := decodeSnapshot(raw)
			if err != nil {
				return fmt.Errorf("%s: snapshot: %w", op, err)
			}
			r.Snapshot = &snap
		}
		log := tx.Bucket(bucketLog).Bucket(id)
		if log == nil {
			return fmt.Errorf("%s: log bucket missing: store is inconsistent", op)
		}
		c := log.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r.Log = append(r.Log, LogEntry{Seq: decodeSeq(k), Payload: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return MatchRecord{}, err
	}
	return r, nil
}

// OwnerCounts implements Inspector.
func (s *EmbeddedStore) OwnerCounts(ctx context.Context) (map[string]int, error) {
	if err := s.check("count owners"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("count unfinished matches per owner: %w", err)
	}
	out := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		matches := tx.Bucket(bucketMatches)
		return tx.Bucket(bucketUnfinished).ForEach(func(k, _ []byte) error {
			m, err := unfinishedRecord(matches, k)
			if err != nil {
				return err
			}
			out[m.owner]++
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("count unfinished matches per owner: %w", err)
	}
	return out, nil
}

var _ Inspector = (*EmbeddedStore)(nil)
