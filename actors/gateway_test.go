package actors

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/persistence"
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
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			store := sk.open(t)
			grains := &unreachableGrains{}
			sys := actor.NewActorSystem()
			t.Cleanup(sys.Shutdown)
			gw := testGateway(sys, grains)
			gw.cfg.Store, gw.cfg.Rules, gw.cfg.RequestTimeout = store, ToyRules{}, 5*time.Second

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			callerDeadline, _ := ctx.Deadline()
			id, err := gw.Create(ctx, MatchSpec{Names: [2]string{"a", "b"}, Decks: [2]string{"S1", "S2"}})
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
