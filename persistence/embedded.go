package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// EmbeddedFileName is the one file an EmbeddedStore keeps in its directory.
const EmbeddedFileName = "matchgrain.db"

// embeddedMaxBatch caps how many queued writes share one transaction.
const embeddedMaxBatch = 512

// Bucket names. Log entries live in one nested bucket per match under
// bucketLog, keyed by big-endian seq, so a tail read is one cursor walk.
var (
	bucketMatches      = []byte("matches")       // match id -> matchRecord
	bucketMeta         = []byte("meta")          // match id -> creation meta
	bucketUnfinished   = []byte("unfinished")    // match id -> empty; the ListUnfinished index
	bucketLog          = []byte("log")           // match id -> bucket{seq -> payload}
	bucketSnapshots    = []byte("snapshots")     // match id -> snapshot record
	bucketTickets      = []byte("tickets")       // ticket id -> expiry, consumer
	bucketTicketExpiry = []byte("ticket_expiry") // expiry ++ ticket id -> empty; the purge index
)

// EmbeddedStore is the Store for a single node: one bbolt file, no external
// service, every commit fsynced. It has the same semantics and fencing as
// PostgresStore; fencing is simpler here because one writer goroutine runs
// every write transaction.
//
// Writes are group-committed: the writer takes every write queued while the
// previous transaction was syncing into the next one, so concurrent matches
// share fsyncs. A write that is refused (a sentinel error) writes nothing and
// does not affect the others in its transaction.
type EmbeddedStore struct {
	db      *bolt.DB
	logger  *slog.Logger
	writes  chan *writeReq
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// writeReq is one write waiting for the writer goroutine. fn must return a
// sentinel error only before it modified anything; any other error aborts
// the transaction it ran in.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *bolt.Tx) error
	done chan error
}

// OpenEmbedded opens (or creates) the store in dir, creating dir if needed.
// Only one process may have it open; a second waits up to one second for the
// file lock and then fails.
func OpenEmbedded(dir string) (*EmbeddedStore, error) {
	return OpenEmbeddedWithLogger(dir, slog.Default())
}

// OpenEmbeddedWithLogger is OpenEmbedded with a logger for background errors.
func OpenEmbeddedWithLogger(dir string, logger *slog.Logger) (*EmbeddedStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("persistence: create store dir %q: %w", dir, err)
	}
	path := filepath.Join(dir, EmbeddedFileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("persistence: open %q: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMatches, bucketMeta, bucketUnfinished, bucketLog,
			bucketSnapshots, bucketTickets, bucketTicketExpiry} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			logger.Warn("persistence: close after failed open", "path", path, "err", cerr)
		}
		return nil, fmt.Errorf("persistence: initialise %q: %w", path, err)
	}
	s := &EmbeddedStore{
		db:      db,
		logger:  logger,
		writes:  make(chan *writeReq),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go s.writer()
	return s, nil
}

// Close fails queued writes with ErrClosed, waits for the transaction in
// progress and closes the file.
func (s *EmbeddedStore) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		<-s.stopped
		if cerr := s.db.Close(); cerr != nil {
			err = fmt.Errorf("persistence: close embedded store: %w", cerr)
		}
	})
	return err
}

// write runs fn in the writer's next transaction and waits for its commit.
func (s *EmbeddedStore) write(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.writes <- r:
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case <-s.stopped:
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: outcome unknown: %w", op, ctx.Err())
	}
}

// writer is the only goroutine that writes to the file.
func (s *EmbeddedStore) writer() {
	defer close(s.stopped)
	batch := make([]*writeReq, 0, embeddedMaxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		case <-s.quit:
			return
		}
	gather:
		for len(batch) < embeddedMaxBatch {
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch in one transaction. If the transaction fails as a
// whole, each write is retried alone so that one bad write cannot fail the
// others, and each caller gets its own error.
func (s *EmbeddedStore) commit(batch []*writeReq) {
	results := make([]error, len(batch))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, r := range batch {
			results[i] = runWrite(tx, r)
			if results[i] != nil && !isRejection(results[i]) {
				return results[i]
			}
		}
		return nil
	})
	if err == nil {
		for i, r := range batch {
			r.done <- results[i]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- err
		return
	}
	s.logger.Warn("persistence: embedded batch failed, retrying writes one by one", "writes", len(batch), "err", err)
	for _, r := range batch {
		var res error
		err := s.db.Update(func(tx *bolt.Tx) error {
			res = runWrite(tx, r)
			if isRejection(res) {
				return nil
			}
			return res
		})
		if err != nil {
			res = err
		}
		r.done <- res
	}
}

// runWrite runs one queued write unless its caller already gave up.
func runWrite(tx *bolt.Tx, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", errAbandoned, err)
	}
	return r.fn(tx)
}

// errAbandoned marks a write skipped because its caller's ctx ended; like a
// rejection it wrote nothing, so the batch goes on.
var errAbandoned = errors.New("persistence: write abandoned before it ran")

// isRejection reports errors after which a write function has written nothing.
func isRejection(err error) bool {
	for _, s := range []error{ErrMatchExists, ErrMatchNotFound, ErrFenced, ErrSeqGap, ErrTicketUsed, errAbandoned} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func (s *EmbeddedStore) check(op string) error {
	select {
	case <-s.quit:
		return fmt.Errorf("%s: %w", op, ErrClosed)
	default:
		return nil
	}
}

// CreateMatch implements Store.
func (s *EmbeddedStore) CreateMatch(ctx context.Context, matchID string, meta []byte) error {
	if err := s.check("create match"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	meta = bytes.Clone(nonNil(meta))
	op := fmt.Sprintf("create match %q", matchID)
	return s.write(ctx, op, func(tx *bolt.Tx) error {
		id := []byte(matchID)
		if tx.Bucket(bucketMatches).Get(id) != nil {
			return fmt.Errorf("%s: %w", op, ErrMatchExists)
		}
		now := time.Now()
		rec := matchRecord{createdAt: now, updatedAt: now}
		if err := tx.Bucket(bucketMatches).Put(id, rec.encode()); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if err := tx.Bucket(bucketMeta).Put(id, meta); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if err := tx.Bucket(bucketUnfinished).Put(id, nil); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if _, err := tx.Bucket(bucketLog).CreateBucket(id); err != nil {
			return fmt.Errorf("%s: create log: %w", op, err)
		}
		return nil
	})
}

// loadRecord reads a match's record; ErrMatchNotFound if there is none.
func loadRecord(tx *bolt.Tx, op string, id []byte) (matchRecord, error) {
	raw := tx.Bucket(bucketMatches).Get(id)
	if raw == nil {
		return matchRecord{}, fmt.Errorf("%s: %w", op, ErrMatchNotFound)
	}
	rec, err := decodeMatchRecord(raw)
	if err != nil {
		return matchRecord{}, fmt.Errorf("%s: %w", op, err)
	}
	return rec, nil
}

// Claim implements Store.
func (s *EmbeddedStore) Claim(ctx context.Context, matchID, owner string) (Recovery, error) {
	if err := s.check("claim"); err != nil {
		return Recovery{}, err
	}
	if err := checkID("match id", matchID); err != nil {
		return Recovery{}, err
	}
	var rec Recovery
	op := fmt.Sprintf("claim match %q", matchID)
	err := s.write(ctx, op, func(tx *bolt.Tx) error {
		// Results are assigned afresh on every run: a failed batch reruns fn.
		rec = Recovery{}
		id := []byte(matchID)
		m, err := loadRecord(tx, op, id)
		if err != nil {
			return err
		}
		var snapSeq int64
		if raw := tx.Bucket(bucketSnapshots).Get(id); raw != nil {
			snap, err := decodeSnapshot(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			rec.Snapshot = &snap
			snapSeq = snap.Seq
		}
		log := tx.Bucket(bucketLog).Bucket(id)
		if log == nil {
			return fmt.Errorf("%s: log bucket missing: store is inconsistent", op)
		}
		c := log.Cursor()
		for k, v := c.Seek(seqKey(snapSeq + 1)); k != nil; k, v = c.Next() {
			rec.Tail = append(rec.Tail, LogEntry{Seq: decodeSeq(k), Payload: bytes.Clone(v)})
		}
		if err := checkTail(matchID, snapSeq, m.lastSeq, rec.Tail); err != nil {
			return err
		}
		rec.Meta = bytes.Clone(tx.Bucket(bucketMeta).Get(id))
		rec.Finished = m.finished

		m.epoch++
		m.owner = owner
		m.updatedAt = time.Now()
		rec.Epoch = m.epoch
		if err := tx.Bucket(bucketMatches).Put(id, m.encode()); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	if err != nil {
		return Recovery{}, err
	}
	return rec, nil
}

// Append implements Store.
func (s *EmbeddedStore) Append(ctx context.Context, matchID string, epoch int64, entries []LogEntry) error {
	if err := s.check("append"); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	first, err := checkEntries(matchID, entries)
	if err != nil {
		return err
	}
	// bbolt keeps value slices until commit; the caller may reuse its own
	// once it stops waiting, so the store writes copies.
	payloads := make([][]byte, len(entries))
	for i, e := range entries {
		payloads[i] = bytes.Clone(nonNil(e.Payload))
	}
	return s.write(ctx, fmt.Sprintf("append to match %q at seq %d", matchID, first), func(tx *bolt.Tx) error {
		id := []byte(matchID)
		m, err := loadRecord(tx, fmt.Sprintf("append to match %q", matchID), id)
		if err != nil {
			return err
		}
		if m.epoch != epoch || m.lastSeq != first-1 {
			return rowState{found: true, epoch: m.epoch, lastSeq: m.lastSeq}.refusal("append to", matchID, epoch, first, false)
		}
		log := tx.Bucket(bucketLog).Bucket(id)
		if log == nil {
			return fmt.Errorf("append to match %q: log bucket missing: store is inconsistent", matchID)
		}
		// Seqs only grow, so full pages split less and waste no space.
		log.FillPercent = 1.0
		for i, p := range payloads {
			if err := log.Put(seqKey(first+int64(i)), p); err != nil {
				return fmt.Errorf("append to match %q at seq %d: %w", matchID, first+int64(i), err)
			}
		}
		m.lastSeq = first + int64(len(payloads)) - 1
		m.updatedAt = time.Now()
		if err := tx.Bucket(bucketMatches).Put(id, m.encode()); err != nil {
			return fmt.Errorf("append to match %q: %w", matchID, err)
		}
		return nil
	})
}

// SaveSnapshot implements Store.
func (s *EmbeddedStore) SaveSnapshot(ctx context.Context, matchID string, epoch int64, snap Snapshot) error {
	if err := s.check("save snapshot"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	if snap.Seq < 0 {
		return fmt.Errorf("save snapshot of match %q: seq %d is negative: %w", matchID, snap.Seq, ErrSeqGap)
	}
	value := encodeSnapshot(snap)
	op := fmt.Sprintf("save snapshot of match %q at seq %d", matchID, snap.Seq)
	return s.write(ctx, op, func(tx *bolt.Tx) error {
		id := []byte(matchID)
		m, err := loadRecord(tx, op, id)
		if err != nil {
			return err
		}
		if m.epoch != epoch || snap.Seq > m.lastSeq {
			return rowState{found: true, epoch: m.epoch, lastSeq: m.lastSeq}.refusal("save snapshot of", matchID, epoch, snap.Seq, true)
		}
		if err := tx.Bucket(bucketSnapshots).Put(id, value); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// MarkFinished implements Store.
func (s *EmbeddedStore) MarkFinished(ctx context.Context, matchID string, epoch int64) error {
	if err := s.check("mark finished"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	op := fmt.Sprintf("mark match %q finished", matchID)
	return s.write(ctx, op, func(tx *bolt.Tx) error {
		id := []byte(matchID)
		m, err := loadRecord(tx, op, id)
		if err != nil {
			return err
		}
		if m.epoch != epoch {
			return rowState{found: true, epoch: m.epoch, lastSeq: m.lastSeq}.refusal("mark finished", matchID, epoch, -1, false)
		}
		m.finished = true
		m.updatedAt = time.Now()
		if err := tx.Bucket(bucketMatches).Put(id, m.encode()); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if err := tx.Bucket(bucketUnfinished).Delete(id); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// ListUnfinished implements Store.
func (s *EmbeddedStore) ListUnfinished(ctx context.Context, after string, limit int) ([]MatchInfo, error) {
	if err := s.check("list unfinished"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list unfinished: limit %d must be positive", limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list unfinished: %w", err)
	}
	var out []MatchInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		matches := tx.Bucket(bucketMatches)
		c := tx.Bucket(bucketUnfinished).Cursor()
		k, _ := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			m, err := unfinishedRecord(matches, k)
			if err != nil {
				return err
			}
			out = append(out, MatchInfo{MatchID: string(k), Owner: m.owner, Epoch: m.epoch, UpdatedAt: m.updatedAt,
				Age: time.Since(m.updatedAt)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list unfinished after %q: %w", after, err)
	}
	return out, nil
}

// unfinishedRecord reads the record of k, a key of the unfinished index.
func unfinishedRecord(matches *bolt.Bucket, k []byte) (matchRecord, error) {
	raw := matches.Get(k)
	if raw == nil {
		return matchRecord{}, fmt.Errorf("unfinished match %q has no record: store is inconsistent", k)
	}
	m, err := decodeMatchRecord(raw)
	if err != nil {
		return matchRecord{}, fmt.Errorf("match %q: %w", k, err)
	}
	return m, nil
}

// ConsumeTicket implements Store. A used ticket's value is its expiry
// (timeKey) followed by the consumer; records written before consumers were
// kept have none, so they match nobody.
func (s *EmbeddedStore) ConsumeTicket(ctx context.Context, ticketID string, expiresAt time.Time, consumer string) error {
	if err := s.check("consume ticket"); err != nil {
		return err
	}
	if err := checkID("ticket id", ticketID); err != nil {
		return err
	}
	if len(consumer) > MaxIDBytes {
		return fmt.Errorf("persistence: ticket consumer length (%d) exceeds limit (%d)", len(consumer), MaxIDBytes)
	}
	// The ticket id stays out of errors: it identifies a bearer secret.
	return s.write(ctx, "consume ticket", func(tx *bolt.Tx) error {
		id := []byte(ticketID)
		tickets := tx.Bucket(bucketTickets)
		if v := tickets.Get(id); v != nil {
			if consumer != "" && len(v) > timeKeyLen && string(v[timeKeyLen:]) == consumer {
				return nil // the same connection again: its attach was retried
			}
			return fmt.Errorf("consume ticket: %w", ErrTicketUsed)
		}
		exp := timeKey(expiresAt)
		if err := tickets.Put(id, append(bytes.Clone(exp), consumer...)); err != nil {
			return fmt.Errorf("consume ticket: %w", err)
		}
		if err := tx.Bucket(bucketTicketExpiry).Put(append(exp, id...), nil); err != nil {
			return fmt.Errorf("consume ticket: index expiry: %w", err)
		}
		return nil
	})
}

// PurgeTickets implements Store.
func (s *EmbeddedStore) PurgeTickets(ctx context.Context, before time.Time) (int64, error) {
	if err := s.check("purge tickets"); err != nil {
		return 0, err
	}
	limit := timeKey(before)
	var n int64
	op := fmt.Sprintf("purge tickets expired before %s", before.Format(time.RFC3339))
	err := s.write(ctx, op, func(tx *bolt.Tx) error {
		n = 0
		tickets, expiry := tx.Bucket(bucketTickets), tx.Bucket(bucketTicketExpiry)
		c := expiry.Cursor()
		for k, _ := c.First(); len(k) >= timeKeyLen && bytes.Compare(k[:timeKeyLen], limit) < 0; k, _ = c.First() {
			// Copied: k points into the file, and the deletes below change it.
			k = bytes.Clone(k)
			if err := tickets.Delete(k[timeKeyLen:]); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			if err := expiry.Delete(k); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

var _ Store = (*EmbeddedStore)(nil)

// ReadLog implements LogReader.
func (s *EmbeddedStore) ReadLog(ctx context.Context, matchID string, from, to int64) ([]LogEntry, error) {
	if err := s.check("read log"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read log of %q: %w", matchID, err)
	}
	var out []LogEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		log := tx.Bucket(bucketLog).Bucket([]byte(matchID))
		if log == nil {
			return fmt.Errorf("read log of %q: %w", matchID, ErrMatchNotFound)
		}
		c := log.Cursor()
		for k, v := c.Seek(seqKey(max(from, 0))); k != nil && decodeSeq(k) <= to; k, v = c.Next() {
			out = append(out, LogEntry{Seq: decodeSeq(k), Payload: bytes.Clone(v)})
		}
		return nil
	})
	return out, err
}
