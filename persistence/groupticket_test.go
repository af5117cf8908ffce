package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestPGTicketsConsumedTogether: ticket consumptions that queue while one
// runs are recorded together, in a few statements instead of one each,
// with every rule of a consumption on its own: a new ticket is taken, the
// same connection's retry is taken again, and a ticket already used by
// another connection (or by none: an empty consumer) is refused; of two
// connections presenting one new ticket at once exactly one gets it.
func TestPGTicketsConsumedTogether(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t)
	s := pgtest.NewStore(t, persistence.WithSchema(schema), persistence.WithMaxConns(4), quiet())
	ctx := testContext(t)
	expires := time.Now().Add(time.Minute)
	for _, used := range []struct{ id, consumer string }{{"used-by-other", "other"}, {"retried", "edge/seat-r"}, {"used-by-none", ""}} {
		if err := s.ConsumeTicket(ctx, used.id, expires, used.consumer); err != nil {
			t.Fatal(err)
		}
	}

	// A session of the test's own holds an uncommitted row of ticket
	// "blocker": its consumption waits on it, and every consumption that
	// comes meanwhile queues behind the one running batch.
	tx, err := schemaConn(t, ctx, schema).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO used_tickets (ticket_id, expires_at, consumer) VALUES ('blocker', now() + interval '1 minute', 'x')"); err != nil {
		t.Fatal(err)
	}
	before := persistence.TicketBatches(s)
	blocked := make(chan error, 1)
	go func() { blocked <- s.ConsumeTicket(ctx, "blocker", expires, "edge/seat-b") }()
	pollFor(t, func() bool { return persistence.TicketBatches(s) == before+1 })

	type use struct{ id, consumer string }
	uses := []use{
		{"retried", "edge/seat-r"}, // the same connection again: taken
		{"used-by-other", "edge/seat-o"},
		{"used-by-none", ""},
		{"contested", "edge/seat-c1"}, {"contested", "edge/seat-c2"},
	}
	const fresh = 100
	for i := range fresh {
		uses = append(uses, use{fmt.Sprintf("fresh-%03d", i), fmt.Sprintf("edge/seat-%d", i)})
	}
	errs := make([]error, len(uses))
	var wg sync.WaitGroup
	for i, u := range uses {
		wg.Go(func() { errs[i] = s.ConsumeTicket(ctx, u.id, expires, u.consumer) })
	}
	pollFor(t, func() bool { return persistence.TicketsQueued(s) == len(uses) })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatalf("the blocker's consumption: %v", err)
	}
	wg.Wait()

	if errs[0] != nil {
		t.Errorf("the same connection's retried consumption: %v, want taken", errs[0])
	}
	for _, i := range []int{1, 2} {
		if !errors.Is(errs[i], persistence.ErrTicketUsed) {
			t.Errorf("%+v: %v, want ErrTicketUsed", uses[i], errs[i])
		}
	}
	if (errs[3] == nil) == (errs[4] == nil) || (errs[3] != nil && !errors.Is(errs[3], persistence.ErrTicketUsed)) ||
		(errs[4] != nil && !errors.Is(errs[4], persistence.ErrTicketUsed)) {
		t.Errorf("one new ticket presented by two connections: %v and %v, want exactly one taken", errs[3], errs[4])
	}
	for i, err := range errs[5:] {
		if err != nil {
			t.Errorf("%+v: %v", uses[5+i], err)
		}
	}
	// The blocker's batch, then the queue together; the second use of
	// "contested" waits for a batch of its own.
	if n := persistence.TicketBatches(s) - before; n > 3 {
		t.Errorf("%d consumptions took %d statements, want at most 3", len(uses)+1, n)
	}
	var rows int
	if err := schemaConn(t, ctx, schema).QueryRow(context.Background(), "SELECT count(*) FROM used_tickets WHERE ticket_id LIKE 'fresh-%'").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != fresh {
		t.Errorf("%d fresh tickets recorded, want %d", rows, fresh)
	}
}
