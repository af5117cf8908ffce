package cluster_test

import (
	"context"
	"errors"
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
