package cluster

import (
	"context"
	"errors"
	"slices"
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

// TestReclaimList: the reclaimer's List returns the listing's identities in
// its order and hands the same page to Held; an error comes back with its
// page.
func TestReclaimList(t *testing.T) {
	type row struct {
		id, owner string
		age       time.Duration
	}
	view := []Member{{ID: "self"}, {ID: "peer"}}
	l := &Leases{lease: 15 * time.Second, self: func() string { return "self" }, members: func() []Member { return view }}
	var pages [][]row
	var errs []error
	listing := func(_ context.Context, after string, limit int) ([]row, error) {
		if after != "b" || limit != 2 {
			t.Errorf("listing asked for after %q, limit %d; want the caller's b and 2", after, limit)
		}
		p, err := pages[0], errs[0]
		pages, errs = pages[1:], errs[1:]
		return p, err
	}
	list := ReclaimList(l, listing, func(r row) LeaseRecord { return LeaseRecord{Identity: r.id, Owner: r.owner, Age: r.age} })

	pages = append(pages, []row{{"c", "peer", time.Second}, {"d", "crashed", time.Second}})
	errs = append(errs, nil)
	ids, err := list(context.Background(), "b", 2)
	if err != nil || !slices.Equal(ids, []string{"c", "d"}) {
		t.Fatalf("List = %v, %v; want [c d], nil", ids, err)
	}
	if !l.Held("c") || l.Held("d") {
		t.Fatalf("Held(c) %v, Held(d) %v; want the page's verdicts true, false", l.Held("c"), l.Held("d"))
	}

	failed := errors.New("store down")
	pages = append(pages, nil)
	errs = append(errs, failed)
	ids, err = list(context.Background(), "b", 2)
	if !errors.Is(err, failed) || len(ids) != 0 {
		t.Fatalf("List = %v, %v; want nothing and the listing's error", ids, err)
	}
	if l.Held("c") {
		t.Fatal("Held judged by the page before a failed listing")
	}
}
