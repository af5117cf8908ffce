package cluster_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
)

// cmdGoneSend sends a message to a PID at an address nobody listens at;
// result: the bytes the member allocated meanwhile.
const cmdGoneSend = "gonesend"

// TestSendToAGonePeerAllocatesLittle: a message to an address whose
// endpoint is gone (a member that just died, still named by cached PIDs)
// makes protoactor a new endpoint there, on the sender's goroutine, while
// every other sender to that address waits. With protoactor's default
// writer queue that endpoint came with 16 MB of pointer slots: after a
// kill, grains pushing to the dead member's seats and the topology update
// waited 0.05–0.46 s on it (docs/cluster.md §5.1). It must cost little.
// The member runs in a child process: the endpoint's failed dial leaves a
// gRPC connection behind (§5.1), which would race with the next in-process
// member's start.
func TestSendToAGonePeerAllocatesLittle(t *testing.T) {
	m := clustertest.StartMember(t, clustertest.MemberOptions{Name: "sender"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := m.Call(ctx, cmdGoneSend, "")
	if err != nil {
		t.Fatal(err)
	}
	allocated, err := strconv.ParseUint(got, 10, 64)
	if err != nil {
		t.Fatalf("allocated %q: %v", got, err)
	}
	if allocated > 1<<20 {
		t.Fatalf("a send to a gone peer allocated %d KiB, want under 1 MiB", allocated>>10)
	}
}

// goneSendHandler is cmdGoneSend in the member child.
func goneSendHandler(_ context.Context, n *cluster.Node, _ string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	gone := l.Addr().String()
	if err := l.Close(); err != nil { // now nobody listens there
		return "", err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n.System().Root.Send(actor.NewPID(gone, "seat-of-a-dead-member"), envelope.Wrap(&Inc{By: 1}))
	runtime.ReadMemStats(&after)
	return fmt.Sprint(after.TotalAlloc - before.TotalAlloc), nil
}
