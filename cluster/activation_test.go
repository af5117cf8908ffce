package cluster_test

import (
	"errors"
	"log/slog"
	"testing"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster"
)

// TestActivationGate: no activation before the node is published, the
// member's own identity and view once it is, none again from the drain on.
func TestActivationGate(t *testing.T) {
	var gate cluster.ActivationGate
	if err := gate.MayActivate(); !errors.Is(err, cluster.ErrStarting) {
		t.Fatalf("before Started: MayActivate = %v, want ErrStarting", err)
	}
	if gate.Owner() != "" || gate.Owns(counterKindName, "x") {
		t.Fatalf("before Started: Owner %q, Owns %v; want nothing", gate.Owner(), gate.Owns(counterKindName, "x"))
	}

	node, err := cluster.Start(cluster.Config{
		GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0", ClusterName: "gate",
		Kinds: []*pcluster.Kind{counterKind()}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()
	gate.Started(node)
	if err := gate.MayActivate(); err != nil {
		t.Fatalf("started alone: MayActivate = %v, want nil", err)
	}
	if gate.Owner() != node.ID() {
		t.Fatalf("Owner = %q, want the member's ID %q", gate.Owner(), node.ID())
	}
	if !gate.Owns(counterKindName, "x") {
		t.Fatal("a lone member does not own x in its view")
	}
	if gate.Owns("no-such-kind", "x") {
		t.Fatal("owns an identity of a kind nobody hosts")
	}

	gate.Drain()
	if err := gate.MayActivate(); !errors.Is(err, cluster.ErrDraining) {
		t.Fatalf("draining: MayActivate = %v, want ErrDraining", err)
	}
}
