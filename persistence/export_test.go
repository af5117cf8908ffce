package persistence

import "context"

// BatchAppend is one append of a batch given to FlushBatch.
type BatchAppend struct {
	MatchID string
	Epoch   int64
	Entries []LogEntry
}

// FlushBatch sends appends through the group committer as one batch, as if
// they had queued up together, and returns each one's answer in order. It
// bypasses the dispatcher, so tests and benchmarks get batches of an exact
// shape; the caller must not have another append of these matches in
// flight. The store must have group commit on.
func FlushBatch(ctx context.Context, s *PostgresStore, appends []BatchAppend) []error {
	errs := make([]error, len(appends))
	reqs := make([]*appendReq, 0, len(appends))
	byReq := make(map[*appendReq]int, len(appends))
	for i, a := range appends {
		first, err := checkEntries(a.MatchID, a.Entries)
		if err != nil {
			errs[i] = err
			continue
		}
		r := &appendReq{ctx: ctx, matchID: a.MatchID, epoch: a.Epoch, first: first, entries: a.Entries, done: make(chan error, 1)}
		reqs = append(reqs, r)
		byReq[r] = i
	}
	if len(reqs) > 0 {
		// flush sorts its batch in place: answers are matched by request.
		s.group.flush(reqs)
	}
	for r, i := range byReq {
		errs[i] = <-r.done
	}
	return errs
}

// Names of the statements the append path prepares on each connection.
var (
	AppendOneStatement      = appendOneStmt.name
	AppendManyStatement     = appendManyStmt.name
	GroupAppendOneStatement = groupAppendOneStmt.name
)

// ClaimTogether claims matchIDs for owner in one grouped transaction, as if
// their claims had queued up together; the store must have group commit on.
func ClaimTogether(ctx context.Context, s *PostgresStore, owner string, matchIDs []string) (map[string]Recovery, error) {
	batch := make([]*claimReq, len(matchIDs))
	for i, id := range matchIDs {
		batch[i] = &claimReq{ctx: ctx, matchID: id, owner: owner, done: make(chan claimResult, 1)}
	}
	return s.claimTogether(batch)
}

// ClaimOneAtATime has s claim each match in a transaction of its own, as
// before grouped claims (benchmarks compare the two).
func ClaimOneAtATime(s *PostgresStore) { s.claims.batch = 1 }

// TicketBatches is how many batches of ticket consumptions s has run.
func TicketBatches(s *PostgresStore) int64 { return s.tickets.batches.Load() }

// TicketsQueued is how many ticket consumptions wait for a batch.
func TicketsQueued(s *PostgresStore) int {
	s.tickets.mu.Lock()
	defer s.tickets.mu.Unlock()
	return len(s.tickets.queue)
}
