package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// Commands for TestCachedRemoteRequest.
const (
	cmdStopGrain = "stopgrain" // arg: counter identity; stops its activation on this member
	cmdSetPID    = "setpid"    // arg: "identity address id"; caches that PID for the counter identity
)

func stopGrainHandler(_ context.Context, n *cluster.Node, identity string) (string, error) {
	pid, ok := n.Cluster().PidCache.Get(identity, counterKindName)
	if !ok || pid.Address != n.Self() {
		return "", fmt.Errorf("%s is not active on this member (cached: %v)", identity, pid)
	}
	if err := n.System().Root.StopFuture(pid).Wait(); err != nil {
		return "", err
	}
	return "", nil
}

func setPIDHandler(_ context.Context, n *cluster.Node, arg string) (string, error) {
	f := strings.Fields(arg)
	if len(f) != 3 {
		return "", fmt.Errorf("want identity, address and id, got %q", arg)
	}
	n.Cluster().PidCache.Set(f[0], counterKindName, &actor.PID{Address: f[1], Id: f[2]})
	return "", nil
}

// TestCachedRemoteRequest: once a member has cached the PID of a grain on
// another member, its requests go straight to that PID and get their
// answers (Node.attemptCachedRemote); when that activation has stopped,
// the owner answers the stale PID with a dead letter, and the request drops
// it and reaches a fresh activation at once, well before the attempt's
// timeout.
func TestCachedRemoteRequest(t *testing.T) {
	relaxed := clustertest.RelaxedFailureDetection()
	const attempt = 3 * time.Second
	ms := clustertest.StartClusterWith(t,
		clustertest.MemberOptions{Name: "m0", ClusterName: "cached", FailureDetection: relaxed, RequestTimeout: attempt},
		clustertest.MemberOptions{Name: "m1", ClusterName: "cached", FailureDetection: relaxed, RequestTimeout: attempt},
	)
	m0, m1 := ms[0], ms[1]
	id := identityOwnedBy(t, m0, m1.RemoteAddr, "cached")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pid, err := m1.Call(ctx, cmdPID, id) // activates it on m1 at 0
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 3; want++ {
		if c := inc(t, m0, id); c.N != want || c.Host != m1.RemoteAddr {
			t.Fatalf("inc %d from m0 answered %+v, want count %d from %s", want, c, want, m1.RemoteAddr)
		}
	}
	if _, err := m1.Call(ctx, cmdStopGrain, id); err != nil {
		t.Fatal(err)
	}
	// m0 keeps the stopped activation's PID, as it would between the stop
	// and any notice of it.
	if _, err := m0.Call(ctx, cmdSetPID, id+" "+pid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c := inc(t, m0, id)
	took := time.Since(start)
	if c.N != 1 || c.Host != m1.RemoteAddr {
		t.Fatalf("inc after the stop answered %+v, want count 1 (a fresh activation) from %s", c, m1.RemoteAddr)
	}
	if took >= attempt {
		t.Fatalf("inc to a stale PID took %v: it waited for the attempt's timeout (%v) instead of the dead letter", took, attempt)
	}
	t.Logf("a stale cached PID cost %v", took)
}
