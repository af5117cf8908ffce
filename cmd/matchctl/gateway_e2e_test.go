package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/actors"
	mgcluster "github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/persistence"
)

// startGatewayServer runs a real edge in front of real match grains (one
// cluster member in this process, the embedded store, the real game).
func startGatewayServer(t *testing.T) *edgetest.Server {
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
		NodeName: "matchctl-e2e", ClusterName: "matchctl-e2e", GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0",
		Kinds: []*pcluster.Kind{kind}, Logger: log,
	})
	if err != nil {
		t.Fatalf("start cluster member: %v", err)
	}
	t.Cleanup(func() {
		node.Kill()
		if err := store.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	gw, err := actors.NewGateway(actors.GatewayConfig{
		System: node.System(), Cluster: node, Store: store, Rules: actors.GameRules{}, Timing: timing, Logger: log,
	})
	if err != nil {
		t.Fatalf("gateway: %v", err)
	}
	// Registered after the member: the edge shuts down first.
	return edgetest.Start(t, grains.Matches(gw), nil)
}

// TestGatewayPlay plays the real game to the end over WebSocket and TCP,
// with bots dropping their connections, and checks what they saw against
// the server (acceptance criteria 1 and 2 of PROTOCOL.md §8).
func TestGatewayPlay(t *testing.T) {
	if testing.Short() {
		t.Skip("plays full matches against a cluster member; skipped with -short")
	}
	srv := startGatewayServer(t)
	cases := []struct {
		name  string
		extra []string
	}{
		{"websocket", nil},
		{"tcp with chaos", []string{"--tcp", srv.TCPAddr, "--kill-every", "5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"play", "--server", srv.HTTPURL, "--token", edgetest.AdminToken, "--seed", "42", "--bot-seed", "1"}, tc.extra...)
			code, out, errOut := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, want := range []string{"rides", "attacks", "damage check", "GAME OVER", "finished in", "OK"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			t.Log(strings.Join(lines[max(0, len(lines)-4):], "\n"))
		})
	}
}
