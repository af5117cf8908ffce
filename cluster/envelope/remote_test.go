package envelope_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// The remote tests put one protoactor remote in this process and one in a
// child process (two remotes in one process race under -race), and talk over
// a real gRPC stream.

// ChildOnly is registered only in the child, so its replies are unknown to
// the parent.
type ChildOnly struct{ A int }

// Ask makes the child's echo actor reply with a ChildOnly.
type Ask struct{}

func init() {
	envelope.Register("test.Ask", func() any { return new(Ask) })
}

const echoName = "echo"

// echo answers Ping with Pong{N+1}, Ask with a ChildOnly, and an Unknown with
// Pong{-1} naming what it saw, which proves the Unknown reached it.
func echo(ctx actor.Context) {
	m, ok := ctx.Message().(*envelope.Msg)
	if !ok {
		return
	}
	switch v := m.V.(type) {
	case *Ping:
		ctx.Respond(envelope.Wrap(&Pong{N: v.N + 1, Seen: "ping"}))
	case *Ask:
		ctx.Respond(envelope.Wrap(&ChildOnly{A: 1}))
	case *envelope.Unknown:
		kind := "other"
		switch {
		case errors.Is(v.Err, envelope.ErrUnknownType):
			kind = "unknown-type"
		case errors.Is(v.Err, envelope.ErrTooLarge):
			kind = "too-large"
		case errors.Is(v.Err, envelope.ErrDecode):
			kind = "undecodable"
		}
		ctx.Respond(envelope.Wrap(&Pong{N: -1, Seen: kind}))
	}
}

func quietSystem() *actor.ActorSystem {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
}

func TestHelperEnvelopeRemote(t *testing.T) {
	if !clustertest.IsChild() {
		t.Skip("helper process for TestRemote")
	}
	envelope.Register("test.ChildOnly", func() any { return new(ChildOnly) })
	system := quietSystem()
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	if _, err := system.Root.SpawnNamed(actor.PropsFromFunc(echo), echoName); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	clustertest.Serve(map[string]string{"addr": system.Address()}, nil)
}

func TestRemote(t *testing.T) {
	child := clustertest.StartChild(t, clustertest.ChildOptions{Name: "echo", TestName: "TestHelperEnvelopeRemote"})
	system := quietSystem()
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false) })
	target := actor.NewPID(child.Ready["addr"], echoName)

	request := func(t *testing.T, msg any) any {
		t.Helper()
		res, err := system.Root.RequestFuture(target, msg, 10*time.Second).Result()
		if err != nil {
			t.Fatalf("request %T: %v (child stderr:\n%s)", msg, err, child.StderrTail())
		}
		m, ok := res.(*envelope.Msg)
		if !ok {
			t.Fatalf("reply %T, want *envelope.Msg", res)
		}
		return m.V
	}
	pingPong := func(t *testing.T, n int) {
		t.Helper()
		if p, ok := request(t, envelope.Wrap(&Ping{N: n})).(*Pong); !ok || p.N != n+1 || p.Seen != "ping" {
			t.Fatalf("ping %d: reply %#v, want Pong{%d}", n, p, n+1)
		}
	}

	pingPong(t, 1)
	// Each bad envelope reaches the receiver as an Unknown, and the same
	// link then carries the next message: the stream was not closed.
	bad := []struct {
		name string
		env  *envelope.Envelope
		seen string
	}{
		{"unknown type", &envelope.Envelope{Type: "test.NotInChild", Data: []byte{0x80}}, "unknown-type"},
		{"undecodable data", &envelope.Envelope{Type: "test.Ping", Data: []byte{0xc1}}, "undecodable"},
		{"over the size limit", &envelope.Envelope{Type: "test.Big", Data: make([]byte, envelope.MaxDataBytes+1)}, "too-large"},
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if p, ok := request(t, tt.env).(*Pong); !ok || p.N != -1 || p.Seen != tt.seen {
				t.Fatalf("reply %#v, want Pong{-1, %q}", p, tt.seen)
			}
			pingPong(t, 10*(i+1))
		})
	}
	t.Run("reply of a type unknown here", func(t *testing.T) {
		u, ok := request(t, envelope.Wrap(&Ask{})).(*envelope.Unknown)
		if !ok || u.Type != "test.ChildOnly" || !errors.Is(u.Err, envelope.ErrUnknownType) {
			t.Fatalf("reply %#v, want Unknown{test.ChildOnly}", u)
		}
		pingPong(t, 100)
	})
}
