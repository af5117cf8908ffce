package cluster

import (
	"testing"
	"time"
)

// TestLeasesHeld: an identity is held only by another member that is in
// the view and wrote it within the lease, by the latest page.
func TestLeasesHeld(t *testing.T) {
	view := []Member{{ID: "self"}, {ID: "peer"}}
	l := &Leases{lease: 15 * time.Second, self: func() string { return "self" }, members: func() []Member { return view }}
	l.Page([]LeaseRecord{
		{Identity: "fresh-peer", Owner: "peer", Age: 2 * time.Second},
		{Identity: "old-peer", Owner: "peer", Age: 15 * time.Second},
		{Identity: "mine", Owner: "self", Age: time.Second},
		{Identity: "gone", Owner: "crashed", Age: time.Second},
		{Identity: "new", Owner: "", Age: 0},
	})
	for id, want := range map[string]bool{
		"fresh-peer": true,  // a live peer wrote it moments ago
		"old-peer":   false, // the lease ran out
		"mine":       false, // this member's own write holds nothing against it
		"gone":       false, // the writer left the view: reclaim at once
		"new":        false, // never written
		"unlisted":   false, // not on the page
	} {
		if got := l.Held(id); got != want {
			t.Errorf("Held(%q) = %v, want %v", id, got, want)
		}
	}
	// The peer leaves the view: its fresh write no longer holds.
	view = view[:1]
	if l.Held("fresh-peer") {
		t.Error("held by a member that left the view")
	}
	// A new page replaces the old one.
	view = append(view, Member{ID: "peer"})
	l.Page([]LeaseRecord{{Identity: "other", Owner: "peer", Age: time.Second}})
	if l.Held("fresh-peer") || !l.Held("other") {
		t.Error("Held judged by a page that was replaced")
	}
}
