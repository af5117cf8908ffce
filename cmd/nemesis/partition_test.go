package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/nemesis"
)

// TestHelperMember is the cluster member child of the partition tests.
func TestHelperMember(t *testing.T) {
	if !clustertest.IsChild() {
		t.Skip("helper process for the partition tests")
	}
	clustertest.RunMember(clustertest.MemberSpec{})
}

// TestPartitionEvictsOnlyTheMinority cuts members off their peers in the
// harness's namespaces and heals the cut: the cut-off side is evicted, and
// its eviction notices to the majority, which it had declared dead in turn,
// evict nobody there (docs/operations.md §9).
func TestPartitionEvictsOnlyTheMinority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		members  int
		minority []int
		kind     nemesis.Kind
	}{
		{"peers-cut of 1 of 3", 3, []int{3}, nemesis.KindPeersCut},
		{"split of 2 of 5", 5, []int{4, 5}, nemesis.KindSplit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			partitionEvictsOnlyMinority(t, tc.members, nemesis.Fault{Kind: tc.kind, Targets: tc.minority})
		})
	}
}

func partitionEvictsOnlyMinority(t *testing.T, n int, f nemesis.Fault) {
	ms := startNamespacedCluster(t, n)
	fd := partitionDetection
	var minority, majority []*clustertest.Member
	for i, m := range ms {
		if slices.Contains(f.Targets, i+1) {
			minority = append(minority, m)
		} else {
			majority = append(majority, m)
		}
	}
	ctx := context.Background()
	if err := nemesis.ApplyNet(ctx, f, n); err != nil {
		t.Fatal(err)
	}
	// Both sides must declare the other dead: that is what makes each send
	// the other eviction notices after the heal. The cut-off side has
	// nobody to confirm its suspicions, so it takes the longest detection.
	bound := 3 * fd.CrashDetection()
	clustertest.WaitMembers(t, bound, len(majority), majority...)
	clustertest.WaitMembers(t, bound, len(minority), minority...)
	if err := nemesis.HealNet(ctx, f); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	// memberlist rejoins the cut-off side within its rejoin period (5 s)
	// and the majority's notices follow within a republish tick.
	clustertest.Eventually(t, bound+10*time.Second, 50*time.Millisecond, func() error {
		for _, m := range minority {
			if !slices.Contains(m.Events(), clustertest.EventEvicted) {
				return fmt.Errorf("%s (cut off) did not learn of its eviction", m.Name)
			}
		}
		return nil
	})
	t.Logf("%s healed; the cut-off side learned of its eviction after %v", f, time.Since(healed).Round(time.Millisecond))
	// The cut-off members keep running (a matchd would exit) and keep
	// naming the majority in their memberlist, so they would send their own
	// notices every republish tick: give them a few.
	window := 3 * cluster.DefaultTopologyRepublish
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, m := range majority {
			if slices.Contains(m.Events(), clustertest.EventEvicted) {
				t.Fatalf("%s of the majority was evicted by the cut-off side", m.Name)
			}
		}
	}
	clustertest.WaitMembers(t, time.Second, len(majority), majority...)
}

// partitionDetection is failure detection between the defaults (a member
// cut off alone is declared dead after 4.4 s) and the relaxed setting of
// the tests that kill no member (11 s): quick enough for make test, slow
// enough that children starved by -race do not falsely suspect each other
// and evict a member of the majority for a reason this test does not test.
var partitionDetection = cluster.FailureDetection{ProbeInterval: 700 * time.Millisecond, ProbeTimeout: 350 * time.Millisecond}

// startNamespacedCluster starts n cluster members, member i in the
// harness's namespace for member i, on the addresses the harness gives it.
func startNamespacedCluster(t *testing.T, n int) []*clustertest.Member {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and nft")
	}
	lock, err := nemesis.Lock()
	if err != nil {
		t.Skipf("the harness is in use: %v", err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		if err := nemesis.Cleanup(ctx); err != nil {
			t.Errorf("clean up: %v", err)
		}
		_ = lock.Close()
	})
	if err := nemesis.Setup(ctx, n); err != nil {
		t.Fatal(err)
	}
	opts := make([]clustertest.MemberOptions, n)
	for i := range opts {
		addr := nemesis.MemberAddr(i + 1).String()
		opts[i] = clustertest.MemberOptions{
			Name:             fmt.Sprintf("m%d", i+1),
			ClusterName:      "partition",
			GossipAddr:       addr + ":7946",
			RemoteAddr:       addr + ":7947",
			FailureDetection: partitionDetection,
			// Nothing outside the namespaces reaches Subnet (as for matchd's
			// --insecure-cluster in the harness).
			Security: cluster.Security{Insecure: true},
			Wrap:     []string{"ip", "netns", "exec", nemesis.MemberNS(i + 1)},
		}
	}
	return clustertest.StartClusterWith(t, opts...)
}
