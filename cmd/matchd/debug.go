package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/matchgrain/matchgrain/cmd/matchd/internal/config"
)

// debugMux serves net/http/pprof under /debug/pprof/ and nothing else.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startDebug serves the profiling endpoints on addr until ctx ends. It
// returns the bound address (addr may name port 0).
func startDebug(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	if err := config.DebugLoopbackOnly(addr); err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen %s for --debug-listen: %w", addr, err)
	}
	// No WriteTimeout: /debug/pprof/profile?seconds=N streams for N seconds.
	hs := &http.Server{Handler: debugMux(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug listener stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = hs.Close() // profiling requests in flight are simply cut
	}()
	return ln.Addr().String(), nil
}
