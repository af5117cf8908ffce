package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// movingReply is a grain's answer that says its activation is going away.
type movingReply struct{ Why string }

func (m *movingReply) ActivationMoving() (string, bool) { return m.Why, true }

var _ cluster.Moving = (*movingReply)(nil)

func init() {
	envelope.Register("clustertest.movingReply", func() any { return new(movingReply) })
}

// TestRequestRetriesMovingActivations: a reply that says its activation is
// going away is retried by Request itself (the one retry of a grain call),
// after the cached PID is dropped, until a real answer comes; if none comes
// before ctx ends, Request reports the grain unavailable.
func TestRequestRetriesMovingActivations(t *testing.T) {
	onActivate = func(string) {}
	var movesLeft, answered atomic.Int64
	kind := pcluster.NewKind("mover", actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*envelope.Msg); ok {
			answered.Add(1)
			if movesLeft.Add(-1) >= 0 {
				ctx.Respond(envelope.Wrap(&movingReply{Why: "draining"}))
				return
			}
			ctx.Respond(envelope.Wrap(&Count{Host: ctx.ActorSystem().Address()}))
		}
	}))
	node, err := cluster.Start(cluster.Config{
		GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0", ClusterName: "moving",
		Kinds: []*pcluster.Kind{kind}, Retry: cluster.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	movesLeft.Store(2)
	v, err := node.Request(ctx, "m", "mover", &Get{})
	if err != nil {
		t.Fatalf("request after two moving answers: %v", err)
	}
	if _, ok := v.(*Count); !ok || answered.Load() != 3 {
		t.Fatalf("got %T after %d answers, want *Count after 3", v, answered.Load())
	}
	// Always moving: unavailable when ctx ends, with the grain's reason.
	movesLeft.Store(1 << 40)
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	before := answered.Load()
	_, err = node.Request(short, "m", "mover", &Get{})
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("request to an activation always moving: %v; want ErrUnavailable", err)
	}
	if n := answered.Load() - before; n < 2 {
		t.Fatalf("%d attempts in 300 ms; want retries", n)
	}
}

// viewRefusal is a grain's answer that its member refused the activation
// because another member owns the identity in its view.
type viewRefusal struct{}

func (*viewRefusal) ActivationMoving() (string, bool) { return "not the owner in this view", true }
func (*viewRefusal) RefusedByView() bool              { return true }

var _ cluster.ViewRefusal = (*viewRefusal)(nil)

func init() {
	envelope.Register("clustertest.viewRefusal", func() any { return new(viewRefusal) })
}

// TestRequestRetriesViewRefusalsQuickly: while two members' views differ
// after a member left (docs/performance.md §3.4: about 190 ms), the
// identity's owner in the caller's view refuses to activate it. Request
// retries such refusals within Retry.Initial, not with its growing backoff,
// so a request answers soon after the views agree; and the quick retries
// are bounded, so a refusal that lasts backs off as before.
func TestRequestRetriesViewRefusalsQuickly(t *testing.T) {
	onActivate = func(string) {}
	var refuseUntil atomic.Int64 // unix nanoseconds
	var answered atomic.Int64
	kind := pcluster.NewKind("viewer", actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*envelope.Msg); ok {
			answered.Add(1)
			if time.Now().UnixNano() < refuseUntil.Load() {
				ctx.Respond(envelope.Wrap(&viewRefusal{}))
				return
			}
			ctx.Respond(envelope.Wrap(&Count{Host: ctx.ActorSystem().Address()}))
		}
	}))
	// The default backoff (20 ms doubling to 1 s), the one failover sees.
	node, err := cluster.Start(cluster.Config{
		GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0", ClusterName: "viewrefusal",
		Kinds:  []*pcluster.Kind{kind},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const (
		requests = 8
		refusing = 300 * time.Millisecond
		// Quick retries wait 10 to 20 ms, 32 of them at least 320 ms, so they
		// outlast the refusal however fast the machine (the slowest of eight answered
		// 128–247 ms late under -race on a busy box: their activations
		// queue behind each other); the growing backoff, 300 ms into a
		// refusal, waits up to 320 or 640 ms (617–873 ms late).
		bound = 400 * time.Millisecond
	)
	until := time.Now().Add(refusing)
	refuseUntil.Store(until.UnixNano())
	late := make(chan time.Duration, requests)
	for i := range requests {
		go func() {
			_, err := node.Request(ctx, fmt.Sprintf("v%d", i), "viewer", &Get{})
			if err != nil {
				t.Errorf("request v%d: %v", i, err)
			}
			late <- time.Since(until)
		}()
	}
	var worst time.Duration
	for range requests {
		d := <-late
		t.Logf("late %v", d)
		worst = max(worst, d)
	}
	if worst > bound {
		t.Errorf("slowest request answered %v after the refusals ended; want at most %v", worst, bound)
	}

	// A refusal that lasts: past viewRetries quick retries the request backs
	// off as for any other failure, so in 3 s it makes far fewer attempts
	// than quick retries all along would (3 s / 10 ms on average = 300).
	refuseUntil.Store(time.Now().Add(time.Hour).UnixNano())
	before := answered.Load()
	short, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	if _, err := node.Request(short, "lasting", "viewer", &Get{}); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("request refused for an hour: %v; want ErrUnavailable", err)
	}
	if n := answered.Load() - before; n > 50 {
		t.Errorf("%d attempts in 3 s of refusals; want the quick retries bounded (at most 32 + the backoff's)", n)
	}
}
