package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is; every other error
// from a Store leaves the outcome of a write unknown (it may or may not have
// been stored), so the only safe reaction of an activation is to stop and let
// a fresh Claim find out what is durable.
var (
	// ErrMatchExists is returned by CreateMatch when the match id is taken.
	ErrMatchExists = errors.New("persistence: match already exists")
	// ErrMatchNotFound is returned when no match has the given id.
	ErrMatchNotFound = errors.New("persistence: match not found")
	// ErrFenced is returned by a write whose epoch is no longer the match's
	// current epoch, or whose log seq is already taken. Nothing was written.
	// The activation that gets it has lost ownership and must stop at once.
	ErrFenced = errors.New("persistence: fenced: a newer activation owns the match")
	// ErrSeqGap is returned when entries do not continue the log (the first
	// seq is past last seq + 1, or the entries are not consecutive) or when a
	// snapshot claims a seq beyond the last durable entry. Nothing was written.
	// It means the caller lost track of its own log: a bug, not a race.
	ErrSeqGap = errors.New("persistence: seq does not continue the log")
	// ErrTicketUsed is returned by ConsumeTicket when the ticket was consumed before.
	ErrTicketUsed = errors.New("persistence: ticket already used")
	// ErrClosed is returned by every call on a store after Close.
	ErrClosed = errors.New("persistence: store closed")
)

// Store is the durable home of matches. Every write that belongs to an
// activation carries its fencing epoch, so no caller can forget it.
//
// All methods are safe for concurrent use and may block on I/O; they honour
// ctx. A write returns only after it is durable (committed and synced, as far
// as the backend is configured to sync). Byte slices passed in are not
// retained after the call returns; byte slices returned belong to the caller.
type Store interface {
	// CreateMatch records a new match with opaque creation metadata, with
	// epoch 0 and no owner. ErrMatchExists if the id is taken.
	CreateMatch(ctx context.Context, matchID string, meta []byte) error
	// Claim makes owner the owner of the match: epoch := previous epoch + 1
	// (first claim => 1), and returns what recovery needs: the creation meta,
	// the latest snapshot (nil if none) and every log entry after the
	// snapshot's seq, ascending. From the moment Claim returns, writes with
	// older epochs are fenced. ErrMatchNotFound if the match does not exist.
	// A finished match can still be claimed (Recovery.Finished tells).
	Claim(ctx context.Context, matchID, owner string) (Recovery, error)
	// Append durably appends entries in one transaction, only if epoch is
	// still the match's current epoch and the first entry's seq is the last
	// seq + 1 (entries consecutive). ErrFenced if a newer epoch exists or the
	// seq is taken; ErrSeqGap for a gap; ErrMatchNotFound. Nothing is written
	// on error. An empty entries slice is a no-op.
	Append(ctx context.Context, matchID string, epoch int64, entries []LogEntry) error
	// SaveSnapshot stores snap as the match's latest snapshot, replacing the
	// previous one, fenced like Append. snap.Seq must be between 0 and the
	// last durable seq (ErrSeqGap otherwise). Log entries covered by the
	// snapshot are kept: retention is decided elsewhere.
	SaveSnapshot(ctx context.Context, matchID string, epoch int64, snap Snapshot) error
	// MarkFinished records that the match ended (fenced), so ListUnfinished
	// no longer returns it. Marking a finished match again is a no-op.
	MarkFinished(ctx context.Context, matchID string, epoch int64) error
	// ListUnfinished returns up to limit unfinished matches with ids greater
	// than after ("" = from the start), ordered by id bytes, so the last id
	// of one page is the after of the next. limit must be positive.
	ListUnfinished(ctx context.Context, after string, limit int) ([]MatchInfo, error)
	// ConsumeTicket records ticketID as used by consumer; ErrTicketUsed if
	// it was used before by anybody else. consumer names the one connection
	// that presents the ticket (the PID of the edge's seat, which no client
	// can choose), so that the same connection's attach, retried after its
	// answer was lost (the grain moved meanwhile), is accepted again while
	// any other use stays refused: a ticket opens a seat for one connection
	// only. An empty consumer never matches, not even itself. Of any number
	// of concurrent calls with one id and different consumers exactly one
	// succeeds. expiresAt is when the ticket stops being valid anyway, after
	// which PurgeTickets may forget it.
	ConsumeTicket(ctx context.Context, ticketID string, expiresAt time.Time, consumer string) error
	// PurgeTickets forgets used tickets that expired before the given time and
	// returns how many it removed. Pass a time safely in the past (allow for
	// clock skew): a purged ticket that is still valid could be used again.
	PurgeTickets(ctx context.Context, before time.Time) (int64, error)
	// Close releases the store's resources. Calls after Close return
	// ErrClosed; closing twice is harmless.
	Close() error
}

// LogEntry is one record of a match's append-only log. Seq starts at 1 for
// every match and has no gaps.
type LogEntry struct {
	Seq     int64
	Payload []byte
}

// Snapshot is the opaque state of a match after applying log entries 1..Seq.
type Snapshot struct {
	Seq  int64
	Data []byte
}

// LogReader reads back durable log entries, those a snapshot covers
// included (SaveSnapshot keeps them). Both stores here implement it; a
// reactivated match grain uses it to rebuild its event journal, so a client
// behind the snapshot point resumes from events (docs/protocol.md §13).
type LogReader interface {
	// ReadLog returns the entries with from <= seq <= to, ascending; fewer
	// when the log is shorter. ErrMatchNotFound if the match does not exist.
	ReadLog(ctx context.Context, matchID string, from, to int64) ([]LogEntry, error)
}

// Recovery is what a new activation needs to rebuild a match: the meta from
// CreateMatch, the latest snapshot (nil if none) and the log entries after
// it, ascending and gap-free.
type Recovery struct {
	// Epoch is the fencing token of the activation that claimed: pass it to
	// every write.
	Epoch    int64
	Meta     []byte
	Snapshot *Snapshot
	Tail     []LogEntry
	Finished bool
}

// LastSeq is the seq of the last durable log entry (0 if the log is empty):
// the next Append must start at LastSeq()+1.
func (r Recovery) LastSeq() int64 {
	if n := len(r.Tail); n > 0 {
		return r.Tail[n-1].Seq
	}
	if r.Snapshot != nil {
		return r.Snapshot.Seq
	}
	return 0
}

// MatchInfo describes an unfinished match for whoever re-activates orphans.
type MatchInfo struct {
	MatchID string
	// Owner is the last claimer ("" if never claimed), Epoch its epoch.
	Owner     string
	Epoch     int64
	UpdatedAt time.Time
	// Age is how long ago the match was last written (claimed, appended,
	// finished), measured by the store's clock, so it holds whatever the
	// caller's clock says. A reclaimer uses it as the owner's lease.
	Age time.Duration
}

// checkEntries validates an Append's entries without touching storage:
// seqs positive and consecutive. It returns the first seq.
func checkEntries(matchID string, entries []LogEntry) (int64, error) {
	first := entries[0].Seq
	if first < 1 {
		return 0, fmt.Errorf("append to match %q: first seq %d is below 1: %w", matchID, first, ErrSeqGap)
	}
	for i, e := range entries {
		if e.Seq != first+int64(i) {
			return 0, fmt.Errorf("append to match %q: entry %d has seq %d, want %d: %w",
				matchID, i, e.Seq, first+int64(i), ErrSeqGap)
		}
	}
	return first, nil
}

// MaxIDBytes is the longest match or ticket id a Store accepts. Ids are made
// by the server, so the limit only stops a bug (or an unchecked client value)
// from turning into oversized keys.
const MaxIDBytes = 512

// checkID rejects ids no backend should key on.
func checkID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("persistence: empty %s", kind)
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("persistence: %s length (%d) exceeds limit (%d)", kind, len(id), MaxIDBytes)
	}
	return nil
}

// rowState is a match's fencing state, read after a write was refused to
// tell the caller why.
type rowState struct {
	found   bool
	epoch   int64
	lastSeq int64
}

// refusal explains a refused write. firstSeq is the seq the write started at
// (Append), the snapshot seq (SaveSnapshot), or -1 when no seq is involved.
// It never returns nil: the write was refused, so if the row now looks
// writable it changed under us, which only a competing writer explains.
func (r rowState) refusal(op, matchID string, epoch, firstSeq int64, isSnapshot bool) error {
	switch {
	case !r.found:
		return fmt.Errorf("%s match %q: %w", op, matchID, ErrMatchNotFound)
	case r.epoch != epoch:
		return fmt.Errorf("%s match %q with epoch %d, current epoch is %d: %w", op, matchID, epoch, r.epoch, ErrFenced)
	case isSnapshot && firstSeq > r.lastSeq:
		return fmt.Errorf("%s match %q: snapshot seq %d is beyond last seq %d: %w", op, matchID, firstSeq, r.lastSeq, ErrSeqGap)
	case !isSnapshot && firstSeq > r.lastSeq+1:
		return fmt.Errorf("%s match %q: seq %d leaves a gap after last seq %d: %w", op, matchID, firstSeq, r.lastSeq, ErrSeqGap)
	case !isSnapshot && firstSeq >= 0 && firstSeq <= r.lastSeq:
		return fmt.Errorf("%s match %q: seq %d is taken (last seq %d): %w", op, matchID, firstSeq, r.lastSeq, ErrFenced)
	default:
		return fmt.Errorf("%s match %q with epoch %d: concurrent writer: %w", op, matchID, epoch, ErrFenced)
	}
}
