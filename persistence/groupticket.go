package persistence

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Grouped ticket consumption. When a member dies, every player whose
// connection it held reconnects at once, and each hello consumes its
// ticket: an INSERT and a commit that waits for the WAL to reach disk,
// thousands of them while the survivors' claims and appends hold the
// pool. Consumptions that arrive while one runs are gathered and recorded
// together, in one statement and one commit. As with claims there is no
// timer: a consumption that finds the consumer free runs at once and
// alone, as before.
//
// A batch never weakens the rule that a ticket opens a seat for one
// connection: a batch holds each ticket id once (a second use of an id
// waits for the next batch, so that it meets the first one's row), and
// the statement's conflict rule is the single statement's.

// maxTicketBatch bounds the tickets recorded in one statement.
const maxTicketBatch = 256

// ticketWorkers is how many batches run at once: one statement at a time
// already records a herd's tickets in a few commits, and every other
// connection of the pool stays with claims and appends.
const ticketWorkers = 1

type ticketReq struct {
	ctx      context.Context
	ticketID string
	expires  time.Time
	consumer string
	done     chan error // buffered: a worker never blocks on a caller that left
}

// ticketer gathers ticket consumptions (gatherer's batches of distinct
// ticket ids).
type ticketer struct {
	gatherer[*ticketReq]
	// batches counts the batches run, for tests.
	batches atomic.Int64
}

func newTicketer(s *PostgresStore) *ticketer {
	t := &ticketer{}
	t.gatherer = gatherer[*ticketReq]{workers: ticketWorkers, batch: maxTicketBatch,
		ctx: func(r *ticketReq) context.Context { return r.ctx },
		key: func(r *ticketReq) string { return r.ticketID },
		run: func(batch []*ticketReq) {
			t.batches.Add(1)
			s.consumeBatch(batch)
		}}
	return t
}

// consume queues r and returns its outcome.
func (t *ticketer) consume(r *ticketReq) error {
	t.add(r)
	select {
	case err := <-r.done:
		return err
	case <-r.ctx.Done():
		return fmt.Errorf("consume ticket: %w", r.ctx.Err())
	}
}

// consumeBatch records every ticket of batch and answers each request.
func (s *PostgresStore) consumeBatch(batch []*ticketReq) {
	if len(batch) == 1 {
		r := batch[0]
		r.done <- s.consumeOne(r.ctx, r.ticketID, r.expires, r.consumer)
		return
	}
	taken, err := s.consumeTogether(batch)
	for _, r := range batch {
		switch {
		case err != nil:
			// The statement failed as a whole (a lost connection, a
			// deadline): nothing was recorded; each tries alone, with
			// its own context.
			r.done <- s.consumeOne(r.ctx, r.ticketID, r.expires, r.consumer)
		case taken[r.ticketID]:
			r.done <- nil
		default:
			r.done <- fmt.Errorf("consume ticket: %w", ErrTicketUsed)
		}
	}
}

// consumeTogether records the tickets of batch (distinct ids) in one
// statement, within the latest of their deadlines (recordTickets).
func (s *PostgresStore) consumeTogether(batch []*ticketReq) (map[string]bool, error) {
	ctx, cancel := batchContext(batch, func(r *ticketReq) context.Context { return r.ctx })
	defer cancel()
	ids := make([]string, len(batch))
	expires := make([]time.Time, len(batch))
	consumers := make([]string, len(batch))
	for i, r := range batch {
		ids[i], expires[i], consumers[i] = r.ticketID, r.expires, r.consumer
	}
	return s.recordTickets(ctx, ids, expires, consumers)
}

// recordTickets records tickets (distinct ids, with their expiries and
// consumers) in one statement and returns those now recorded for their
// consumer: new ones, and ones the same consumer had recorded before (a
// retried attach). A ticket recorded for another consumer, or for none
// (an empty consumer is never anyone's retry), is not returned: used.
// Every consumption goes through this one statement, alone or gathered.
func (s *PostgresStore) recordTickets(ctx context.Context, ids []string, expires []time.Time, consumers []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `INSERT INTO used_tickets (ticket_id, expires_at, consumer)
		SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[])
		ON CONFLICT (ticket_id) DO UPDATE SET consumer = EXCLUDED.consumer
		WHERE used_tickets.consumer = EXCLUDED.consumer AND EXCLUDED.consumer <> ''
		RETURNING ticket_id`, ids, expires, consumers)
	if err != nil {
		return nil, fmt.Errorf("consume %d tickets: %w", len(ids), err)
	}
	defer rows.Close()
	taken := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("consume %d tickets: %w", len(ids), err)
		}
		taken[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("consume %d tickets: %w", len(ids), err)
	}
	return taken, nil
}
