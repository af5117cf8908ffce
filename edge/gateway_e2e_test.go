package edge_test

import (
	"testing"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
)

// newGatewayMatches is the real thing behind the edge: one cluster member in
// this process hosting match grains of the real game, with the embedded
// store, reached through grains.Gateway (grainstest keeps protoactor out of
// package edge itself).
func newGatewayMatches(t testing.TB) edge.Matches {
	t.Helper()
	m, _ := grainstest.NewMatches(t, grainstest.Options{})
	return m
}

// TestGatewayEdgeSuite runs the transport behaviours against real match
// grains: the edge's contract with Matches holds for the real gateway too.
func TestGatewayEdgeSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster member; skipped with -short")
	}
	runEdgeSuite(t, newGatewayMatches)
}
