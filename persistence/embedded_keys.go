package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketKeys holds one nested bucket per purpose, keyed by big-endian
// generation (seqKey), so the newest generation is the last key.
var bucketKeys = []byte("cluster_keys")

// keyRecordHeader: createdAt(8, unix ns) activeFrom(8, unix ns), then the secret.
const keyRecordHeader = 16

type keyRecord struct {
	createdAt, activeFrom time.Time
	secret                []byte
}

func (k keyRecord) encode() []byte {
	b := make([]byte, keyRecordHeader, keyRecordHeader+len(k.secret))
	binary.BigEndian.PutUint64(b, uint64(k.createdAt.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(k.activeFrom.UnixNano()))
	return append(b, k.secret...)
}

// decodeKeyRecord copies the secret out of b, which belongs to the transaction.
func decodeKeyRecord(b []byte) (keyRecord, error) {
	if len(b) <= keyRecordHeader {
		return keyRecord{}, fmt.Errorf("cluster key record of %d bytes, want more than %d: %w", len(b), keyRecordHeader, errCorrupt)
	}
	return keyRecord{
		createdAt:  time.Unix(0, int64(binary.BigEndian.Uint64(b))),
		activeFrom: time.Unix(0, int64(binary.BigEndian.Uint64(b[8:]))),
		secret:     bytes.Clone(b[keyRecordHeader:]),
	}, nil
}

// EnsureKey implements ClusterKeys. The embedded node keeps its keys in its
// data directory, so a restarted node accepts the tickets and seat links it
// issued before.
func (s *EmbeddedStore) EnsureKey(ctx context.Context, purpose string, candidate []byte) error {
	if err := s.check("ensure cluster key"); err != nil {
		return err
	}
	if purpose == "" || len(candidate) == 0 {
		return fmt.Errorf("ensure cluster key %q: purpose and secret must not be empty", purpose)
	}
	candidate = bytes.Clone(candidate)
	op := fmt.Sprintf("ensure cluster key %q", purpose)
	return s.write(ctx, op, func(tx *bolt.Tx) error {
		b, err := keysOf(tx, purpose, true)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if k, _ := b.Cursor().First(); k != nil {
			return nil
		}
		now := time.Now()
		if err := b.Put(seqKey(1), keyRecord{createdAt: now, activeFrom: now, secret: candidate}.encode()); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// RotateKey implements ClusterKeys. Times are this node's clock: one node
// has no other clock to agree with.
func (s *EmbeddedStore) RotateKey(ctx context.Context, purpose string, candidate []byte, activateAfter, olderThan time.Duration) (int64, error) {
	if err := s.check("rotate cluster key"); err != nil {
		return 0, err
	}
	if purpose == "" || len(candidate) == 0 || activateAfter < 0 || olderThan < 0 {
		return 0, fmt.Errorf("rotate cluster key %q: empty purpose or secret, or negative duration", purpose)
	}
	candidate = bytes.Clone(candidate)
	op := fmt.Sprintf("rotate cluster key %q", purpose)
	var gen int64
	err := s.write(ctx, op, func(tx *bolt.Tx) error {
		gen = 0
		b, err := keysOf(tx, purpose, false)
		if err != nil || b == nil {
			return err // nothing to rotate: EnsureKey comes first
		}
		now := time.Now()
		var newest keyRecord
		var newestGen int64
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r, err := decodeKeyRecord(v)
			if err != nil {
				return fmt.Errorf("%s: generation %d: %w", op, decodeSeq(k), err)
			}
			if r.activeFrom.After(now) {
				return nil // a published generation is still waiting
			}
			newest, newestGen = r, decodeSeq(k)
		}
		if newestGen == 0 || now.Sub(newest.createdAt) < olderThan {
			return nil
		}
		rec := keyRecord{createdAt: now, activeFrom: now.Add(activateAfter), secret: candidate}
		if err := b.Put(seqKey(newestGen+1), rec.encode()); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		gen = newestGen + 1
		return nil
	})
	if err != nil {
		return 0, err
	}
	return gen, nil
}

// KeyRing implements ClusterKeys.
func (s *EmbeddedStore) KeyRing(ctx context.Context, purpose string, overlap time.Duration) (KeyRing, error) {
	if err := s.check("read cluster keys"); err != nil {
		return KeyRing{}, err
	}
	if err := ctx.Err(); err != nil {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, err)
	}
	var kr KeyRing
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := keysOf(tx, purpose, false)
		if err != nil || b == nil {
			return err
		}
		now := time.Now()
		// Newest first; next is the activation of the generation after the
		// one at hand, which retires it.
		var next *time.Time
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			r, err := decodeKeyRecord(v)
			if err != nil {
				return fmt.Errorf("generation %d: %w", decodeSeq(k), err)
			}
			kv := KeyVersion{Generation: decodeSeq(k), Secret: r.secret}
			active := !r.activeFrom.After(now)
			switch {
			case !active:
				kr.Accept = append(kr.Accept, kv)
			case !found:
				kr.Current, found = kv, true
			case next == nil || next.After(now.Add(-overlap)):
				kr.Accept = append(kr.Accept, kv)
			}
			t := r.activeFrom
			next = &t
		}
		return nil
	})
	if err != nil {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, err)
	}
	if !found {
		return KeyRing{}, fmt.Errorf("read cluster keys %q: %w", purpose, ErrNoKey)
	}
	return kr, nil
}

// keysOf returns purpose's bucket, created if create is set; nil without
// one.
func keysOf(tx *bolt.Tx, purpose string, create bool) (*bolt.Bucket, error) {
	root := tx.Bucket(bucketKeys)
	if root == nil {
		if !create {
			return nil, nil
		}
		var err error
		// Stores created before cluster keys lack the bucket.
		if root, err = tx.CreateBucketIfNotExists(bucketKeys); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucketKeys, err)
		}
	}
	if !create {
		return root.Bucket([]byte(purpose)), nil
	}
	b, err := root.CreateBucketIfNotExists([]byte(purpose))
	if err != nil {
		return nil, fmt.Errorf("create bucket for %q: %w", purpose, err)
	}
	return b, nil
}

var _ ClusterKeys = (*EmbeddedStore)(nil)
