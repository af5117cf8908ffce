package grains

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/persistence/storetest"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
)

// unreachableGrains is a cluster in which no grain ever answers (its owner
// is moving): each request waits for its context and records the deadline
// it was given.
type unreachableGrains struct {
	mu        sync.Mutex
	deadlines []time.Time
}

func (u *unreachableGrains) Request(ctx context.Context, _, _ string, _ any) (any, error) {
	dl, _ := ctx.Deadline()
	u.mu.Lock()
	u.deadlines = append(u.deadlines, dl)
	u.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCreateAnswersWhileTheGrainIsUnreachable: a match is created once it is
// durable; waking its grain may take no more than half the caller's time, so
// an API caller gets the id back (the first attach or the reclaimer
// activates the match) instead of its own timeout. In a rolling restart on a
// loaded machine, a wake that waited the whole API bound made the caller
// time out on a match that existed.
func TestCreateAnswersWhileTheGrainIsUnreachable(t *testing.T) {
	for _, sk := range []struct {
		name string
		open func(t *testing.T) persistence.Store
	}{{"embedded", func(t *testing.T) persistence.Store { return storetest.Embedded(t) }}, {"postgres", func(t *testing.T) persistence.Store { return pgtest.NewStore(t) }}} {
		t.Run(sk.name, func(t *testing.T) {
			store := sk.open(t)
			grains := &unreachableGrains{}
			sys := actor.NewActorSystem()
			t.Cleanup(sys.Shutdown)
			gw := testGateway(sys, grains)
			gw.cfg.Store, gw.cfg.Rules, gw.cfg.RequestTimeout = store, actors.ToyRules{}, 5*time.Second

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			callerDeadline, _ := ctx.Deadline()
			id, err := gw.CreateMatch(ctx, edge.MatchSpec{Names: [2]string{"a", "b"}, Decks: [2]string{"S1", "S2"}})
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if ctx.Err() != nil {
				t.Fatalf("Create returned only after the caller's deadline")
			}
			grains.mu.Lock()
			deadlines := slices.Clone(grains.deadlines)
			grains.mu.Unlock()
			if len(deadlines) == 0 {
				t.Fatal("Create did not try to wake the new match")
			}
			// Half of the caller's 2 s: the wake must end by the midpoint.
			for _, dl := range deadlines {
				if dl.IsZero() || dl.After(callerDeadline.Add(-900*time.Millisecond)) {
					t.Fatalf("wake attempt deadline %v; the caller's is %v: the wake may use at most half", dl, callerDeadline)
				}
			}
			matches, err := store.ListUnfinished(context.Background(), "", 10)
			if err != nil {
				t.Fatalf("list matches: %v", err)
			}
			if !slices.ContainsFunc(matches, func(m persistence.MatchInfo) bool { return m.MatchID == id }) {
				t.Fatalf("created match %s is not in the store: %+v", id, matches)
			}
		})
	}
}

type okRequester struct{}

func (okRequester) Request(ctx context.Context, _, _ string, _ any) (any, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("request without a deadline")
	}
	return &actors.Reply{Code: actors.ReplyOK}, nil
}

// BenchmarkGatewayCall measures Gateway.call's own cost around a request
// that answers at once: with the caller's deadline, shorter or longer than
// RequestTimeout (the edge's default is 10 s, the gateway's 5 s), no second
// context and timer is made.
func BenchmarkGatewayCall(b *testing.B) {
	g := &Gateway{cfg: GatewayConfig{Cluster: okRequester{}, RequestTimeout: 5 * time.Second}}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"edge-deadline", 5 * time.Second}, {"longer-deadline", time.Minute}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
				if _, err := g.call(ctx, "m", &actors.Wake{}); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
