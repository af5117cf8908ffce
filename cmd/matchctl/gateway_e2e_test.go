package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
)

// TestGatewayPlay plays the real game to the end over WebSocket and TCP,
// with bots dropping their connections, and checks what they saw against
// the server (acceptance criteria 1 and 2 of docs/protocol.md §8).
func TestGatewayPlay(t *testing.T) {
	if testing.Short() {
		t.Skip("plays full matches against a cluster member; skipped with -short")
	}
	srv := grainstest.StartEdge(t, grainstest.Options{})
	cases := []struct {
		name      string
		extra     []string
		killEvery int // the bots drop their connection after every N intents
	}{
		{"websocket", nil, 0},
		{"tcp with chaos", []string{"--tcp", srv.TCPAddr, "--kill-every", "5"}, 5},
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
			if tc.killEvery > 0 {
				checkReconnects(t, out, tc.killEvery)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			t.Log(strings.Join(lines[max(0, len(lines)-4):], "\n"))
		})
	}
}

// checkReconnects proves the chaos happened: each seat's summary line
// ("P0: 23 intents (1 rejected), 4 reconnects, ...") shows a reconnect for
// every killEvery intents, the last drop excepted (the match may end before
// it is resumed).
func checkReconnects(t *testing.T, out string, killEvery int) {
	t.Helper()
	seen := 0
	for _, l := range strings.Split(out, "\n") {
		var seat, intents, rejected, reconnects int
		if _, err := fmt.Sscanf(l, "P%d: %d intents (%d rejected), %d reconnects", &seat, &intents, &rejected, &reconnects); err != nil {
			continue
		}
		seen++
		if want := max(1, intents/killEvery-1); reconnects < want {
			t.Errorf("P%d: %d reconnects for %d intents with --kill-every %d, want at least %d: the connections were not dropped",
				seat, reconnects, intents, killEvery, want)
		}
	}
	if seen != 2 {
		t.Fatalf("found %d seat summary lines, want 2:\n%s", seen, out)
	}
}
