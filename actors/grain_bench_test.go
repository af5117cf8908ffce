package actors

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// BenchmarkGrainIntent measures one accepted intent through a grain on
// protoactor: the request, the checks, the engine, the log append to a
// store that answers at once, the result and the events pushed to both
// seats, and the reply. The rules are the toy engine's, endless, so the
// grain's own cost is what is measured.
func BenchmarkGrainIntent(b *testing.B) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	store := &benchStore{}
	props, err := benchGrainProps(GrainDeps{Store: store, Rules: endlessRules{}, Timing: DefaultTiming(),
		Owner: func() string { return "bench" }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	meta, err := encodeInternal(matchMeta{Names: [2]string{"a", "b"}, Decks: [2]string{"S1", "S2"}, CreatedAt: time.Now().UnixMilli()})
	if err != nil {
		b.Fatal(err)
	}
	store.meta = meta
	pid := sys.Root.Spawn(props)
	sys.Root.Send(pid, &pcluster.ClusterInit{Identity: pcluster.NewClusterIdentity("bench", MatchKind)})
	for s := range 2 {
		seat, _ := sys.ProcessRegistry.Add(discardProcess{}, fmt.Sprintf("seat-%d", s))
		benchAsk(b, sys, pid, &AttachSeat{Seat: s, TicketID: fmt.Sprintf("t%d", s), TicketExpiresMs: time.Now().Add(time.Hour).UnixMilli(),
			SessionAddr: seat.Address, SessionID: seat.Id})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// Seat 0 starts (seed 0); ids must be new. The intent comes as a
		// local seat's does, a value the grain encodes for its log.
		s := i % 2
		ci := &protocol.ClientIntent{IntentID: fmt.Sprint(i), Intent: protocol.EndTurn{}}
		r := benchAsk(b, sys, pid, &SubmitIntent{Seat: s, SessionID: fmt.Sprintf("seat-%d", s), Intent: ci})
		if r.Code != ReplyOK {
			b.Fatalf("intent %d: %+v", i, r)
		}
	}
	b.StopTimer()
	if got := store.appends - 2; got != b.N {
		b.Fatalf("%d intents appended, want %d", got, b.N)
	}
}

// benchGrainProps is the grain's props without the cluster's middleware
// (a bench has no cluster).
func benchGrainProps(deps GrainDeps) (*actor.Props, error) {
	d, err := deps.prepare()
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return &grain{deps: d, core: newCore(d)} }), nil
}

func benchAsk(b *testing.B, sys *actor.ActorSystem, pid *actor.PID, m any) *Reply {
	b.Helper()
	res, err := sys.Root.RequestFuture(pid, envelope.Wrap(m), 5*time.Second).Result()
	if err != nil {
		b.Fatal(err)
	}
	return res.(*envelope.Msg).V.(*Reply)
}

// endlessRules is the toy game without its end.
type endlessRules struct{ ToyRules }

func (r endlessRules) New(seed uint64, decks [2]string) (Engine, []protocol.EventEnvelope, error) {
	e, evs, err := r.ToyRules.New(seed, decks)
	if err != nil {
		return nil, nil, err
	}
	return endless{e.(*toyEngine)}, evs, nil
}

type endless struct{ *toyEngine }

func (e endless) Execute(player int, in protocol.Intent) ([]protocol.EventEnvelope, error) {
	e.Turn = 0
	return e.toyEngine.Execute(player, in)
}

type discardProcess struct{}

func (discardProcess) SendUserMessage(*actor.PID, any)   {}
func (discardProcess) SendSystemMessage(*actor.PID, any) {}
func (discardProcess) Stop(*actor.PID)                   {}

// benchStore answers at once: a claim with no log, every write accepted.
// Only the grain's goroutine calls it.
type benchStore struct {
	persistence.Store
	meta    []byte
	appends int
}

func (s *benchStore) Claim(context.Context, string, string) (persistence.Recovery, error) {
	return persistence.Recovery{Epoch: 1, Meta: s.meta}, nil
}

func (s *benchStore) Append(context.Context, string, int64, []persistence.LogEntry) error {
	s.appends++
	return nil
}

func (s *benchStore) SaveSnapshot(context.Context, string, int64, persistence.Snapshot) error {
	return nil
}

func (s *benchStore) ConsumeTicket(context.Context, string, time.Time, string) error { return nil }
