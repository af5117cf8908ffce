package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client/load"
	"github.com/matchgrain/matchgrain/edge/edgetest"
)

// These tests play edgetest's toy game through a real edge server. The same
// commands against matchd play the real game.

func startServer(t *testing.T) *edgetest.Server {
	t.Helper()
	return edgetest.Start(t, edgetest.NewMatches(), nil)
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlay(t *testing.T) {
	srv := startServer(t)
	cases := []struct {
		name  string
		extra []string
	}{
		{"websocket", nil},
		{"tcp", []string{"--tcp", srv.TCPAddr}},
		{"websocket with chaos", []string{"--kill-every", "2"}},
		{"tcp with chaos", []string{"--tcp", srv.TCPAddr, "--kill-every", "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"play", "--server", srv.HTTPURL, "--token", edgetest.AdminToken, "--seed", "7", "--bot-seed", "3"}, tc.extra...)
			code, out, errOut := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, want := range []string{"GAME OVER: P0 wins", "winner P0 (Bot A)", "P1: ", "OK"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if len(tc.extra) > 1 && strings.Contains(strings.Join(tc.extra, " "), "kill-every") && !strings.Contains(out, "reconnected") {
				t.Errorf("chaos run shows no reconnection:\n%s", out)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	srv := startServer(t)
	code, out, errOut := runCmd(t, "load", "--server", srv.HTTPURL, "--token", edgetest.AdminToken, "--matches", "6", "--concurrency", "3")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"6 matches started, 6 finished", "0 errors", "p50", "p90", "p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Log(out)
}

// TestLoadJSON: --json prints the report measure.sh reads, and
// --cpu-profile writes a profile of the run.
func TestLoadJSON(t *testing.T) {
	srv := startServer(t)
	profile := filepath.Join(t.TempDir(), "loadgen.pprof")
	code, out, errOut := runCmd(t, "load", "--server", srv.HTTPURL, "--token", edgetest.AdminToken,
		"--matches", "2", "--rate", "5", "--duration", "1s", "--json", "--metrics", "off", "--cpu-profile", profile)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var r load.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if r.Mode != "open" || r.Matches != 2 || r.RatePerMatch != 5 || r.Intents == 0 {
		t.Errorf("report %+v", r)
	}
	// pprof's format is gzipped protobuf.
	if b, err := os.ReadFile(profile); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpu-profile wrote %d bytes (%v), want a gzipped pprof profile", len(b), err)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"fly"},
		{"play"},
		{"play", "--server", "ftp://x", "--token", "t"},
		{"play", "--server", "http://127.0.0.1:1", "--token", ""},
		{"play", "--server", "http://127.0.0.1:1", "--token", "t", "--kill-every", "-1"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--matches", "0"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--rate", "2"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--rate", "20", "--duration", "1s"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--warmup", "1s"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--idle", "3"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--idle", "2", "--idle-source-addrs", "127.0.0.2,localhost"},
		{"load", "--server", "http://127.0.0.1:1", "--token", "t", "--idle-source-addrs", "127.0.0.2"},
		{"play", "--server", "http://127.0.0.1:1", "--token", "t", "--seed", "x"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Setenv("MATCHGRAIN_ADMIN_TOKEN", "")
			if code, _, _ := runCmd(t, args...); code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
		})
	}
	srv := startServer(t)
	if code, _, errOut := runCmd(t, "play", "--server", srv.HTTPURL, "--token", "wrong"); code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("wrong token: exit %d, stderr %q", code, errOut)
	}
}
