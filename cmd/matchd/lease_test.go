package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestChaosFrozenMemberDoesNotSteal freezes member b (SIGSTOP) until the
// others drop it, starts matches that then live on a, and wakes b. b wakes
// with its view from before the freeze, in which it owns about half of those
// matches, and its overdue reclaim sweep runs at once; the lease (the owner a
// is in b's view and wrote the matches recently) must keep it from claiming
// any of them before it learns that it was evicted and exits.
//
// Run with MATCHGRAIN_CHAOS_FLAGS='--reclaim-lease 1ns' to see it fail
// without the lease.
func TestChaosFrozenMemberDoesNotSteal(t *testing.T) {
	cc := startChaosCluster(t)
	if err := cc.b.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	frozen := time.Now()
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = cc.createMatch(t, uint64(300+i))
		// A seat makes the match active, on a: b cannot answer.
		seat, _ := dialSeat(t, cc.admin, cc.edge.http, ids[i], 0, 0)
		clienttest.Await(seat, 30*time.Second, clienttest.Any[*protocol.ServerSnapshot])
		if owner, _ := cc.owner(t, ids[i]); owner != cc.a.member {
			t.Fatalf("match %s owned by %q while b is frozen, want a (%s)", ids[i], owner, cc.a.member)
		}
	}
	epochs := make([]int64, n)
	for i, id := range ids {
		_, epochs[i] = cc.owner(t, id)
	}
	// Wake b as soon as a has declared it dead, not later: the stall
	// quarantine's threshold follows the failure detector (three quarters
	// of the earliest possible eviction, cluster/stall.go), so however
	// short the freeze that got b evicted, b must notice it. With a fixed
	// 3 s threshold an idle machine evicted b after about 2 s, and the
	// woken b claimed a match it still believed it owned.
	clustertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if v := adminGet(context.Background(), cc.a.http, "/api/admin/cluster"); strings.Contains(v, cc.b.member) {
			return fmt.Errorf("b is still in a's view: %s", v)
		}
		return nil
	})
	t.Logf("b frozen for %v until a dropped it", time.Since(frozen).Round(time.Millisecond))
	if err := cc.b.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
	// Watch until b has exited (it learns it was evicted) and a second
	// more, at most 20 s: no match may change owner or epoch meanwhile.
	deadline := time.After(20 * time.Second)
	var exited <-chan time.Time
	for {
		for i, id := range ids {
			if owner, epoch := cc.owner(t, id); owner != cc.a.member || epoch != epochs[i] {
				t.Fatalf("match %s taken over after b woke: owner %s epoch %d (was a %s, %d); b's log:\n%s",
					id, owner, epoch, cc.a.member, epochs[i], cc.b.logTail())
			}
		}
		select {
		case <-cc.b.done:
			if exited == nil {
				exited = time.After(time.Second)
			}
		case <-exited:
			return
		case <-deadline:
			t.Fatalf("the woken member did not exit within 20 s:\n%s", cc.b.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
