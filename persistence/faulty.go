package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrInjected is the default error a FaultyStore injects.
var ErrInjected = errors.New("persistence: injected fault")

// Method names a Store method for fault injection.
type Method string

// The Store methods a FaultyStore can disturb.
const (
	MethodCreateMatch    Method = "CreateMatch"
	MethodClaim          Method = "Claim"
	MethodAppend         Method = "Append"
	MethodSaveSnapshot   Method = "SaveSnapshot"
	MethodMarkFinished   Method = "MarkFinished"
	MethodListUnfinished Method = "ListUnfinished"
	MethodConsumeTicket  Method = "ConsumeTicket"
	MethodPurgeTickets   Method = "PurgeTickets"
)

// FaultyStore wraps a Store and misbehaves on request, for tests of the code
// above the store (in the spirit of Orleans' FaultInjectionGrainStorage).
// Faults are armed per method and consumed call by call:
//
//   - FailNext: the next n calls fail without reaching the inner store
//     (a write that certainly did not happen).
//   - LoseReplyNext: the next n calls reach the inner store, and then report
//     an error anyway (a write whose commit succeeded but whose
//     acknowledgement was lost: the outcome-unknown case).
//   - SetLatency: every call waits first (honouring ctx).
//   - Hold: every call waits until the test lets it go (honouring ctx),
//     to see what the caller does while its write is in flight.
//
// All methods are safe for concurrent use. Close is passed through unchanged.
type FaultyStore struct {
	inner Store

	mu     sync.Mutex
	faults map[Method]*fault
}

type fault struct {
	failNext int
	failErr  error
	loseNext int
	loseErr  error
	latency  time.Duration
	held     chan struct{} // non-nil: calls wait until it is closed
	calls    int
}

// NewFaultyStore wraps inner with no faults armed.
func NewFaultyStore(inner Store) *FaultyStore {
	return &FaultyStore{inner: inner, faults: make(map[Method]*fault)}
}

// Inner returns the wrapped store.
func (f *FaultyStore) Inner() Store { return f.inner }

func (f *FaultyStore) get(m Method) *fault {
	fl, ok := f.faults[m]
	if !ok {
		fl = &fault{}
		f.faults[m] = fl
	}
	return fl
}

// FailNext makes the next n calls of m return err (ErrInjected if nil)
// without calling the inner store. It replaces any count armed before.
func (f *FaultyStore) FailNext(m Method, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.get(m)
	fl.failNext, fl.failErr = n, orInjected(err)
}

// LoseReplyNext makes the next n calls of m run against the inner store and
// then return err (ErrInjected if nil) instead of its result.
func (f *FaultyStore) LoseReplyNext(m Method, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.get(m)
	fl.loseNext, fl.loseErr = n, orInjected(err)
}

// SetLatency delays every later call of m by d (0 removes the delay).
func (f *FaultyStore) SetLatency(m Method, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.get(m).latency = d
}

// Hold makes every later call of m wait, after it is counted, until release
// is called or the call's context ends. release may be called more than
// once; later calls are not held again unless Hold is called again.
func (f *FaultyStore) Hold(m Method) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.get(m).held = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if fl := f.get(m); fl.held == ch {
				fl.held = nil
			}
			f.mu.Unlock()
			close(ch)
		})
	}
}

// Calls returns how many calls of m were made, faulty ones included.
func (f *FaultyStore) Calls(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(m).calls
}

// Reset disarms every fault and zeroes the call counts.
func (f *FaultyStore) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
}

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// before counts a call and applies latency, then either fails the call now
// or returns the function that turns the inner result into the reply.
func (f *FaultyStore) before(ctx context.Context, m Method) (func(error) error, error) {
	f.mu.Lock()
	fl := f.get(m)
	fl.calls++
	latency, held := fl.latency, fl.held
	var fail, lose error
	if fl.failNext > 0 {
		fl.failNext--
		fail = fl.failErr
	} else if fl.loseNext > 0 {
		fl.loseNext--
		lose = fl.loseErr
	}
	f.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("faulty store %s: %w", m, ctx.Err())
		}
	}
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, fmt.Errorf("faulty store %s (held): %w", m, ctx.Err())
		}
	}
	if fail != nil {
		return nil, fmt.Errorf("faulty store %s: %w", m, fail)
	}
	return func(err error) error {
		if lose != nil {
			return fmt.Errorf("faulty store %s (reply lost after inner returned %v): %w", m, err, lose)
		}
		return err
	}, nil
}

// CreateMatch implements Store.
func (f *FaultyStore) CreateMatch(ctx context.Context, matchID string, meta []byte) error {
	reply, err := f.before(ctx, MethodCreateMatch)
	if err != nil {
		return err
	}
	return reply(f.inner.CreateMatch(ctx, matchID, meta))
}

// Claim implements Store.
func (f *FaultyStore) Claim(ctx context.Context, matchID, owner string) (Recovery, error) {
	reply, err := f.before(ctx, MethodClaim)
	if err != nil {
		return Recovery{}, err
	}
	rec, err := f.inner.Claim(ctx, matchID, owner)
	if err = reply(err); err != nil {
		return Recovery{}, err
	}
	return rec, nil
}

// ReadLog implements LogReader when the wrapped store does (no faults).
func (f *FaultyStore) ReadLog(ctx context.Context, matchID string, from, to int64) ([]LogEntry, error) {
	r, ok := f.inner.(LogReader)
	if !ok {
		return nil, fmt.Errorf("read log of %q: %T cannot read its log back", matchID, f.inner)
	}
	return r.ReadLog(ctx, matchID, from, to)
}

// Append implements Store.
func (f *FaultyStore) Append(ctx context.Context, matchID string, epoch int64, entries []LogEntry) error {
	reply, err := f.before(ctx, MethodAppend)
	if err != nil {
		return err
	}
	return reply(f.inner.Append(ctx, matchID, epoch, entries))
}

// SaveSnapshot implements Store.
func (f *FaultyStore) SaveSnapshot(ctx context.Context, matchID string, epoch int64, snap Snapshot) error {
	reply, err := f.before(ctx, MethodSaveSnapshot)
	if err != nil {
		return err
	}
	return reply(f.inner.SaveSnapshot(ctx, matchID, epoch, snap))
}

// MarkFinished implements Store.
func (f *FaultyStore) MarkFinished(ctx context.Context, matchID string, epoch int64) error {
	reply, err := f.before(ctx, MethodMarkFinished)
	if err != nil {
		return err
	}
	return reply(f.inner.MarkFinished(ctx, matchID, epoch))
}

// ListUnfinished implements Store.
func (f *FaultyStore) ListUnfinished(ctx context.Context, after string, limit int) ([]MatchInfo, error) {
	reply, err := f.before(ctx, MethodListUnfinished)
	if err != nil {
		return nil, err
	}
	out, err := f.inner.ListUnfinished(ctx, after, limit)
	if err = reply(err); err != nil {
		return nil, err
	}
	return out, nil
}

// ConsumeTicket implements Store.
func (f *FaultyStore) ConsumeTicket(ctx context.Context, ticketID string, expiresAt time.Time, consumer string) error {
	reply, err := f.before(ctx, MethodConsumeTicket)
	if err != nil {
		return err
	}
	return reply(f.inner.ConsumeTicket(ctx, ticketID, expiresAt, consumer))
}

// PurgeTickets implements Store.
func (f *FaultyStore) PurgeTickets(ctx context.Context, before time.Time) (int64, error) {
	reply, err := f.before(ctx, MethodPurgeTickets)
	if err != nil {
		return 0, err
	}
	n, err := f.inner.PurgeTickets(ctx, before)
	if err = reply(err); err != nil {
		return 0, err
	}
	return n, nil
}

// Close implements Store.
func (f *FaultyStore) Close() error { return f.inner.Close() }

var _ Store = (*FaultyStore)(nil)
