package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgrain/matchgrain/internal/sockio"
)

// PostgresStore is the Store for production: matches in PostgreSQL, shared
// by every node, fenced by the epoch column of each match's row.
//
// Every fenced write is a single statement that compare-and-sets the match
// row (epoch and last_seq) and writes its rows only if that succeeded, so it
// commits atomically in one round trip. Claim bumps the epoch under the same
// row lock, which orders every write strictly before or after a claim: no
// write of an old epoch can land once Claim has returned.
type PostgresStore struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	group  *groupCommitter // nil when group commit is off
	// claims runs claims on at most the pool's connections less the
	// group-commit writers, gathering those that wait (groupclaim.go); nil
	// with group commit off. pgxpool hands connections out in arrival
	// order, so without the bound a herd of claims after a member's death
	// (hundreds at once, each several round trips) queued every append of
	// the member's running matches behind the whole herd.
	claims *claimer
	// tickets gathers ticket consumptions (nil without group commit: one
	// statement each).
	tickets *ticketer
	closed  atomic.Bool
	once    sync.Once
	// unknownAppends counts appends whose outcome the database's absence
	// left unknown and that the store settled itself (resolveAppend).
	unknownAppends atomic.Uint64
}

// PostgresOption configures OpenPostgres.
type PostgresOption func(*pgOptions)

type pgOptions struct {
	schema   string
	maxConns int32
	logger   *slog.Logger
	group    *GroupCommitConfig // set by WithGroupCommit
	noGroup  bool               // set by WithoutGroupCommit
	observe  func(time.Duration)
	tcp      *TCPTimeouts // set by WithTCPTimeouts
}

// WithSchema keeps all tables in the named schema, creating it if needed
// (default: the connection's search_path, normally "public"). Tests use one
// schema each to share a database safely.
func WithSchema(name string) PostgresOption {
	return func(o *pgOptions) { o.schema = name }
}

// WithMaxConns sets the connection pool size (default: pool_max_conns from
// the URL, else pgxpool's default of max(4, NumCPU)). Appends hold a
// connection for one round trip each, so without group commit the pool size
// caps concurrent appends.
func WithMaxConns(n int32) PostgresOption {
	return func(o *pgOptions) { o.maxConns = n }
}

// WithLogger sets the logger for migrations and background errors (default
// slog.Default()). The store never logs payloads or connection strings.
func WithLogger(l *slog.Logger) PostgresOption {
	return func(o *pgOptions) { o.logger = l }
}

// WithGroupCommit tunes the group-commit writer, which sends appends of
// many matches in shared statements; see GroupCommitConfig. It is on by
// default (with the zero config) whenever the pool has at least two
// connections. Fencing and durability per append are the same either way.
func WithGroupCommit(cfg GroupCommitConfig) PostgresOption {
	return func(o *pgOptions) { o.group, o.noGroup = &cfg, false }
}

// WithoutGroupCommit sends every append in its own statement from the
// caller's goroutine: simpler to trace, but about ten times fewer durable
// appends per second with many active matches.
func WithoutGroupCommit() PostgresOption {
	return func(o *pgOptions) { o.group, o.noGroup = nil, true }
}

// WithStatementObserver has the group-commit writer report the time of
// each of its statements, from taking a pool connection for it (seldom a
// wait: the writers are fewer than the connections) to its answer, commit
// included, without the wait in the writer's queue before it: an append's
// whole wait minus this is the node's queueing. observe is called from the
// writers' goroutines, concurrently.
func WithStatementObserver(observe func(time.Duration)) PostgresOption {
	return func(o *pgOptions) { o.observe = observe }
}

// OpenPostgres connects to the database at url (a pgx connection string; it
// may carry pool_* parameters), applies the embedded schema migrations and
// returns the store. The caller must Close it.
//
// Appends run statements prepared by name on each connection, whatever
// default_query_exec_mode says, so a connection pooler between the store
// and PostgreSQL must keep prepared statements (PgBouncer in session mode,
// or 1.21+ with max_prepared_statements), as pgx's default mode needs too.
func OpenPostgres(ctx context.Context, url string, opts ...PostgresOption) (*PostgresStore, error) {
	o := pgOptions{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the connection string, password included.
		return nil, errors.New("persistence: invalid PostgreSQL connection string")
	}
	if o.schema != "" {
		// A runtime parameter, so every pooled connection resolves our
		// unqualified table names in the schema without a per-connection hook.
		cfg.ConnConfig.RuntimeParams["search_path"] = o.schema
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	tcp := DefaultTCPTimeouts
	if o.tcp != nil {
		tcp = *o.tcp
	}
	if err := tcp.validate(); err != nil {
		return nil, err
	}
	// The store's sockets read and write like the edge's (package sockio).
	cfg.ConnConfig.DialFunc = sockio.WrapDial(tcp.dialer(cfg.ConnConfig.ConnectTimeout).DialContext)
	if o.group == nil && !o.noGroup && cfg.MaxConns >= 2 {
		o.group = &GroupCommitConfig{}
	}
	if o.group != nil {
		if err := o.group.validate(int(cfg.MaxConns)); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: create pool: %w", err)
	}
	if err := migrate(ctx, pool, o.schema, o.logger); err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence: %w", err)
	}
	s := &PostgresStore{pool: pool, logger: o.logger}
	if o.group != nil {
		s.group = newGroupCommitter(s, *o.group, o.observe)
		s.claims = newClaimer(s, int(cfg.MaxConns)-o.group.Writers)
		s.tickets = newTicketer(s)
	}
	return s, nil
}

// Pool exposes the connection pool, for health checks and tests.
func (s *PostgresStore) Pool() *pgxpool.Pool { return s.pool }

// UnknownOutcomes counts the appends since the store opened whose first
// attempt ended without an answer (the primary died, a failover cut the
// connection) and that the store therefore settled by retrying.
func (s *PostgresStore) UnknownOutcomes() uint64 { return s.unknownAppends.Load() }

// GroupCommitStats reports the group-commit writer's counters (zero when
// group commit is off).
func (s *PostgresStore) GroupCommitStats() GroupCommitStats {
	if s.group == nil {
		return GroupCommitStats{}
	}
	return GroupCommitStats{
		Batches: s.group.batches.Load(),
		Appends: s.group.appends.Load(),
		Retries: s.group.retries.Load(),
	}
}

// Close stops the group committer (failing queued appends with ErrClosed)
// and closes the pool, waiting for connections in use to be returned.
func (s *PostgresStore) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		if s.group != nil {
			s.group.close()
		}
		s.pool.Close()
	})
	return nil
}

func (s *PostgresStore) check(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	return nil
}

// CreateMatch implements Store.
func (s *PostgresStore) CreateMatch(ctx context.Context, matchID string, meta []byte) error {
	if err := s.check("create match"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	if meta == nil {
		meta = []byte{}
	}
	err := s.insertMatch(ctx, matchID, meta)
	if err != nil && !errors.Is(err, ErrMatchExists) && unavailable(err) && ctx.Err() == nil {
		// The database went away mid-create: find out what happened, as
		// for an append (failover.go).
		return s.resolveCreate(ctx, matchID, meta, err)
	}
	return err
}

func (s *PostgresStore) insertMatch(ctx context.Context, matchID string, meta []byte) error {
	_, err := s.pool.Exec(ctx, "INSERT INTO matches (match_id, meta) VALUES ($1, $2)", matchID, meta)
	if isUniqueViolation(err) {
		return fmt.Errorf("create match %q: %w", matchID, ErrMatchExists)
	}
	if err != nil {
		return fmt.Errorf("create match %q: %w", matchID, err)
	}
	return nil
}

// Claim implements Store. The UPDATE takes the match row's lock and keeps it
// until commit; fenced writes need that lock too, so the snapshot and log
// read after it (READ COMMITTED: each statement sees everything committed
// before it) include every write the old epoch got acknowledged, and no
// old-epoch write can commit after it. With group commit on, claims that
// find the connections the writers leave busy wait and are claimed
// together (groupclaim.go).
func (s *PostgresStore) Claim(ctx context.Context, matchID, owner string) (Recovery, error) {
	if err := s.check("claim"); err != nil {
		return Recovery{}, err
	}
	if err := checkID("match id", matchID); err != nil {
		return Recovery{}, err
	}
	if s.claims != nil {
		return s.claims.claim(&claimReq{ctx: ctx, matchID: matchID, owner: owner, done: make(chan claimResult, 1)})
	}
	return s.claimOne(ctx, matchID, owner)
}

// claimOne is Claim of one match in a transaction of its own.
func (s *PostgresStore) claimOne(ctx context.Context, matchID, owner string) (Recovery, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return Recovery{}, fmt.Errorf("claim match %q: begin: %w", matchID, err)
	}
	defer rollback(ctx, tx, s.logger)

	var rec Recovery
	var lastSeq int64
	err = tx.QueryRow(ctx, `UPDATE matches SET epoch = epoch + 1, owner = $2, updated_at = now()
		WHERE match_id = $1 RETURNING epoch, meta, finished, last_seq`, matchID, owner).
		Scan(&rec.Epoch, &rec.Meta, &rec.Finished, &lastSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return Recovery{}, fmt.Errorf("claim match %q: %w", matchID, ErrMatchNotFound)
	}
	if err != nil {
		return Recovery{}, fmt.Errorf("claim match %q: bump epoch: %w", matchID, err)
	}

	var snap Snapshot
	err = tx.QueryRow(ctx, "SELECT seq, data FROM match_snapshots WHERE match_id = $1", matchID).Scan(&snap.Seq, &snap.Data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Recovery{}, fmt.Errorf("claim match %q: read snapshot: %w", matchID, err)
	default:
		rec.Snapshot = &snap
	}

	rows, err := tx.Query(ctx, "SELECT seq, payload FROM match_log WHERE match_id = $1 AND seq > $2 ORDER BY seq",
		matchID, snap.Seq)
	if err != nil {
		return Recovery{}, fmt.Errorf("claim match %q: read log: %w", matchID, err)
	}
	rec.Tail, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LogEntry, error) {
		var e LogEntry
		err := row.Scan(&e.Seq, &e.Payload)
		return e, err
	})
	if err != nil {
		return Recovery{}, fmt.Errorf("claim match %q: read log: %w", matchID, err)
	}
	if err := checkTail(matchID, snap.Seq, lastSeq, rec.Tail); err != nil {
		return Recovery{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Recovery{}, fmt.Errorf("claim match %q: commit: %w", matchID, err)
	}
	return rec, nil
}

// checkTail refuses to recover from a log that does not run gap-free from
// the snapshot to the recorded last seq: replaying it would rebuild a state
// that never existed.
func checkTail(matchID string, snapSeq, lastSeq int64, tail []LogEntry) error {
	if snapSeq > lastSeq {
		return fmt.Errorf("claim match %q: snapshot seq %d is beyond last seq %d: store is inconsistent", matchID, snapSeq, lastSeq)
	}
	if want := lastSeq - snapSeq; int64(len(tail)) != want {
		return fmt.Errorf("claim match %q: %d log entries after snapshot seq %d, want %d (last seq %d): store is inconsistent",
			matchID, len(tail), snapSeq, want, lastSeq)
	}
	for i, e := range tail {
		if e.Seq != snapSeq+1+int64(i) {
			return fmt.Errorf("claim match %q: log entry %d has seq %d, want %d: store is inconsistent",
				matchID, i, e.Seq, snapSeq+1+int64(i))
		}
	}
	return nil
}

// appendOneStmt compare-and-sets the match row, then inserts the entry only
// if the row matched: one statement, so one atomic commit. Nearly every
// append is one entry (one intent), so this form takes scalars ($1 match,
// $2 epoch, $3 the seq before the entry, $4 its payload): PostgreSQL
// neither decodes arrays nor runs unnest for it.
var appendOneStmt = pgStatement{
	name: "matchgrain_append_one",
	sql: `WITH claimed AS (
	UPDATE matches SET last_seq = $3 + 1, updated_at = now()
	WHERE match_id = $1 AND epoch = $2 AND last_seq = $3
	RETURNING match_id)
INSERT INTO match_log (match_id, seq, epoch, payload)
SELECT claimed.match_id, $3 + 1, $2, $4::bytea FROM claimed`,
	params: []uint32{pgtype.TextOID, pgtype.Int8OID, pgtype.Int8OID, pgtype.ByteaOID},
}

// appendManyStmt is appendOneStmt for several entries ($4 the last seq,
// $5 and $6 the entries' seqs and payloads).
var appendManyStmt = pgStatement{
	name: "matchgrain_append_many",
	sql: `WITH claimed AS (
	UPDATE matches SET last_seq = $4, updated_at = now()
	WHERE match_id = $1 AND epoch = $2 AND last_seq = $3
	RETURNING match_id)
INSERT INTO match_log (match_id, seq, epoch, payload)
SELECT claimed.match_id, e.seq, $2, e.payload
FROM claimed, unnest($5::bigint[], $6::bytea[]) AS e(seq, payload)`,
	params: []uint32{pgtype.TextOID, pgtype.Int8OID, pgtype.Int8OID, pgtype.Int8OID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID},
}

// Append implements Store.
func (s *PostgresStore) Append(ctx context.Context, matchID string, epoch int64, entries []LogEntry) error {
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
	if s.group != nil {
		// Copied: a caller whose ctx ends stops waiting and may reuse its
		// buffers while the batch is still being encoded.
		r := &appendReq{matchID: matchID, epoch: epoch, first: first}
		if len(entries) == 1 {
			r.entries = r.one[:] // the common case: no slice of its own
		} else {
			r.entries = make([]LogEntry, len(entries))
		}
		for i, e := range entries {
			r.entries[i] = LogEntry{Seq: e.Seq, Payload: bytes.Clone(nonNil(e.Payload))}
		}
		err = s.group.append(ctx, r)
	} else {
		err = s.appendDirect(ctx, matchID, epoch, first, entries)
	}
	if err != nil && !isSentinel(err) && unavailable(err) && ctx.Err() == nil {
		// The database went away mid-append: find out what happened rather
		// than leave the caller an unknown outcome (failover.go).
		return s.resolveAppend(ctx, matchID, epoch, first, entries, err)
	}
	return err
}

// appendDirect sends one append in its own statement. entries must be
// checked (checkEntries) and start at first.
func (s *PostgresStore) appendDirect(ctx context.Context, matchID string, epoch, first int64, entries []LogEntry) error {
	p := getParams()
	st := &appendOneStmt
	p.text(matchID)
	p.int8(epoch)
	p.int8(first - 1)
	if len(entries) == 1 {
		p.bytea(entries[0].Payload)
	} else {
		st = &appendManyStmt
		p.int8(first + int64(len(entries)) - 1)
		p.beginArray(pgtype.Int8OID, len(entries))
		for _, e := range entries {
			p.elemInt8(e.Seq)
		}
		p.endArray()
		p.beginArray(pgtype.ByteaOID, len(entries))
		for _, e := range entries {
			p.elemBytea(e.Payload)
		}
		p.endArray()
	}
	tag, err := s.execNoRows(ctx, st, p)
	putParams(p)
	if isUniqueViolation(err) {
		return fmt.Errorf("append to match %q at seq %d: %w", matchID, first, ErrFenced)
	}
	if err != nil {
		return fmt.Errorf("append to match %q at seq %d: %w", matchID, first, err)
	}
	if tag.RowsAffected() == int64(len(entries)) {
		return nil
	}
	return s.explain(ctx, "append to", matchID, epoch, first, false)
}

// explain reads the match row after a refused write and says why it was
// refused. The read is separate from the write, but nothing was written, and
// epochs only grow, so the reason it gives is true at least now.
func (s *PostgresStore) explain(ctx context.Context, op, matchID string, epoch, seq int64, isSnapshot bool) error {
	var r rowState
	err := s.pool.QueryRow(ctx, "SELECT epoch, last_seq FROM matches WHERE match_id = $1", matchID).Scan(&r.epoch, &r.lastSeq)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("%s match %q: write refused, reading why failed: %w", op, matchID, err)
	default:
		r.found = true
	}
	return r.refusal(op, matchID, epoch, seq, isSnapshot)
}

// saveSnapshotSQL share-locks the match row only if the epoch is current and
// the log reaches the snapshot's seq, then upserts the snapshot. The share
// lock makes a concurrent Claim wait, so the snapshot is never written by an
// epoch that Claim has already fenced.
const saveSnapshotSQL = `WITH owned AS (
	SELECT match_id FROM matches
	WHERE match_id = $1 AND epoch = $2 AND last_seq >= $3
	FOR SHARE)
INSERT INTO match_snapshots (match_id, seq, epoch, data, saved_at)
SELECT match_id, $3, $2, $4, now() FROM owned
ON CONFLICT (match_id) DO UPDATE
SET seq = EXCLUDED.seq, epoch = EXCLUDED.epoch, data = EXCLUDED.data, saved_at = EXCLUDED.saved_at`

// SaveSnapshot implements Store.
func (s *PostgresStore) SaveSnapshot(ctx context.Context, matchID string, epoch int64, snap Snapshot) error {
	if err := s.check("save snapshot"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	if snap.Seq < 0 {
		return fmt.Errorf("save snapshot of match %q: seq %d is negative: %w", matchID, snap.Seq, ErrSeqGap)
	}
	tag, err := s.pool.Exec(ctx, saveSnapshotSQL, matchID, epoch, snap.Seq, nonNil(snap.Data))
	if err != nil {
		return fmt.Errorf("save snapshot of match %q at seq %d: %w", matchID, snap.Seq, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.explain(ctx, "save snapshot of", matchID, epoch, snap.Seq, true)
}

// MarkFinished implements Store.
func (s *PostgresStore) MarkFinished(ctx context.Context, matchID string, epoch int64) error {
	if err := s.check("mark finished"); err != nil {
		return err
	}
	if err := checkID("match id", matchID); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, "UPDATE matches SET finished = true, updated_at = now() WHERE match_id = $1 AND epoch = $2",
		matchID, epoch)
	if err != nil {
		return fmt.Errorf("mark match %q finished: %w", matchID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.explain(ctx, "mark finished", matchID, epoch, -1, false)
}

// ListUnfinished implements Store.
func (s *PostgresStore) ListUnfinished(ctx context.Context, after string, limit int) ([]MatchInfo, error) {
	if err := s.check("list unfinished"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list unfinished: limit %d must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT match_id, owner, epoch, updated_at,
		(extract(epoch FROM now() - updated_at) * 1000000)::bigint FROM matches
		WHERE NOT finished AND match_id > $1 ORDER BY match_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list unfinished after %q: %w", after, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MatchInfo, error) {
		var m MatchInfo
		var ageMicros int64
		err := row.Scan(&m.MatchID, &m.Owner, &m.Epoch, &m.UpdatedAt, &ageMicros)
		m.Age = time.Duration(ageMicros) * time.Microsecond
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list unfinished after %q: %w", after, err)
	}
	return out, nil
}

// ConsumeTicket implements Store. ON CONFLICT waits for a concurrent insert
// of the same id to commit, so exactly one caller inserts; a later call
// touches the existing row (and so gets a row back) only if it records the
// same non-empty consumer.
func (s *PostgresStore) ConsumeTicket(ctx context.Context, ticketID string, expiresAt time.Time, consumer string) error {
	if err := s.check("consume ticket"); err != nil {
		return err
	}
	if err := checkID("ticket id", ticketID); err != nil {
		return err
	}
	if len(consumer) > MaxIDBytes {
		return fmt.Errorf("persistence: ticket consumer length (%d) exceeds limit (%d)", len(consumer), MaxIDBytes)
	}
	if s.tickets != nil {
		return s.tickets.consume(&ticketReq{ctx: ctx, ticketID: ticketID, expires: expiresAt, consumer: consumer, done: make(chan error, 1)})
	}
	return s.consumeOne(ctx, ticketID, expiresAt, consumer)
}

// consumeOne records one ticket in a statement of its own.
func (s *PostgresStore) consumeOne(ctx context.Context, ticketID string, expiresAt time.Time, consumer string) error {
	taken, err := s.recordTickets(ctx, []string{ticketID}, []time.Time{expiresAt}, []string{consumer})
	if err != nil {
		// The ticket id is a bearer secret's identifier: errors never name it.
		return fmt.Errorf("consume ticket: %w", err)
	}
	if !taken[ticketID] {
		return fmt.Errorf("consume ticket: %w", ErrTicketUsed)
	}
	return nil
}

// PurgeTickets implements Store.
func (s *PostgresStore) PurgeTickets(ctx context.Context, before time.Time) (int64, error) {
	if err := s.check("purge tickets"); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM used_tickets WHERE expires_at < $1", before)
	if err != nil {
		return 0, fmt.Errorf("purge tickets expired before %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}

// isUniqueViolation reports a primary key or unique constraint violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// nonNil maps nil to an empty slice: the columns are NOT NULL, and nil and
// empty payloads mean the same to callers.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

var _ Store = (*PostgresStore)(nil)

// ReadLog implements LogReader.
func (s *PostgresStore) ReadLog(ctx context.Context, matchID string, from, to int64) ([]LogEntry, error) {
	if err := s.check("read log"); err != nil {
		return nil, err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM matches WHERE match_id = $1)", matchID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("read log of %q: %w", matchID, err)
	}
	if !exists {
		return nil, fmt.Errorf("read log of %q: %w", matchID, ErrMatchNotFound)
	}
	rows, err := s.pool.Query(ctx, "SELECT seq, payload FROM match_log WHERE match_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq",
		matchID, from, to)
	if err != nil {
		return nil, fmt.Errorf("read log of %q, seq %d..%d: %w", matchID, from, to, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LogEntry, error) {
		var e LogEntry
		err := row.Scan(&e.Seq, &e.Payload)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read log of %q, seq %d..%d: %w", matchID, from, to, err)
	}
	return out, nil
}
