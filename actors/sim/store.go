package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/actors/internal/mutate"
	"github.com/matchgrain/matchgrain/persistence"
)

// Store is an in-memory persistence.Store (and LogReader) with the fencing
// rules of persistence/store.go, checked by the same conformance suite as
// the real stores (persistence/storetest). Its faults are armed by the
// simulator: Fault decides the fate of each call. Every write landing is
// also checked against the one-writer rule (Violation), independently of
// the fence that should enforce it.
//
// It is safe for concurrent use (the conformance suite needs that); the
// simulator calls it from one goroutine.
type Store struct {
	mu      sync.Mutex
	matches map[string]*row
	tickets map[string]ticket
	now     func() time.Time
	// Fault, if set, decides each call's fate before it runs.
	Fault func(op string) Fate
	// OnAppend, if set, sees every entry that lands in a log.
	OnAppend func(persistence.LogEntry)
	// Violation, if set, is called when a write lands under an epoch older
	// than the match's current one.
	Violation func(error)
	closed    bool
}

// Fate is what happens to one store call.
type Fate uint8

// The fates of a store call.
const (
	// Ok: the call runs and answers.
	Ok Fate = iota
	// Fail: the call does not run and answers an error (nothing written).
	Fail
	// LoseReply: the call runs, then answers an error anyway (the outcome
	// the caller cannot know).
	LoseReply
)

type row struct {
	meta     []byte
	epoch    int64
	owner    string
	log      []persistence.LogEntry
	snap     *persistence.Snapshot
	finished bool
	updated  time.Time
}

type ticket struct {
	consumer string
	expires  time.Time
}

// errInjected is the error of a failed or lost call.
var errInjected = fmt.Errorf("sim store: injected fault (outcome unknown)")

// NewStore returns an empty store whose clock is now (time.Now if nil).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{matches: map[string]*row{}, tickets: map[string]ticket{}, now: now}
}

func (s *Store) begin(ctx context.Context, op string) (Fate, error) {
	if err := ctx.Err(); err != nil {
		return Ok, fmt.Errorf("sim store %s: %w", op, err)
	}
	if s.closed {
		return Ok, persistence.ErrClosed
	}
	f := Ok
	if s.Fault != nil {
		f = s.Fault(op)
	}
	if f == Fail {
		return f, fmt.Errorf("sim store %s: %w", op, errInjected)
	}
	return f, nil
}

func (s *Store) end(f Fate, op string, err error) error {
	if err == nil && f == LoseReply {
		return fmt.Errorf("sim store %s: reply lost: %w", op, errInjected)
	}
	return err
}

func checkID(kind, id string) error {
	if id == "" || len(id) > persistence.MaxIDBytes {
		return fmt.Errorf("sim store: bad %s %q", kind, id)
	}
	return nil
}

// CreateMatch implements persistence.Store.
func (s *Store) CreateMatch(ctx context.Context, id string, meta []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "CreateMatch")
	if err != nil {
		return err
	}
	if err := checkID("match id", id); err != nil {
		return err
	}
	if _, ok := s.matches[id]; ok {
		return s.end(f, "CreateMatch", persistence.ErrMatchExists)
	}
	s.matches[id] = &row{meta: slices.Clone(meta), updated: s.now()}
	return s.end(f, "CreateMatch", nil)
}

// Claim implements persistence.Store.
func (s *Store) Claim(ctx context.Context, id, owner string) (persistence.Recovery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "Claim")
	if err != nil {
		return persistence.Recovery{}, err
	}
	r, ok := s.matches[id]
	if !ok {
		return persistence.Recovery{}, fmt.Errorf("claim %q: %w", id, persistence.ErrMatchNotFound)
	}
	r.epoch++
	r.owner, r.updated = owner, s.now()
	rec := persistence.Recovery{Epoch: r.epoch, Meta: slices.Clone(r.meta), Finished: r.finished}
	from := int64(0)
	if r.snap != nil {
		rec.Snapshot = &persistence.Snapshot{Seq: r.snap.Seq, Data: slices.Clone(r.snap.Data)}
		from = r.snap.Seq
	}
	for _, e := range r.log[from:] {
		rec.Tail = append(rec.Tail, persistence.LogEntry{Seq: e.Seq, Payload: slices.Clone(e.Payload)})
	}
	if err := s.end(f, "Claim", nil); err != nil {
		return persistence.Recovery{}, err
	}
	return rec, nil
}

// fence checks a write of epoch; with mutate.SkipFence planted it lets
// stale epochs through, and the one-writer check reports the write.
func (s *Store) fence(op, id string, r *row, epoch int64) error {
	if r.epoch != epoch {
		if mutate.Planted == mutate.SkipFence && epoch < r.epoch {
			if s.Violation != nil {
				s.Violation(fmt.Errorf("%s of match %q landed with epoch %d after epoch %d claimed it", op, id, epoch, r.epoch))
			}
			return nil
		}
		return fmt.Errorf("%s match %q with epoch %d, current epoch is %d: %w", op, id, epoch, r.epoch, persistence.ErrFenced)
	}
	return nil
}

// Append implements persistence.Store.
func (s *Store) Append(ctx context.Context, id string, epoch int64, entries []persistence.LogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "Append")
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	r, ok := s.matches[id]
	if !ok {
		return fmt.Errorf("append %q: %w", id, persistence.ErrMatchNotFound)
	}
	first := entries[0].Seq
	for i, e := range entries {
		if e.Seq != first+int64(i) || first < 1 {
			return fmt.Errorf("append %q: entry %d has seq %d: %w", id, i, e.Seq, persistence.ErrSeqGap)
		}
	}
	if err := s.fence("append", id, r, epoch); err != nil {
		return err
	}
	last := int64(len(r.log))
	if first <= last {
		return fmt.Errorf("append %q: seq %d is taken (last seq %d): %w", id, first, last, persistence.ErrFenced)
	}
	if first > last+1 {
		return fmt.Errorf("append %q: seq %d leaves a gap after %d: %w", id, first, last, persistence.ErrSeqGap)
	}
	for _, e := range entries {
		r.log = append(r.log, persistence.LogEntry{Seq: e.Seq, Payload: slices.Clone(e.Payload)})
		if s.OnAppend != nil {
			s.OnAppend(e)
		}
	}
	r.updated = s.now()
	return s.end(f, "Append", nil)
}

// SaveSnapshot implements persistence.Store.
func (s *Store) SaveSnapshot(ctx context.Context, id string, epoch int64, snap persistence.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "SaveSnapshot")
	if err != nil {
		return err
	}
	r, ok := s.matches[id]
	if !ok {
		return fmt.Errorf("snapshot %q: %w", id, persistence.ErrMatchNotFound)
	}
	if err := s.fence("snapshot", id, r, epoch); err != nil {
		return err
	}
	if snap.Seq < 0 || snap.Seq > int64(len(r.log)) {
		return fmt.Errorf("snapshot %q: seq %d beyond last seq %d: %w", id, snap.Seq, len(r.log), persistence.ErrSeqGap)
	}
	r.snap = &persistence.Snapshot{Seq: snap.Seq, Data: slices.Clone(snap.Data)}
	return s.end(f, "SaveSnapshot", nil)
}

// MarkFinished implements persistence.Store.
func (s *Store) MarkFinished(ctx context.Context, id string, epoch int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "MarkFinished")
	if err != nil {
		return err
	}
	r, ok := s.matches[id]
	if !ok {
		return fmt.Errorf("finish %q: %w", id, persistence.ErrMatchNotFound)
	}
	if err := s.fence("finish", id, r, epoch); err != nil {
		return err
	}
	r.finished, r.updated = true, s.now()
	return s.end(f, "MarkFinished", nil)
}

// ListUnfinished implements persistence.Store.
func (s *Store) ListUnfinished(ctx context.Context, after string, limit int) ([]persistence.MatchInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.begin(ctx, "ListUnfinished"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list unfinished: limit %d must be positive", limit)
	}
	var out []persistence.MatchInfo
	for id, r := range s.matches {
		if !r.finished && id > after {
			out = append(out, persistence.MatchInfo{MatchID: id, Owner: r.owner, Epoch: r.epoch, UpdatedAt: r.updated, Age: s.now().Sub(r.updated)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MatchID < out[j].MatchID })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ConsumeTicket implements persistence.Store.
func (s *Store) ConsumeTicket(ctx context.Context, id string, expires time.Time, consumer string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, "ConsumeTicket")
	if err != nil {
		return err
	}
	if err := checkID("ticket id", id); err != nil {
		return err
	}
	if len(consumer) > persistence.MaxIDBytes {
		return fmt.Errorf("sim store: ticket consumer length (%d) exceeds limit (%d)", len(consumer), persistence.MaxIDBytes)
	}
	if t, ok := s.tickets[id]; ok {
		if consumer == "" || t.consumer != consumer {
			return fmt.Errorf("ticket %q: %w", id, persistence.ErrTicketUsed)
		}
		return s.end(f, "ConsumeTicket", nil)
	}
	s.tickets[id] = ticket{consumer: consumer, expires: expires}
	return s.end(f, "ConsumeTicket", nil)
}

// PurgeTickets implements persistence.Store.
func (s *Store) PurgeTickets(ctx context.Context, before time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.begin(ctx, "PurgeTickets"); err != nil {
		return 0, err
	}
	var n int64
	for id, t := range s.tickets {
		if t.expires.Before(before) {
			delete(s.tickets, id)
			n++
		}
	}
	return n, nil
}

// ReadLog implements persistence.LogReader.
func (s *Store) ReadLog(ctx context.Context, id string, from, to int64) ([]persistence.LogEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.begin(ctx, "ReadLog"); err != nil {
		return nil, err
	}
	r, ok := s.matches[id]
	if !ok {
		return nil, fmt.Errorf("read log %q: %w", id, persistence.ErrMatchNotFound)
	}
	var out []persistence.LogEntry
	for _, e := range r.log {
		if e.Seq >= from && e.Seq <= to {
			out = append(out, persistence.LogEntry{Seq: e.Seq, Payload: slices.Clone(e.Payload)})
		}
	}
	return out, nil
}

// Close implements persistence.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// log returns the durable log and meta of a match (the simulator's checks).
func (s *Store) record(id string) (meta []byte, log []persistence.LogEntry, finished bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.matches[id]
	if r == nil {
		return nil, nil, false
	}
	return r.meta, r.log, r.finished
}
