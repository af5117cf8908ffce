package grains

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/protocol"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
)

// signalSink tells on got that a Deliver happened; it keeps nothing.
type signalSink struct{ got chan struct{} }

func (k signalSink) Deliver([][]byte)         { k.got <- struct{}{} }
func (k signalSink) Detach(edge.DetachReason) {}

// quietSystem is a local actor system that logs nothing (its start-up line
// would land between benchmark results).
func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// benchSeat gives a seat that only receives (no gateway, no grain), the PID
// a grain would push to, and how to end it.
func benchSeat(tb testing.TB, sys *actor.ActorSystem, sink edge.SeatSink) (*actor.PID, func()) {
	s := &Seat{matchID: "bench", sink: sink, initial: make(chan struct{})}
	if err := s.register(sys, "seat-bench-"+mustRandomSuffix()); err != nil {
		tb.Fatal(err)
	}
	return s.pid, func() { s.proc.Stop(s.pid) }
}

// BenchmarkSeatDeliver measures what one push of a grain to a local seat
// costs, from the grain's ctx.Send until the sink has the frames: the path
// every accepted intent takes twice (the sender's seat and the other seat).
func BenchmarkSeatDeliver(b *testing.B) {
	sys := quietSystem()
	b.Cleanup(sys.Shutdown)
	sink := signalSink{got: make(chan struct{}, 1)}
	pid, stop := benchSeat(b, sys, sink)
	b.Cleanup(stop)
	frame := actors.OutFrame{Data: []byte{0x92, byte(protocol.ServerClockKind), 0x80}}
	b.ReportAllocs()
	for b.Loop() {
		sys.Root.Send(pid, envelope.Wrap(&actors.SeatFrames{Epoch: 1, Frames: []actors.OutFrame{frame}}))
		<-sink.got
	}
}

// BenchmarkSeatLiveHeap reports the live heap one open seat holds on the
// edge (the Seat and what receives its pushes, registry entry included) as
// B/seat, with 1,000 seats open at once: the per-connection share that idle
// connections pay.
func BenchmarkSeatLiveHeap(b *testing.B) {
	sys := quietSystem()
	b.Cleanup(sys.Shutdown)
	const n = 1000
	sink := signalSink{got: make(chan struct{}, 1)}
	stops := make([]func(), n)
	var perSeat float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range stops {
			_, stops[i] = benchSeat(b, sys, sink)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSeat = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		for _, stop := range stops {
			stop()
		}
		// A PID value keeps the Process it was resolved to: dropping the
		// closures lets the next round's "before" see these seats gone.
		clear(stops)
	}
	b.ReportMetric(perSeat, "B/seat")
}

// BenchmarkSeatIntent measures what a seat spends to hand one decoded intent
// to its grain's requester (one that answers at once): the path of every
// intent between the edge's session and the cluster.
func BenchmarkSeatIntent(b *testing.B) {
	sys := quietSystem()
	b.Cleanup(sys.Shutdown)
	s := &Seat{gw: testGateway(sys, okRequester{}), matchID: "bench", sink: signalSink{}, initial: make(chan struct{})}
	if err := s.register(sys, "seat-bench-"+mustRandomSuffix()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.proc.Stop(s.pid) })
	ci := &protocol.ClientIntent{IntentID: "0f8e2a4c-5b1d-4e7a-9c3f-2d6b8a1e0c57", BasedOnSeq: 41,
		Intent: protocol.Call{PrintingID: "E-01", Slot: 3}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Intent(ctx, ci); err != nil {
			b.Fatal(err)
		}
	}
}
