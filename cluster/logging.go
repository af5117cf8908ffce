package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// memberlistLog adapts memberlist's line logger ("[LEVEL] memberlist: msg")
// to slog. memberlist's ERR lines are mostly transient network errors towards
// a peer that is dying, an expected part of failover, so they become WARN.
type memberlistLog struct {
	log *slog.Logger

	mu            sync.Mutex // guards the refusal rate limit below
	lastRefusal   time.Time
	suppressedRef int
}

// RefusedGossipMsg is the message of the WARN line logged when gossip from
// a process without this cluster's key (or with another cluster's label) is
// dropped. At most one such line a second is logged; "suppressed" counts the
// refusals left out since the previous one, so a flood cannot fill the log.
const RefusedGossipMsg = "cluster: refused gossip from a process without this cluster's key or label"

// refusalMarkers are the memberlist messages that mean "not one of us".
var refusalMarkers = []string{
	"no installed keys could decrypt the message",
	"encryption is configured but remote state is not encrypted",
	"Decrypt packet failed",
	"with unacceptable label",
	"cannot decrypt empty payload",
	"unsupported encryption version",
	"payload is too small to decrypt",
}

// RefusedJoinMsg is logged instead when this member's own join attempt
// failed for the same reasons: the seed is keyed differently.
const RefusedJoinMsg = "cluster: join refused: the seed's gossip is under another key or label"

const refusalLogEvery = time.Second

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
	for _, m := range refusalMarkers {
		if strings.Contains(line, m) {
			w.refused(line)
			return len(p), nil
		}
	}
	w.log.Log(context.Background(), level, line)
	return len(p), nil
}

func (w *memberlistLog) refused(line string) {
	peer := ""
	if i := strings.LastIndex(line, "from="); i >= 0 {
		peer = strings.TrimSpace(line[i+len("from="):])
	}
	w.mu.Lock()
	now := time.Now()
	if now.Sub(w.lastRefusal) < refusalLogEvery {
		w.suppressedRef++
		w.mu.Unlock()
		return
	}
	suppressed := w.suppressedRef
	w.lastRefusal, w.suppressedRef = now, 0
	w.mu.Unlock()
	msg := RefusedGossipMsg
	if strings.Contains(line, "failed to join") {
		msg = RefusedJoinMsg
	}
	w.log.Warn(msg, slog.String("peer", peer), slog.String("detail", line), slog.Int("suppressed", suppressed))
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
	redacted := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		redacted.AddAttrs(withoutMessageValue(a))
		return true
	})
	return h.inner.Handle(ctx, redacted)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	kept := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		kept[i] = withoutMessageValue(a)
	}
	return quietHandler{inner: h.inner.WithAttrs(kept), min: h.min}
}

// withoutMessageValue keeps only the type of the message a protoactor
// record carries: protoactor logs whole messages (one it could not
// serialize, a dead letter, an unknown one), and a grain's messages hold
// seats' frames, hands included, which never go to a log.
func withoutMessageValue(a slog.Attr) slog.Attr {
	if a.Key != "message" || a.Value.Kind() != slog.KindAny {
		return a
	}
	return slog.String(a.Key, fmt.Sprintf("%T", a.Value.Any()))
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{inner: h.inner.WithGroup(name), min: h.min}
}
