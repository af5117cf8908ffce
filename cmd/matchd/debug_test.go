package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDebugListenServesPprof fetches the pprof index and a goroutine
// profile from a real listener, and checks it stops with its context.
func TestDebugListenServesPprof(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := startDebug(ctx, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body[:min(len(body), 200)])
		}
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/debug/pprof/")
		if err != nil {
			return
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("debug listener still serving 5 s after its context ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
