package edge_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/actors"
	mgcluster "github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/persistence"
)

// newGatewayMatches is the real thing behind the edge: one cluster member in
// this process (a single member is race-clean, PROTOACTOR.md §6) hosting
// match grains of the real game, with the embedded store, reached through
// actors.Gateway.
func newGatewayMatches(t testing.TB) edge.Matches {
	t.Helper()
	store, err := persistence.OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	timing := actors.DefaultTiming()
	timing.SeatKeepAlive = 200 * time.Millisecond
	var node *mgcluster.Node
	kind, err := actors.NewMatchKind(actors.GrainDeps{
		Store: store, Rules: actors.GameRules{}, Timing: timing, Logger: log,
		Owner: func() string { return node.ID() },
	})
	if err != nil {
		t.Fatalf("match kind: %v", err)
	}
	node, err = mgcluster.Start(mgcluster.Config{
		NodeName: "edge-e2e", ClusterName: "edge-e2e", GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0",
		Kinds: []*pcluster.Kind{kind}, Logger: log,
	})
	if err != nil {
		t.Fatalf("start cluster member: %v", err)
	}
	gw, err := actors.NewGateway(actors.GatewayConfig{
		System: node.System(), Cluster: node, Store: store, Rules: actors.GameRules{}, Timing: timing, Logger: log,
	})
	if err != nil {
		node.Kill()
		t.Fatalf("gateway: %v", err)
	}
	t.Cleanup(func() {
		node.Kill()
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return grains.Matches(gw)
}

// TestGatewayEdgeSuite runs the transport behaviours against real match
// grains: the edge's contract with Matches holds for the real gateway too.
func TestGatewayEdgeSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster member; skipped with -short")
	}
	runEdgeSuite(t, newGatewayMatches)
}
