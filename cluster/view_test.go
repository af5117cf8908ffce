package cluster

import (
	"fmt"
	"log/slog"
	"testing"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// TestViewChangesAfterThePublish: the node's view (OwnerAddress, the
// members) takes a new topology only once the whole event stream has it,
// when the lost and changed channels close, never while onEvent runs. The
// disthash lookup, which asks an identity's owner to activate its grain,
// subscribes after the node and takes the topology later in the same
// publish; a view ahead of it made requests watch the new owner while the
// lookup asked the dead one, and wait for that ask to fail.
func TestViewChangesAfterThePublish(t *testing.T) {
	a := &pcluster.Member{Id: "a", Host: "127.0.0.1", Port: 1001, Kinds: []string{"k"}}
	b := &pcluster.Member{Id: "b", Host: "127.0.0.1", Port: 1002, Kinds: []string{"k"}}
	n := &Node{log: slog.New(slog.DiscardHandler), changed: make(chan struct{}), lost: make(chan struct{})}
	n.topo.Store(&topology{rdv: pcluster.NewRendezvous()})
	n.onEvent(&pcluster.ClusterTopology{Members: []*pcluster.Member{a, b}, Joined: []*pcluster.Member{a, b}})
	n.afterPublish()
	var id string
	for i := range 100 {
		if id = fmt.Sprintf("m-%d", i); n.OwnerAddress(id, "k") == b.Address() {
			break
		}
	}
	if n.OwnerAddress(id, "k") != b.Address() {
		t.Fatal("no identity of 100 is owned by b")
	}
	lost, changed := n.MemberLost(), n.TopologyChanged()

	n.onEvent(&pcluster.ClusterTopology{Members: []*pcluster.Member{a}, Left: []*pcluster.Member{b}})
	if got := n.OwnerAddress(id, "k"); got != b.Address() || !n.hasMember(b.Address()) {
		t.Fatalf("during the publish the view routes %s to %s (b a member: %v), want still b: the lookup has not the topology yet",
			id, got, n.hasMember(b.Address()))
	}
	for name, ch := range map[string]<-chan struct{}{"lost": lost, "changed": changed} {
		select {
		case <-ch:
			t.Fatalf("%s closed during the publish", name)
		default:
		}
	}

	n.afterPublish()
	if got := n.OwnerAddress(id, "k"); got != a.Address() || n.hasMember(b.Address()) || len(n.Members()) != 1 {
		t.Fatalf("after the publish the view routes %s to %s with members %v, want a alone", id, got, n.Members())
	}
	for name, ch := range map[string]<-chan struct{}{"lost": lost, "changed": changed} {
		select {
		case <-ch:
		default:
			t.Fatalf("%s still open after the publish", name)
		}
	}
}
