package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchgrain/matchgrain/internal/deadline"
)

// GroupCommitConfig tunes the group-commit writer of a PostgresStore: appends
// that arrive while earlier ones are in flight are gathered and sent together
// in one statement, so 1,000 matches appending at once cost a few round trips
// and commits instead of 1,000. Each append in a batch is still fenced on its
// own (one failing append does not fail the others), and Append still
// returns only after its batch committed. There is no timer: an append that
// finds a writer idle is sent at once, so a quiet store has plain latency.
type GroupCommitConfig struct {
	// MaxBatch is the most appends (each of a different match) in one
	// statement. Default 256.
	MaxBatch int
	// Writers is how many batches may be in flight at once, each holding one
	// pool connection. It must be less than the pool size, so that claims and
	// reads still get connections. Default: half the pool size.
	Writers int
	// Timeout bounds one batch statement. Default 10s.
	Timeout time.Duration
}

// validate fills in defaults and checks the config against the pool size.
func (c *GroupCommitConfig) validate(poolSize int) error {
	if c.MaxBatch == 0 {
		c.MaxBatch = 256
	}
	if c.Writers == 0 {
		c.Writers = max(1, poolSize/2)
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	switch {
	case c.MaxBatch < 1:
		return fmt.Errorf("persistence: group commit max batch (%d) must be positive", c.MaxBatch)
	case c.Writers < 1:
		return fmt.Errorf("persistence: group commit writers (%d) must be positive", c.Writers)
	case c.Timeout < 0:
		return fmt.Errorf("persistence: group commit timeout (%s) must be positive", c.Timeout)
	case c.Writers >= poolSize:
		return fmt.Errorf("persistence: group commit writers (%d) must be fewer than pool connections (%d)",
			c.Writers, poolSize)
	}
	return nil
}

// GroupCommitStats counts the group-commit writer's work since the store
// opened; Appends / Batches is the average batch size.
type GroupCommitStats struct {
	// Batches is how many statements were sent (a lone append is one too).
	Batches uint64
	// Appends is how many Append calls those statements carried.
	Appends uint64
	// Retries is how many batches the server rejected as a whole and that
	// were therefore retried one append at a time.
	Retries uint64
}

// appendReq is one Append waiting for its batch.
type appendReq struct {
	ctx     context.Context
	matchID string
	epoch   int64
	first   int64
	entries []LogEntry
	done    chan error // buffered: the dispatcher never blocks on a caller
	// one holds the entry of a one-entry append (nearly all of them), so
	// that its copy needs no allocation besides the request's own.
	one [1]LogEntry
}

// groupCommitter owns the queue of appends. One dispatcher goroutine keeps
// the queue and the set of matches in flight; at most one append per match
// is in flight at a time, which keeps a match's appends in order and means
// concurrent batches never lock the same match row.
type groupCommitter struct {
	store   *PostgresStore
	cfg     GroupCommitConfig
	logger  *slog.Logger
	reqs    chan *appendReq
	quit    chan struct{}
	stopped chan struct{}
	ctx     context.Context // cancelled by close, after in-flight batches finish
	cancel  context.CancelFunc
	// batchDeadline bounds each batch statement by Timeout; the batches of
	// one tick share a context (internal/deadline).
	batchDeadline *deadline.Shared

	batches, appends, retries atomic.Uint64
	// observeStatement, if set, gets each statement's time (WithStatementObserver).
	observeStatement func(time.Duration)
}

func newGroupCommitter(s *PostgresStore, cfg GroupCommitConfig, observe func(time.Duration)) *groupCommitter {
	ctx, cancel := context.WithCancel(context.Background())
	g := &groupCommitter{
		store:   s,
		cfg:     cfg,
		logger:  s.logger,
		reqs:    make(chan *appendReq),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,

		batchDeadline: deadline.New(ctx, cfg.Timeout),

		observeStatement: observe,
	}
	go g.run()
	return g
}

// close fails queued appends with ErrClosed, waits for in-flight batches and
// stops the dispatcher.
func (g *groupCommitter) close() {
	close(g.quit)
	<-g.stopped
	g.cancel()
}

// append queues r and waits for its outcome. If ctx ends while r is in a
// batch already sent, the outcome is unknown, like any cancelled write.
func (g *groupCommitter) append(ctx context.Context, r *appendReq) error {
	r.ctx = ctx
	r.done = make(chan error, 1)
	select {
	case g.reqs <- r:
	case <-ctx.Done():
		return fmt.Errorf("append to match %q at seq %d: %w", r.matchID, r.first, ctx.Err())
	case <-g.quit:
		// Closing: the dispatcher no longer takes requests while it waits
		// for the batches in flight, which may take a while.
		return fmt.Errorf("append to match %q: %w", r.matchID, ErrClosed)
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		// Both may be ready at once: a process that was stopped (SIGSTOP,
		// a long pause) wakes with its deadline passed and the database's
		// answer already in. A known outcome beats an unknown one, which
		// would stop the grain for nothing.
		select {
		case err := <-r.done:
			return err
		default:
		}
		return fmt.Errorf("append to match %q at seq %d: outcome unknown: %w", r.matchID, r.first, ctx.Err())
	}
}

// run is the dispatcher: it queues appends, hands batches to at most
// Writers flush goroutines, and frees a batch's matches when it is done.
func (g *groupCommitter) run() {
	defer close(g.stopped)
	var queue []*appendReq
	inflight := make(map[string]struct{})
	finished := make(chan []*appendReq)
	busy := 0
	for {
		for busy < g.cfg.Writers && len(queue) > 0 {
			var batch []*appendReq
			batch, queue = g.take(queue, inflight)
			if len(batch) == 0 {
				break
			}
			busy++
			go func() {
				g.flush(batch)
				finished <- batch
			}()
		}
		select {
		case r := <-g.reqs:
			queue = append(queue, r)
		case b := <-finished:
			busy--
			for _, r := range b {
				delete(inflight, r.matchID)
			}
		case <-g.quit:
			for _, r := range queue {
				r.done <- fmt.Errorf("append to match %q: %w", r.matchID, ErrClosed)
			}
			for ; busy > 0; busy-- {
				<-finished
			}
			return
		}
	}
}

// take moves up to MaxBatch appends of distinct matches that are not in
// flight from queue into a batch, keeping the rest in order. Appends whose
// caller already gave up are answered and dropped here, before they are sent.
func (g *groupCommitter) take(queue []*appendReq, inflight map[string]struct{}) (batch, rest []*appendReq) {
	rest = queue[:0]
	for _, r := range queue {
		if err := r.ctx.Err(); err != nil {
			r.done <- fmt.Errorf("append to match %q at seq %d: %w", r.matchID, r.first, err)
			continue
		}
		if _, busy := inflight[r.matchID]; busy || len(batch) >= g.cfg.MaxBatch {
			rest = append(rest, r)
			continue
		}
		inflight[r.matchID] = struct{}{}
		batch = append(batch, r)
	}
	// Zero the tail so answered requests can be collected.
	clear(queue[len(rest):])
	return batch, rest
}

// groupAppendOneStmt is appendOneStmt for many matches, one entry each
// (the common batch): every request row ($1..$4: match, epoch, the seq
// before its entry, the entry's payload) compare-and-sets its own match
// row, and the entries of the rows that matched are inserted straight from
// what the update returns. It returns the ordinals (1-based positions in
// the arrays) of the requests that were appended.
var groupAppendOneStmt = pgStatement{
	name: "matchgrain_group_append_one",
	sql: `WITH req AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bytea[])
		WITH ORDINALITY AS r(match_id, epoch, prev_seq, payload, i)
), claimed AS (
	UPDATE matches AS m SET last_seq = req.prev_seq + 1, updated_at = now()
	FROM req
	WHERE m.match_id = req.match_id AND m.epoch = req.epoch AND m.last_seq = req.prev_seq
	RETURNING req.i, m.match_id, req.epoch, req.prev_seq, req.payload
), inserted AS (
	INSERT INTO match_log (match_id, seq, epoch, payload)
	SELECT match_id, prev_seq + 1, epoch, payload FROM claimed
)
SELECT i FROM claimed`,
	params: []uint32{pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID},
}

// groupAppendManyStmt is groupAppendOneStmt for a batch in which some
// request has several entries: the requests ($1..$4: match, epoch, seq
// before, last seq) are compare-and-set as above, and the entries ($5..$7:
// the ordinal of their request, seq, payload) of the requests that matched
// are inserted. It returns the ordinals of the requests that were appended.
var groupAppendManyStmt = pgStatement{
	name: "matchgrain_group_append_many",
	sql: `WITH req AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
		WITH ORDINALITY AS r(match_id, epoch, prev_seq, last_seq, i)
), claimed AS (
	UPDATE matches AS m SET last_seq = req.last_seq, updated_at = now()
	FROM req
	WHERE m.match_id = req.match_id AND m.epoch = req.epoch AND m.last_seq = req.prev_seq
	RETURNING req.i, m.match_id, req.epoch
), inserted AS (
	INSERT INTO match_log (match_id, seq, epoch, payload)
	SELECT claimed.match_id, e.seq, claimed.epoch, e.payload
	FROM unnest($5::bigint[], $6::bigint[], $7::bytea[]) AS e(i, seq, payload)
	JOIN claimed ON claimed.i = e.i
)
SELECT i FROM claimed`,
	params: []uint32{pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID,
		pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID},
}

// encodeBatch writes the parameters of batch (sorted, at least two
// requests) for the statement it returns.
func encodeBatch(p *pgParams, batch []*appendReq) *pgStatement {
	n, entries := len(batch), 0
	for _, r := range batch {
		entries += len(r.entries)
	}
	p.beginArray(pgtype.TextOID, n)
	for _, r := range batch {
		p.elemText(r.matchID)
	}
	p.endArray()
	p.beginArray(pgtype.Int8OID, n)
	for _, r := range batch {
		p.elemInt8(r.epoch)
	}
	p.endArray()
	p.beginArray(pgtype.Int8OID, n)
	for _, r := range batch {
		p.elemInt8(r.first - 1)
	}
	p.endArray()
	if entries == n { // one entry each
		p.beginArray(pgtype.ByteaOID, n)
		for _, r := range batch {
			p.elemBytea(r.entries[0].Payload)
		}
		p.endArray()
		return &groupAppendOneStmt
	}
	p.beginArray(pgtype.Int8OID, n)
	for _, r := range batch {
		p.elemInt8(r.first + int64(len(r.entries)) - 1)
	}
	p.endArray()
	p.beginArray(pgtype.Int8OID, entries)
	for i, r := range batch {
		for range r.entries {
			p.elemInt8(int64(i + 1))
		}
	}
	p.endArray()
	p.beginArray(pgtype.Int8OID, entries)
	for _, r := range batch {
		for _, e := range r.entries {
			p.elemInt8(e.Seq)
		}
	}
	p.endArray()
	p.beginArray(pgtype.ByteaOID, entries)
	for _, r := range batch {
		for _, e := range r.entries {
			p.elemBytea(e.Payload)
		}
	}
	p.endArray()
	return &groupAppendManyStmt
}

// observed reports the time of a statement sent at start, if anyone asked.
func (g *groupCommitter) observed(start time.Time) {
	if g.observeStatement != nil {
		g.observeStatement(time.Since(start))
	}
}

// flush writes one batch and answers every request in it.
func (g *groupCommitter) flush(batch []*appendReq) {
	ctx := g.batchDeadline.Context()
	g.batches.Add(1)
	g.appends.Add(uint64(len(batch)))
	if len(batch) == 1 {
		r := batch[0]
		start := time.Now()
		err := g.store.appendDirect(ctx, r.matchID, r.epoch, r.first, r.entries)
		g.observed(start)
		r.done <- err
		return
	}
	// Sorted, so that batches on different nodes lock rows in one order as
	// far as the plan follows the input; see the package doc on deadlocks.
	slices.SortFunc(batch, func(a, b *appendReq) int { return strings.Compare(a.matchID, b.matchID) })

	p := getParams()
	st := encodeBatch(p, batch)
	// appended[i] is set when the statement returned ordinal i+1; it counts
	// only once the statement committed.
	appended := make([]bool, len(batch))
	start := time.Now()
	err := execOrdinals(ctx, g.store.pool, st, p, func(i int64) error {
		if i < 1 || i > int64(len(batch)) || appended[i-1] {
			return fmt.Errorf("%s returned ordinal %d for a batch of %d", st.name, i, len(batch))
		}
		appended[i-1] = true
		return nil
	})
	g.observed(start)
	putParams(p)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && !unavailable(err):
		// The server rejected the whole statement (a seq already taken, a
		// deadlock with another node's batch): nothing of it committed, so
		// each append can safely be retried alone and get its own answer.
		// (A server going away is different: a session terminated while it
		// waited for the synchronous standby has committed locally.)
		g.retries.Add(1)
		g.logger.Debug("persistence: group append failed, retrying one by one",
			"appends", len(batch), "sqlstate", pgErr.Code)
		for _, r := range batch {
			r.done <- g.store.appendDirect(ctx, r.matchID, r.epoch, r.first, r.entries)
		}
		return
	case err != nil:
		// Connection lost, timed out or terminated: the batch may or may not
		// have committed. Each caller settles its own append (Append).
		for _, r := range batch {
			r.done <- fmt.Errorf("append to match %q at seq %d (group of %d): %w", r.matchID, r.first, len(batch), err)
		}
		return
	}
	var unanswered []*appendReq
	for i, r := range batch {
		if appended[i] {
			r.done <- nil
		} else {
			unanswered = append(unanswered, r)
		}
	}
	if len(unanswered) > 0 {
		g.explainAll(ctx, unanswered)
	}
}

// explainAll answers refused requests of a batch with one read of their rows.
func (g *groupCommitter) explainAll(ctx context.Context, reqs []*appendReq) {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.matchID
	}
	state := make(map[string]rowState, len(reqs))
	rows, err := g.store.pool.Query(ctx, "SELECT match_id, epoch, last_seq FROM matches WHERE match_id = ANY($1)", ids)
	if err == nil {
		var id string
		var st rowState
		_, err = pgx.ForEachRow(rows, []any{&id, &st.epoch, &st.lastSeq}, func() error {
			st.found = true
			state[id] = st
			return nil
		})
	}
	for _, r := range reqs {
		if err != nil {
			r.done <- fmt.Errorf("append to match %q: write refused, reading why failed: %w", r.matchID, err)
			continue
		}
		r.done <- state[r.matchID].refusal("append to", r.matchID, r.epoch, r.first, false)
	}
}
