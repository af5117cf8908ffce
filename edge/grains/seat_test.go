package grains

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/protocol"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
)

// overlapSink records what it is given and counts Deliver calls that ran
// while another was still running.
type overlapSink struct {
	inFlight atomic.Int32
	overlaps atomic.Int32
	mu       sync.Mutex
	frames   [][]byte
	detached []edge.DetachReason
}

func (k *overlapSink) Deliver(frames [][]byte) {
	if k.inFlight.Add(1) != 1 {
		k.overlaps.Add(1)
	}
	runtime.Gosched() // widen the window another sender could overlap in
	k.mu.Lock()
	k.frames = append(k.frames, frames...)
	k.mu.Unlock()
	k.inFlight.Add(-1)
}

func (k *overlapSink) Detach(r edge.DetachReason) {
	k.mu.Lock()
	k.detached = append(k.detached, r)
	k.mu.Unlock()
}

func (k *overlapSink) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.frames)
}

// testGateway is a Gateway on a local actor system whose grain calls all
// go to cluster.
func testGateway(sys *actor.ActorSystem, cluster Requester) *Gateway {
	return newGateway(GatewayConfig{
		System: sys, Cluster: cluster, RequestTimeout: time.Second, Timing: actors.DefaultTiming(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// numberedFrame is a frame without seq that names its sender and number.
func numberedFrame(sender, n int) actors.OutFrame {
	d := []byte{0x92, byte(protocol.ServerClockKind), byte(sender), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(d[3:], uint32(n))
	return actors.OutFrame{Data: d}
}

// registeredSeat is a seat of match "m" registered in a fresh actor system,
// unregistered when the test ends.
func registeredSeat(t *testing.T, sink edge.SeatSink) (*actor.ActorSystem, *Seat) {
	t.Helper()
	sys := quietSystem()
	t.Cleanup(sys.Shutdown)
	s := &Seat{gw: testGateway(sys, okRequester{}), matchID: "m", sink: sink, initial: make(chan struct{})}
	if err := s.register(sys, "seat-m-"+mustRandomSuffix()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.proc.Stop(s.pid) })
	return sys, s
}

// TestSeatProcessSerializesSenders: pushes from several goroutines at once
// (as from an old and a new activation and protoactor remote's endpoint
// reader) reach the sink through Deliver calls that never overlap, every
// sender's pushes in its order, wrapped in a MessageEnvelope or not; other
// messages are ignored without harm.
func TestSeatProcessSerializesSenders(t *testing.T) {
	sink := &overlapSink{}
	sys, s := registeredSeat(t, sink)

	const senders, pushes = 4, 300
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			// Each sender resolves its own PID value, as a grain does.
			pid := actor.NewPID(s.pid.Address, s.pid.Id)
			for n := range pushes {
				var m any = envelope.Wrap(&actors.SeatFrames{Epoch: 1, Frames: []actors.OutFrame{numberedFrame(i, n)}})
				if i%2 == 1 {
					m = &actor.MessageEnvelope{Message: m} // as remote delivery with a sender does
				}
				sys.Root.Send(pid, m)
			}
		})
	}
	// Nothing else means anything to a seat, and nothing else stops it.
	sys.Root.Send(s.pid, "not a push")
	sys.Root.Send(s.pid, envelope.Wrap(&actors.Reply{}))
	sys.Root.Poison(s.pid)
	s.proc.SendSystemMessage(s.pid, &actor.Watch{Watcher: actor.NewPID("elsewhere", "w")})
	wg.Wait()

	if n := sink.overlaps.Load(); n > 0 {
		t.Errorf("%d Deliver calls overlapped another", n)
	}
	if got := sink.count(); got != senders*pushes {
		t.Fatalf("sink got %d frames, want %d", got, senders*pushes)
	}
	next := make([]int, senders)
	for _, f := range sink.frames {
		sender, n := int(f[2]), int(binary.BigEndian.Uint32(f[3:]))
		if n != next[sender] {
			t.Fatalf("sender %d's push %d arrived where %d was due", sender, n, next[sender])
		}
		next[sender]++
	}

	// A detach of an older activation is ignored, one of the current epoch is not.
	sys.Root.Send(s.pid, envelope.Wrap(&actors.SeatDetached{Epoch: 0, Reason: actors.DetachReplaced}))
	if len(sink.detached) != 0 {
		t.Fatalf("a stale activation's actors.SeatDetached detached the seat: %v", sink.detached)
	}
	sys.Root.Send(s.pid, envelope.Wrap(&actors.SeatDetached{Epoch: 1, Reason: actors.DetachReplaced}))
	if len(sink.detached) != 1 || sink.detached[0] != edge.DetachReplaced {
		t.Fatalf("detached %v, want [Replaced]", sink.detached)
	}
}

// TestSeatCloseUnregisters: after Close the seat's PID is gone from the
// registry, and a push after it, through a PID value that still holds the
// process (as a grain's does) or through a fresh one, reaches no sink.
func TestSeatCloseUnregisters(t *testing.T) {
	sys := quietSystem()
	t.Cleanup(sys.Shutdown)
	sink := &overlapSink{}
	g := testGateway(sys, okRequester{})
	s := &Seat{gw: g, matchID: "m", sink: sink, initial: make(chan struct{})}
	g.open["m"] = 1
	if err := s.register(sys, "seat-m-"+mustRandomSuffix()); err != nil {
		t.Fatal(err)
	}
	if p, ok := sys.ProcessRegistry.GetLocal(s.pid.Id); !ok || p != &s.proc {
		t.Fatalf("registry holds %v (%v) under the seat's id", p, ok)
	}
	held := actor.NewPID(s.pid.Address, s.pid.Id)
	push := func(pid *actor.PID) {
		sys.Root.Send(pid, envelope.Wrap(&actors.SeatFrames{Epoch: 1, Initial: true, Frames: []actors.OutFrame{numberedFrame(0, 0)}}))
	}
	push(held) // resolves, and caches, the process in held
	if sink.count() != 1 || !s.initialDone() {
		t.Fatalf("before Close: %d frames, initial done %v", sink.count(), s.initialDone())
	}

	s.Close(false)
	if _, ok := sys.ProcessRegistry.GetLocal(s.pid.Id); ok {
		t.Fatal("the seat's PID is still registered after Close")
	}
	if len(g.open) != 0 {
		t.Errorf("open seats after Close: %v", g.open)
	}
	push(held)
	push(actor.NewPID(s.pid.Address, s.pid.Id))
	s.proc.SendUserMessage(s.pid, envelope.Wrap(&actors.SeatDetached{Epoch: 1, Reason: actors.DetachReplaced}))
	sys.Root.Stop(held) // a second stop, through the stopped process
	if n := sink.count(); n != 1 {
		t.Errorf("sink got %d frames after Close", n-1)
	}
	if len(sink.detached) != 0 {
		t.Errorf("a actors.SeatDetached after Close reached the sink: %v", sink.detached)
	}
}

// TestSeatRegisterClash: a seat id already registered is refused, and the
// refusal leaves the other's registration alone.
func TestSeatRegisterClash(t *testing.T) {
	sys := quietSystem()
	t.Cleanup(sys.Shutdown)
	a := &Seat{matchID: "m", sink: &overlapSink{}, initial: make(chan struct{})}
	b := &Seat{matchID: "m", sink: &overlapSink{}, initial: make(chan struct{})}
	if err := a.register(sys, "seat-m-x"); err != nil {
		t.Fatal(err)
	}
	if err := b.register(sys, "seat-m-x"); !errors.Is(err, actor.ErrNameExists) {
		t.Fatalf("second registration under one id: %v, want ErrNameExists", err)
	}
	if p, ok := sys.ProcessRegistry.GetLocal("seat-m-x"); !ok || p != &a.proc {
		t.Fatalf("after the clash the id holds %v (%v), want the first seat", p, ok)
	}
}

// attachOnly answers every grain call with code, and AttachSeat too, but
// pushes no frames.
type attachOnly struct{ code actors.ReplyCode }

func (r attachOnly) Request(context.Context, string, string, any) (any, error) {
	return &actors.Reply{Code: r.code}, nil
}

// seatIDs lists the registered ids of match m's seats.
func seatIDs(sys *actor.ActorSystem, m string) []string {
	var ids []string
	for _, b := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, id := range b.Keys() {
			if strings.HasPrefix(id, "seat-"+m+"-") {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// TestOpenSeatFailureUnregisters: an OpenSeat that fails, because the grain
// refused the attach or because the initial frames never came, leaves no
// seat registered.
func TestOpenSeatFailureUnregisters(t *testing.T) {
	sys := quietSystem()
	t.Cleanup(sys.Shutdown)
	for _, tc := range []struct {
		name string
		code actors.ReplyCode
		want error
	}{
		{"refused", actors.ReplyNotFound, edge.ErrMatchNotFound},
		{"no initial frames", actors.ReplyOK, edge.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGateway(sys, attachOnly{tc.code})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := g.OpenSeat(ctx, edge.OpenSeatRequest{MatchID: "m", Seat: 0, TicketID: "t"}, &overlapSink{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("OpenSeat: %v, want %v", err, tc.want)
			}
			if ids := seatIDs(sys, "m"); len(ids) > 0 {
				t.Fatalf("still registered after the failed OpenSeat: %v", ids)
			}
		})
	}
}

// panicSink panics on its first Deliver and records the frames after.
type panicSink struct {
	overlapSink
	panicked bool
}

func (k *panicSink) Deliver(frames [][]byte) {
	if !k.panicked {
		k.panicked = true
		panic("sink bug")
	}
	k.overlapSink.Deliver(frames)
}

// TestSeatProcessContainsSinkPanic: a sink that panics does not take the
// sender (a grain, protoactor remote's endpoint reader) down, and the seat
// goes on taking pushes.
func TestSeatProcessContainsSinkPanic(t *testing.T) {
	sink := &panicSink{}
	sys, s := registeredSeat(t, sink)
	for n := range 2 {
		sys.Root.Send(s.pid, envelope.Wrap(&actors.SeatFrames{Epoch: 1, Frames: []actors.OutFrame{numberedFrame(0, n)}}))
	}
	if !sink.panicked || sink.count() != 1 {
		t.Fatalf("panicked %v, then %d frames, want 1", sink.panicked, sink.count())
	}
}
