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
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// deadlinePing is a request of the deadline tests.
type deadlinePing struct{ N int }

func init() {
	envelope.Register("clustertest.deadlinePing", func() any { return new(deadlinePing) })
}

// TestAttemptSenderSendsOnlyWhileTheAttemptIsOn: what protoactor's Request
// sends for an attempt carries the attempt's deadline (a copy: the
// request's message is shared by its attempts and may be in a writer's
// hands), and nothing is sent once the attempt ended or its deadline
// passed; protoactor then gets a future that fails at once.
func TestAttemptSenderSendsOnlyWhileTheAttemptIsOn(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	tap := make(clustertest.Tap, 4)
	to, _ := sys.ProcessRegistry.Add(tap, "tap")
	wire := envelope.Wrap(&deadlinePing{N: 1})
	dl := time.Now().Add(time.Minute)

	s, msg := cluster.NewAttemptSender(sys.Root, slog.Default(), wire, dl)
	m, ok := msg.(*envelope.Msg)
	if !ok || m == wire || m.Deadline != dl.UnixNano() || m.V != wire.V || wire.Deadline != 0 {
		t.Fatalf("attempt message %+v from %+v: want a copy with deadline %d, the original untouched", msg, wire, dl.UnixNano())
	}
	s.RequestFuture(to, msg, time.Second)
	if got := (<-tap).(*envelope.Msg); got.Deadline != dl.UnixNano() {
		t.Fatalf("sent deadline %d, want %d", got.Deadline, dl.UnixNano())
	}

	refused := func(s *cluster.AttemptSender, why string) {
		t.Helper()
		start := time.Now()
		if _, err := s.RequestFuture(to, msg, 10*time.Second).Result(); !errors.Is(err, actor.ErrTimeout) {
			t.Fatalf("%s: the future gave %v, want a timeout", why, err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("%s: the refused send's future took %v to fail, want at once", why, waited)
		}
		select {
		case got := <-tap:
			t.Fatalf("%s: sent %+v", why, got)
		default:
		}
	}
	s.End()
	refused(s, "after the attempt ended")
	past, _ := cluster.NewAttemptSender(sys.Root, slog.Default(), wire, time.Now().Add(-time.Millisecond))
	refused(past, "past the deadline")

	// A protobuf message (no envelope) is sent as it is, without a deadline.
	proto := &pcluster.ClusterIdentity{Identity: "x", Kind: "k"}
	if _, msg := cluster.NewAttemptSender(sys.Root, slog.Default(), proto, dl); msg != proto {
		t.Fatalf("a protobuf message became %T", msg)
	}
}

// TestRequestCarriesItsAttemptsDeadline: a grain reached through Request
// gets its message with the deadline of the attempt: its start plus the
// attempt's bound, RequestTimeout or what is left of ctx if less.
func TestRequestCarriesItsAttemptsDeadline(t *testing.T) {
	var got atomic.Int64
	kind := pcluster.NewKind("deadlines", actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*envelope.Msg); ok {
			got.Store(m.Deadline)
			ctx.Respond(envelope.Wrap(&deadlinePing{N: 2}))
		}
	}))
	const attempt = 3 * time.Second
	node, err := cluster.Start(cluster.Config{
		GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0", ClusterName: "deadlines",
		Kinds: []*pcluster.Kind{kind}, RequestTimeout: attempt,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Kill()
	for _, tt := range []struct {
		name  string
		ctx   time.Duration
		bound time.Duration
	}{
		{"RequestTimeout", time.Minute, attempt},
		{"what is left of ctx", time.Second, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A new identity each time: its first attempt resolves it
			// through protoactor, the path a remote activation takes.
			before := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), tt.ctx)
			defer cancel()
			if _, err := node.Request(ctx, "d-"+tt.name, "deadlines", &deadlinePing{N: 1}); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			dl := time.Unix(0, got.Load())
			if dl.Before(before.Add(tt.bound)) || dl.After(after.Add(tt.bound)) {
				t.Fatalf("deadline %v, want within [%v, %v] (the attempt's start + %v)", dl, before.Add(tt.bound), after.Add(tt.bound), tt.bound)
			}
		})
	}
}
