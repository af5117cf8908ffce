package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// claimCounter counts the claims that reach the store.
type claimCounter struct {
	persistence.Store
	claims atomic.Int32
}

func (s *claimCounter) Claim(ctx context.Context, matchID, owner string) (persistence.Recovery, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, matchID, owner)
}

// TestGrainDropsExpiredRequests sends a match grain requests from another
// member (envelope.Msg with a Deadline) as protoactor delivers them after
// an activation request. One past its deadline by more than the clock-skew
// allowance is dropped: no reply, and above all no claim when it is the
// first, for its sender went to the match's new owner meanwhile
// (docs/operations.md §3). One within the allowance, or one without a
// deadline (an older member, or one on this member), is served.
func TestGrainDropsExpiredRequests(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	store := &claimCounter{Store: storeKinds[0].open(t)}
	ctx := context.Background()
	id, err := CreateMatch(ctx, store, ToyRules{}, MatchSpec{Names: [2]string{"Ann", "Bob"}, Decks: [2]string{"S1", "S2"}})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const skew = time.Second
	props, err := benchGrainProps(GrainDeps{Store: store, Rules: ToyRules{}, Timing: fastTiming(), Metrics: metrics,
		Owner: func() string { return "me" }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	pid := sys.Root.Spawn(props)
	sys.Root.Send(pid, &pcluster.ClusterInit{Identity: pcluster.NewClusterIdentity(id, MatchKind)})

	n := 0
	// ask sends v with deadline (0: none) from a sender of its own and
	// returns where its replies go.
	ask := func(v any, deadline time.Time) clustertest.Tap {
		tap := make(clustertest.Tap, 4)
		n++
		from, _ := sys.ProcessRegistry.Add(tap, "tap-"+string(rune('a'+n)))
		m := envelope.Wrap(v)
		if !deadline.IsZero() {
			m.Deadline = deadline.UnixNano()
		}
		sys.Root.RequestWithCustomSender(pid, m, from)
		return tap
	}
	answered := func(tap clustertest.Tap) *Reply {
		t.Helper()
		select {
		case m := <-tap:
			return m.(*envelope.Msg).V.(*Reply)
		case <-time.After(5 * time.Second):
			t.Fatal("no reply within 5 s")
			return nil
		}
	}
	// unanswered checks that tap got nothing. Call it after a later
	// request from the same sender was answered: the grain answers in
	// order, so an answer to tap would already be there.
	unanswered := func(tap clustertest.Tap, what string) {
		t.Helper()
		select {
		case m := <-tap:
			t.Fatalf("%s was answered: %+v", what, m)
		default:
		}
	}

	// The activation's first request is late: it is dropped (and counted)
	// and nothing is claimed. ClusterInit came before it in the mailbox.
	late := ask(&Wake{}, time.Now().Add(-skew-time.Second))
	clustertest.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if got := testutil.ToFloat64(metrics.RequestsExpired); got != 1 {
			return fmt.Errorf("matchgrain_grain_requests_expired_total = %v, want 1", got)
		}
		return nil
	})
	if c := store.claims.Load(); c != 0 {
		t.Fatalf("%d claims after the activation and a late request, want 0", c)
	}
	if r := answered(ask(&Wake{}, time.Now().Add(-skew/2))); r.Code != ReplyOK {
		t.Fatalf("a wake within the skew allowance: %+v", r)
	}
	unanswered(late, "a wake past its deadline")
	if c := store.claims.Load(); c != 1 {
		t.Fatalf("%d claims, want 1: the wake within the skew allowance claims", c)
	}

	// A running activation drops late requests too: a late seat attach
	// changes nothing (the seat stays unattached), an attach without a
	// deadline is served.
	seat, _ := sys.ProcessRegistry.Add(discardProcess{}, "seat-0")
	attach := &AttachSeat{Seat: 0, TicketID: "t0", TicketExpiresMs: time.Now().Add(time.Hour).UnixMilli(),
		SessionAddr: seat.Address, SessionID: seat.Id}
	lateAttach := ask(attach, time.Now().Add(-time.Minute))
	intent := ask(&SubmitIntent{Seat: 0, SessionID: seat.Id, Intent: &protocol.ClientIntent{IntentID: "i1", Intent: protocol.EndTurn{}}}, time.Time{})
	if r := answered(intent); r.Code != ReplyNotAttached {
		t.Fatalf("an intent after a late attach: %+v, want NotAttached (the attach must have changed nothing)", r)
	}
	unanswered(lateAttach, "an attach past its deadline")
	if r := answered(ask(attach, time.Time{})); r.Code != ReplyOK {
		t.Fatalf("an attach without a deadline: %+v", r)
	}
	if got := testutil.ToFloat64(metrics.RequestsExpired); got != 2 {
		t.Fatalf("matchgrain_grain_requests_expired_total = %v, want 2", got)
	}
	if c := store.claims.Load(); c != 1 {
		t.Fatalf("%d claims, want still 1", c)
	}
}
