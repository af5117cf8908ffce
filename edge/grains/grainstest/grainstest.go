package grainstest

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/actors"
	mgcluster "github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/persistence"
)

// DefaultSeatKeepAlive is the seat keep-alive of the default timing: short,
// so that a test notices an abandoned seat quickly.
const DefaultSeatKeepAlive = 200 * time.Millisecond

// Options configures NewMatches. The zero value is ready to use.
type Options struct {
	// Store persists the matches; the caller keeps ownership and closes it.
	// Nil opens an embedded store in t.TempDir(), closed by the cleanup.
	Store persistence.Store
	// Timing is shared by the grains and the gateway. The zero value means
	// actors.DefaultTiming() with SeatKeepAlive = DefaultSeatKeepAlive.
	Timing actors.Timing
	// Logger receives the member's, the grains' and the store's logs; nil
	// discards them.
	Logger *slog.Logger
	// MaxSpectators is the grains' spectator cap (0: no spectators).
	MaxSpectators int
}

// Node is what NewMatches started, for tests that need to look behind the
// edge.Matches (the store's rows, the member's identity).
type Node struct {
	// Member is the cluster member hosting the match grains.
	Member *mgcluster.Node
	// Gateway is the member's grains.Gateway, the edge.Matches returned.
	Gateway *grains.Gateway
	// Store is Options.Store or the embedded store opened for the test.
	Store persistence.Store
	// Timing is the timing in effect (Options.Timing or its default).
	Timing actors.Timing
}

// StartEdge serves NewMatches(t, opts) through a real edge on loopback
// (edgetest.Start), as matchd serves them. The edge's cleanup is registered
// after the member's, so the edge shuts down first.
func StartEdge(t testing.TB, opts Options) *edgetest.Server {
	t.Helper()
	m, _ := NewMatches(t, opts)
	return edgetest.Start(t, m, nil)
}

// NewMatches starts one cluster member hosting the real game's match grains
// and returns it as an edge.Matches. It fails the test if anything does not
// start; t.Cleanup kills the member, then closes the store if it opened it.
func NewMatches(t testing.TB, opts Options) (edge.Matches, *Node) {
	t.Helper()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timing := opts.Timing
	if timing == (actors.Timing{}) {
		timing = actors.DefaultTiming()
		timing.SeatKeepAlive = DefaultSeatKeepAlive
	}
	store := opts.Store
	if store == nil {
		s, err := persistence.OpenEmbeddedWithLogger(t.TempDir(), log)
		if err != nil {
			t.Fatalf("grainstest: open embedded store: %v", err)
		}
		// Registered before the member starts, so it runs after node.Kill.
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("grainstest: close embedded store: %v", err)
			}
		})
		store = s
	}

	var member *mgcluster.Node
	kind, err := actors.NewMatchKind(actors.GrainDeps{
		Store: store, Rules: actors.GameRules{}, Timing: timing, Logger: log,
		Owner: func() string { return member.ID() }, MaxSpectators: opts.MaxSpectators,
	})
	if err != nil {
		t.Fatalf("grainstest: match kind: %v", err)
	}
	// A fresh cluster name per member: two tests' members never gossip.
	name := "grainstest-" + randomHex(t, 4)
	member, err = mgcluster.Start(mgcluster.Config{
		NodeName: name, ClusterName: name, GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0",
		Kinds: []*pcluster.Kind{kind}, Logger: log,
	})
	if err != nil {
		t.Fatalf("grainstest: start cluster member: %v", err)
	}
	t.Cleanup(member.Kill)
	gw, err := grains.NewGateway(grains.GatewayConfig{
		System: member.System(), Cluster: member, Store: store, Rules: actors.GameRules{}, Timing: timing,
		Forget: func(id string) { member.ForgetPID(id, actors.MatchKind) }, Logger: log,
	})
	if err != nil {
		t.Fatalf("grainstest: gateway: %v", err)
	}
	return gw, &Node{Member: member, Gateway: gw, Store: store, Timing: timing}
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("grainstest: random name: %v", err)
	}
	return hex.EncodeToString(b)
}
