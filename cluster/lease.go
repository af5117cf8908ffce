package cluster

import (
	"context"
	"sync"
	"time"
)

// LeaseRecord is what the store says of one identity's last write: who
// wrote it (a member ID, "" if nobody yet) and how long ago.
type LeaseRecord struct {
	Identity string
	Owner    string
	Age      time.Duration
}

// Leases is the reclaim lease policy (ReclaimerConfig.Leased): an identity
// is held while another member, still in this member's view, wrote it less
// than the lease ago. A member that is gone from the view holds nothing, so
// a crashed owner's identities are reclaimed at once; a frozen member that
// wakes with a stale view leaves alone what a live peer wrote meanwhile.
//
// The records come from the store with each page the reclaimer lists: call
// Page from List, and pass Held as Leased. Safe for concurrent use.
type Leases struct {
	lease   time.Duration
	self    func() string   // this member's ID
	members func() []Member // this member's current view
	mu      sync.Mutex
	last    map[string]LeaseRecord
}

// NewLeases returns the lease policy of node with the given lease (the
// --reclaim-lease flag; a few write intervals of a live grain).
func NewLeases(node *Node, lease time.Duration) *Leases {
	return &Leases{lease: lease, self: node.ID, members: node.Members}
}

// Page replaces the records Held judges by with the page List just returned.
func (l *Leases) Page(records []LeaseRecord) {
	m := make(map[string]LeaseRecord, len(records))
	for _, r := range records {
		m[r.Identity] = r
	}
	l.mu.Lock()
	l.last = m
	l.mu.Unlock()
}

// ReclaimList makes the reclaimer's List (ReclaimerConfig.List) from a
// store's listing of T, whose lease record record reads: each page goes to
// l.Page before its identities are returned, so that l.Held, the
// reclaimer's Leased, judges by the page List just read. A listing's error
// is returned with whatever page came with it.
func ReclaimList[T any](l *Leases, list func(ctx context.Context, after string, limit int) ([]T, error),
	record func(T) LeaseRecord) func(ctx context.Context, after string, limit int) ([]string, error) {
	return func(ctx context.Context, after string, limit int) ([]string, error) {
		page, err := list(ctx, after, limit)
		records := make([]LeaseRecord, len(page))
		ids := make([]string, len(page))
		for i, v := range page {
			records[i] = record(v)
			ids[i] = records[i].Identity
		}
		l.Page(records)
		return ids, err
	}
}

// Held reports whether another member in this member's view wrote identity
// within the lease, by the last page. Identities not on it are not held.
func (l *Leases) Held(identity string) bool {
	l.mu.Lock()
	r, ok := l.last[identity]
	l.mu.Unlock()
	if !ok || r.Owner == "" || r.Owner == l.self() || r.Age >= l.lease {
		return false
	}
	for _, m := range l.members() {
		if m.ID == r.Owner {
			return true
		}
	}
	return false
}
