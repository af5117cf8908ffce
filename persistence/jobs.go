package persistence

import (
	"context"
	"log/slog"
	"time"
)

// Store jobs: housekeeping every member may run on a ticker. Deletes of the
// same rows are idempotent, so members need not agree on who runs them.
const (
	// PruneBatch is how many matches one retention statement prunes.
	PruneBatch = 500
	// TicketPurgeInterval is how often used-ticket records are purged.
	TicketPurgeInterval = 10 * time.Minute
	// jobCallTimeout bounds one statement of a job.
	jobCallTimeout = time.Minute
)

// PruneFinishedEvery is the retention job (docs/operations.md §5): every
// interval until ctx ends it deletes, PruneBatch matches at a time, the
// logs of matches that finished more than after ago and whose final
// snapshot covers the log. A failed statement is logged and retried at the
// next tick.
func PruneFinishedEvery(ctx context.Context, rs Retention, after, interval time.Duration, log *slog.Logger) {
	every(ctx, interval, func() {
		var total, entries int64
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, jobCallTimeout)
			m, e, err := rs.PruneFinishedLogs(pctx, time.Now().Add(-after), PruneBatch)
			cancel()
			if err != nil {
				log.Warn("retention: prune finished logs", "err", err)
				break
			}
			total, entries = total+m, entries+e
			if m < PruneBatch {
				break
			}
		}
		if total > 0 {
			log.Info("retention: pruned the logs of finished matches", "matches", total, "entries", entries)
		}
	})
}

// TicketPurger is the part of a Store the ticket purge job uses.
type TicketPurger interface {
	PurgeTickets(ctx context.Context, before time.Time) (int64, error)
}

// PurgeTicketsEvery forgets used-ticket records every interval until ctx
// ends, from a minute after their tickets expired: an expired ticket is
// refused by its signature check anyway, so the record no longer protects
// anything.
func PurgeTicketsEvery(ctx context.Context, s TicketPurger, interval time.Duration, log *slog.Logger) {
	every(ctx, interval, func() {
		pctx, cancel := context.WithTimeout(ctx, jobCallTimeout)
		n, err := s.PurgeTickets(pctx, time.Now().Add(-time.Minute))
		cancel()
		if err != nil {
			log.Warn("purge used tickets", "err", err)
			return
		}
		log.Debug("purged used tickets", "count", n)
	})
}

// every runs job at each tick of interval (the first one interval after
// the start) until ctx ends.
func every(ctx context.Context, interval time.Duration, job func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			job()
		}
	}
}
