package main

import (
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
)

// startGatewayServer runs a real edge in front of real match grains (one
// cluster member in this process, the embedded store, the real game).
func startGatewayServer(t *testing.T) *edgetest.Server {
	t.Helper()
	m, _ := grainstest.NewMatches(t, grainstest.Options{})
	// Registered after the member: the edge shuts down first.
	return edgetest.Start(t, m, nil)
}

// TestGatewayPlay plays the real game to the end over WebSocket and TCP,
// with bots dropping their connections, and checks what they saw against
// the server (acceptance criteria 1 and 2 of docs/protocol.md §8).
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
