package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

// memberlistLog adapts memberlist's line logger ("[LEVEL] memberlist: msg")
// to slog. memberlist's ERR lines are mostly transient network errors towards
// a peer that is dying, an expected part of failover, so they become WARN.
type memberlistLog struct {
	log *slog.Logger
}

// newMemberlistLogger returns a *log.Logger for memberlist.Config.Logger
// (without prefix or timestamp: slog adds its own).
func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(&memberlistLog{log: l.With(slog.String("lib", "memberlist"))}, "", 0)
}

var memberlistLevels = []struct {
	tag   string
	level slog.Level
}{
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelWarn},
	{"[ERROR]", slog.LevelWarn},
}

func (w *memberlistLog) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	for _, l := range memberlistLevels {
		if rest, ok := strings.CutPrefix(line, l.tag); ok {
			level, line = l.level, strings.TrimSpace(rest)
			break
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	w.log.Log(context.Background(), level, line)
	return len(p), nil
}

// protoactorNoise lists protoactor log messages that repeat, several times a
// second, what this package reports once: every failed attempt of
// cluster.Request logs at ERROR although Node.Request retries it, and while a
// crashed member is being detected the endpoint writer and the gossip actor
// log every failed dial and send to it. memberlist decides liveness and the
// topology change is logged; a live peer that cannot be reached shows up as
// failed requests.
var protoactorNoise = map[string]bool{
	"cluster.RequestFuture failed":                   true,
	"Request retried but failed":                     true,
	"sendGossipForMember failed":                     true,
	"EndpointWriter failed to connect":               true,
	"EndpointWriter failed to create receive stream": true,
	"EndpointWriter lost connection":                 true,
}

// quietHandler passes protoactor records at or above min, minus known noise.
type quietHandler struct {
	inner slog.Handler
	min   slog.Level
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.inner.Enabled(ctx, l)
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if protoactorNoise[r.Message] {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{inner: h.inner.WithAttrs(attrs), min: h.min}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{inner: h.inner.WithGroup(name), min: h.min}
}
