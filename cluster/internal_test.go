package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

func TestMemberlistLogLevels(t *testing.T) {
	tests := []struct {
		line, level, msg string
	}{
		{"[DEBUG] memberlist: Stream connection from=1.2.3.4", "DEBUG", "Stream connection from=1.2.3.4"},
		{"[INFO] memberlist: Suspect x has failed, no acks received", "INFO", "Suspect x has failed, no acks received"},
		{"[WARN] memberlist: Refuting a suspect message (from: y)", "WARN", "Refuting a suspect message (from: y)"},
		{"[ERR] memberlist: Push/Pull with z failed: EOF", "WARN", "Push/Pull with z failed: EOF"},
		{"no tag at all", "INFO", "no tag at all"},
	}
	for _, tt := range tests {
		t.Run(tt.level+" "+tt.msg, func(t *testing.T) {
			var buf bytes.Buffer
			l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
			l.Println(tt.line)
			out := buf.String()
			if !strings.Contains(out, "level="+tt.level) || !strings.Contains(out, tt.msg) || !strings.Contains(out, "lib=memberlist") {
				t.Fatalf("logged %q, want level %s and message %q", out, tt.level, tt.msg)
			}
			if strings.Contains(out, "memberlist: ") {
				t.Fatalf("prefix not stripped: %q", out)
			}
		})
	}
}

func TestQuietHandler(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(quietHandler{inner: slog.NewTextHandler(&buf, nil), min: slog.LevelWarn}).With(slog.String("lib", "protoactor"))
	l.Info("Started partition manager")
	l.Error("cluster.RequestFuture failed")
	l.Error("EndpointWriter failed to connect")
	l.Error("something real")
	out := buf.String()
	if strings.Contains(out, "partition") || strings.Contains(out, "RequestFuture") || strings.Contains(out, "EndpointWriter") {
		t.Fatalf("noise passed: %q", out)
	}
	if !strings.Contains(out, "something real") || !strings.Contains(out, "lib=protoactor") {
		t.Fatalf("real error dropped: %q", out)
	}
}

// TestQuietHandlerLogsOnlyAMessagesType: protoactor logs whole messages
// (one its writer could not serialize, a dead letter); a grain's hold seats'
// frames, so only their type may reach the log.
func TestQuietHandlerLogsOnlyAMessagesType(t *testing.T) {
	type frames struct{ Hand []string }
	var buf bytes.Buffer
	l := slog.New(quietHandler{inner: slog.NewTextHandler(&buf, nil), min: slog.LevelWarn})
	l.Error("EndpointWriter failed to serialize message", slog.Any("error", errors.New("too large")), slog.Any("message", &frames{Hand: []string{"secret-card"}}))
	l.With(slog.Any("message", frames{Hand: []string{"other-card"}})).Error("dead letter")
	out := buf.String()
	if strings.Contains(out, "secret-card") || strings.Contains(out, "other-card") {
		t.Fatalf("a message's contents were logged: %q", out)
	}
	if !strings.Contains(out, "message=*cluster.frames") || !strings.Contains(out, "message=cluster.frames") || !strings.Contains(out, "too large") {
		t.Fatalf("the message's type or the error is missing: %q", out)
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	n := &Node{cfg: Config{Retry: Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond}}}
	for retry, limit := range []time.Duration{10, 20, 40, 80, 80, 80} {
		limit *= time.Millisecond
		distinct := map[time.Duration]bool{}
		for range 200 {
			d := n.backoff(retry)
			if d < 0 || d > limit {
				t.Fatalf("backoff(%d) = %v, want within [0, %v]", retry, d, limit)
			}
			distinct[d] = true
		}
		if len(distinct) < 10 {
			t.Fatalf("backoff(%d) has %d distinct values in 200 draws: not jittered", retry, len(distinct))
		}
	}
	if d := n.backoff(1000); d > 80*time.Millisecond {
		t.Fatalf("backoff(1000) = %v overflows the cap", d)
	}
}

type registeredMsg struct{ A int }

type unregisteredMsg struct{ A int }

func init() {
	envelope.Register("cluster.internal_test.registered", func() any { return new(registeredMsg) })
}

func TestWireMessage(t *testing.T) {
	pid := actor.NewPID("127.0.0.1:1", "x")
	tests := []struct {
		name    string
		msg     any
		wantErr error
		check   func(any) bool
	}{
		{"protobuf passes as is", pid, nil, func(v any) bool { return v == any(pid) }},
		{"envelope passes as is", envelope.Wrap(&registeredMsg{1}), nil, func(v any) bool { _, ok := v.(*envelope.Msg); return ok }},
		{"registered value is wrapped", &registeredMsg{1}, nil, func(v any) bool {
			m, ok := v.(*envelope.Msg)
			return ok && m.Type == "cluster.internal_test.registered"
		}},
		{"unregistered value is refused", &unregisteredMsg{1}, ErrNotSerializable, nil},
		{"nil is refused", nil, ErrNotSerializable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := wireMessage(tt.msg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(v) {
				t.Fatalf("wire form %T %v", v, v)
			}
		})
	}
}

func TestSleepCtxStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleepCtx = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("sleepCtx ignored the cancelled context")
	}
}

// TestMemberlistLogRefusals: refused gossip becomes one named WARN line a
// second at most, with the peer and a count of the lines left out; a failed
// join of our own is named as such.
func TestMemberlistLogRefusals(t *testing.T) {
	var buf bytes.Buffer
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	for range 5 {
		l.Println("[ERR] memberlist: failed to receive: no installed keys could decrypt the message from=10.0.0.9:4711")
	}
	out := buf.String()
	if n := strings.Count(out, RefusedGossipMsg); n != 1 || !strings.Contains(out, "peer=10.0.0.9:4711") || !strings.Contains(out, "level=WARN") {
		t.Fatalf("5 refusals within a second logged %d refusal lines: %q", n, out)
	}
	buf.Reset()
	time.Sleep(refusalLogEvery + 50*time.Millisecond)
	l.Println("[WARN] memberlist: failed to join 10.0.0.1:7946: no installed keys could decrypt the message")
	out = buf.String()
	if !strings.Contains(out, RefusedJoinMsg) || !strings.Contains(out, "suppressed=4") {
		t.Fatalf("join refusal logged %q, want %q with suppressed=4", out, RefusedJoinMsg)
	}
}

// The stall threshold follows the failure detector: every stall that can
// get a member declared dead (earliestDeath or longer) quarantines it,
// stalls well below cost nothing, and a member without peers is never
// quarantined.
func TestStallThresholdFollowsDetection(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name      string
		fd        FailureDetection
		threshold time.Duration
	}{
		{"defaults", FailureDetection{}, 1200 * time.Millisecond},
		{"1s probes", FailureDetection{ProbeInterval: time.Second}, 3 * time.Second},
		{"2s probes, mult 4", FailureDetection{ProbeInterval: 2 * time.Second, SuspicionMult: 4}, 7500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := tc.fd.withDefaults()
			if got := fd.StallThreshold(); got != tc.threshold {
				t.Fatalf("threshold %v, want %v", got, tc.threshold)
			}
			peers := 2
			w := newStallWatch(quiet, fd, func() int { return peers })
			t0 := time.Now()
			w.last = t0
			at := t0
			stall := func(gap time.Duration) bool { at = at.Add(gap); return w.observe(at) }
			// run observes at the watch's own tick for d: no stall.
			run := func(d time.Duration) bool {
				tick := tc.threshold / stallTicksPerThreshold
				var q bool
				for end := at.Add(d); at.Before(end); {
					q = stall(min(tick, end.Sub(at)))
				}
				return q
			}
			if stall(tc.threshold - tc.threshold/10) {
				t.Fatalf("a stall of 0.9 x the threshold started a quarantine")
			}
			if !stall(fd.earliestDeath()) {
				t.Fatalf("a stall as long as the earliest death (%v) did not start a quarantine", fd.earliestDeath())
			}
			// It lasts twice the stall, then ends.
			if !run(2*fd.earliestDeath() - 100*time.Millisecond) {
				t.Fatalf("quarantine ended before twice the stall")
			}
			if run(150 * time.Millisecond) {
				t.Fatalf("quarantine still on after twice the stall")
			}
			peers = 0
			if stall(10 * fd.earliestDeath()) {
				t.Fatalf("a member without peers was quarantined")
			}
		})
	}
}

// A member whose start (joining, TLS, the database) takes longer than the
// stall threshold was not stalled: the watch counts from when it runs. It
// once counted from its construction, and a slow start on a busy machine
// refused the member's first activations for seconds.
func TestStallWatchSlowStartIsNoStall(t *testing.T) {
	fd := FailureDetection{ProbeInterval: 2 * time.Second, SuspicionMult: 4}.withDefaults() // 7.5 s threshold: no real stall here
	w := newStallWatch(slog.New(slog.DiscardHandler), fd, func() int { return 2 })
	before := time.Now()
	w.mu.Lock()
	w.last = before.Add(-3 * fd.stallThreshold()) // constructed, then a slow start
	w.mu.Unlock()
	quit := make(chan struct{})
	defer close(quit)
	go w.run(quit)
	for deadline := time.Now().Add(10 * time.Second); ; {
		w.mu.Lock()
		started := !w.last.Before(before)
		w.mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stall watch did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if w.unsettled() {
		t.Fatal("a slow start counted as a stall: the member refuses activations")
	}
}

// TestRegistryIsOneMapPerBucket fails if the shard count of protoactor's
// registry maps is not set before the actor system is made (cluster.init).
func TestRegistryIsOneMapPerBucket(t *testing.T) {
	sys := actor.NewActorSystem()
	buckets := sys.ProcessRegistry.LocalPIDs.LocalPIDs
	if len(buckets) == 0 {
		t.Fatal("protoactor's registry has no buckets: its layout changed, review cluster/registry.go")
	}
	for i, b := range buckets {
		if len(b) != 1 {
			t.Fatalf("registry bucket %d has %d shards, want 1", i, len(b))
		}
	}
}

// BenchmarkRegistryMemory reports what protoactor's registry costs: its
// empty table, and the live heap per process registered the way a busy
// member registers them (a grain per match, a process per seat).
func BenchmarkRegistryMemory(b *testing.B) {
	const processes = 3000 // 1,000 matches of two seats
	var empty, made, filled runtime.MemStats
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&empty)
		sys := actor.NewActorSystem()
		runtime.GC()
		runtime.ReadMemStats(&made)
		for i := range processes {
			sys.ProcessRegistry.Add(nopProcess{}, "seat-"+strconv.Itoa(i))
		}
		runtime.GC()
		runtime.ReadMemStats(&filled)
		b.ReportMetric(float64(made.HeapAlloc-empty.HeapAlloc)/1e6, "MB/system")
		b.ReportMetric(float64(filled.HeapAlloc-made.HeapAlloc)/processes, "B/process")
		runtime.KeepAlive(sys)
	}
}

type nopProcess struct{}

func (nopProcess) SendUserMessage(*actor.PID, any)   {}
func (nopProcess) SendSystemMessage(*actor.PID, any) {}
func (nopProcess) Stop(*actor.PID)                   {}
