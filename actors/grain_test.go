package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	mgcluster "github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/persistence/storetest"
	"github.com/matchgrain/matchgrain/protocol"
)

// testNode is one real cluster member in this process (a single member is
// race-clean; several are not, see docs/cluster.md §6) with the match kind, a
// real embedded store; tests drive its grains through driver_test.go.
type testNode struct {
	node    *mgcluster.Node
	timing  Timing
	metrics *Metrics
	// registry is what metrics are registered with, as an edge serves it.
	registry *prometheus.Registry
	store    *persistence.FaultyStore
	rules    Rules
	// notOwner makes this member not own any match in its view
	// (GrainDeps.Owns), as when its view moved the matches elsewhere.
	notOwner atomic.Bool
}

func fastTiming() Timing {
	t := DefaultTiming()
	t.SeatKeepAlive = 100 * time.Millisecond
	t.ClockInterval = time.Second
	t.SnapshotEvery = 4
	return t
}

// storeKinds are the stores the grain tests run against: the embedded one
// and a real PostgreSQL (pgtest starts a throwaway server if needed).
var storeKinds = []struct {
	name string
	open func(t *testing.T) persistence.Store
}{
	{"embedded", func(t *testing.T) persistence.Store { return storetest.Embedded(t) }},
	{"postgres", func(t *testing.T) persistence.Store { return pgtest.NewStore(t) }},
}

func TestMain(m *testing.M) { pgtest.Main(m) }

func startTestNode(t *testing.T, timing Timing) *testNode {
	t.Helper()
	return startTestNodeOn(t, timing, storeKinds[0].open(t))
}

func startTestNodeOn(t *testing.T, timing Timing, inner persistence.Store) *testNode {
	t.Helper()
	return startTestNodeRules(t, timing, inner, ToyRules{})
}

// startTestNodeRules starts a node with rules; tune, if given, adjusts the
// grains' dependencies before the kind is made.
func startTestNodeRules(t *testing.T, timing Timing, inner persistence.Store, rules Rules, tune ...func(*GrainDeps)) *testNode {
	t.Helper()
	var err error
	store := persistence.NewFaultyStore(inner)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.Default()
	}
	registry := prometheus.NewRegistry()
	metrics, err := NewMetrics(registry)
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{store: store, rules: rules, timing: timing, metrics: metrics, registry: registry}
	deps := GrainDeps{
		Store: store, Rules: tn.rules, Timing: timing, Logger: log, Metrics: tn.metrics,
		Owner: func() string { return tn.node.ID() },
		Owns:  func(string) bool { return !tn.notOwner.Load() },
	}
	for _, f := range tune {
		f(&deps)
	}
	kind, err := NewMatchKind(deps)
	if err != nil {
		t.Fatalf("match kind: %v", err)
	}
	tn.node, err = mgcluster.Start(mgcluster.Config{
		NodeName: "t", ClusterName: "actors-test-" + t.Name(),
		GossipAddr: "127.0.0.1:0", RemoteAddr: "127.0.0.1:0",
		Kinds: []*pcluster.Kind{kind}, Logger: log,
	})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(tn.node.Kill)
	return tn
}

// frameSink collects one seat's frames, decoded. Like the edge's sink it
// never blocks (Sink's contract: a grain pushes to a local seat in its own
// goroutine): Deliver queues without bound and a pump feeds frames, so a
// test that leaves a seat's frames unread for a while holds up nothing.
type frameSink struct {
	frames   chan protocol.ServerFrame
	detached chan DetachReason
	bad      chan error

	mu     sync.Mutex
	queue  []protocol.ServerFrame
	queued chan struct{} // a token when queue became non-empty
}

func newFrameSink() *frameSink {
	s := &frameSink{frames: make(chan protocol.ServerFrame), detached: make(chan DetachReason, 16), bad: make(chan error, 16),
		queued: make(chan struct{}, 1)}
	go s.pump()
	return s
}

// pump moves queued frames to s.frames, in order; it parks on an empty
// queue (a test's sinks live as long as its process).
func (s *frameSink) pump() {
	for range s.queued {
		for {
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.mu.Unlock()
				break
			}
			f := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			s.frames <- f
		}
	}
}

func (s *frameSink) Deliver(frames [][]byte) {
	for _, b := range frames {
		f, err := protocol.DecodeServerFrame(b)
		if err != nil {
			select {
			case s.bad <- err:
			default:
			}
			continue
		}
		s.mu.Lock()
		s.queue = append(s.queue, f)
		s.mu.Unlock()
		select {
		case s.queued <- struct{}{}:
		default:
		}
	}
}

func (s *frameSink) Detach(r DetachReason) {
	select {
	case s.detached <- r:
	default:
	}
}

// next waits for the next frame that is not a ServerClock.
func (s *frameSink) next(t *testing.T) protocol.ServerFrame {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-s.frames:
			if _, ok := f.(*protocol.ServerClock); ok {
				continue
			}
			return f
		case err := <-s.bad:
			t.Fatalf("undecodable frame: %v", err)
		case <-deadline:
			t.Fatalf("no frame within 10 s")
		}
	}
}

func expectFrame[T protocol.ServerFrame](t *testing.T, s *frameSink) T {
	t.Helper()
	f := s.next(t)
	v, ok := f.(T)
	if !ok {
		var zero T
		t.Fatalf("got %T %+v, want %T", f, f, zero)
	}
	return v
}

var ticketN int

func (tn *testNode) open(t *testing.T, matchID string, seat int, resume int64) (*testSeat, *frameSink) {
	t.Helper()
	ticketN++
	sink := newFrameSink()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tn.openSeat(ctx, seatRequest{MatchID: matchID, Seat: seat, TicketID: fmt.Sprintf("%s-%d", t.Name(), ticketN),
		TicketExpires: time.Now().Add(time.Minute), ResumeFromSeq: resume}, sink)
	if err != nil {
		t.Fatalf("open seat %d: %v", seat, err)
	}
	t.Cleanup(func() { s.Close(false) })
	return s, sink
}

func (tn *testNode) create(t *testing.T, seed uint64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := tn.createMatch(ctx, &seed)
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	return id
}

func sendIntent(t *testing.T, s *testSeat, id string, based int64, in protocol.Intent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Intent(ctx, id, based, in); err != nil {
		t.Fatalf("intent %s: %v", id, err)
	}
}

func TestGrainHandshakeIntentsAndDuplicates(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0) // seat 0 decides first
	s0, k0 := tn.open(t, id, 0, 0)
	hello := expectFrame[*protocol.ServerHello](t, k0)
	if hello.MatchID != id || hello.PlayerIndex != 0 || hello.Resumed || hello.EventSeq != 1 {
		t.Fatalf("hello = %+v", hello)
	}
	snap := expectFrame[*protocol.ServerSnapshot](t, k0)
	if snap.View.MatchID != id || snap.View.EventSeq != 1 || snap.View.Players[1].Name != "Bob" {
		t.Fatalf("snapshot view = %+v", snap.View)
	}
	if n := len(snap.View.LegalIntents); n != 2 || snap.View.LegalIntents[1].IntentKind() != protocol.IntentConcede {
		t.Fatalf("legal intents = %v, want EndTurn and Concede", snap.View.LegalIntents)
	}
	_, k1 := tn.open(t, id, 1, 0)
	expectFrame[*protocol.ServerHello](t, k1)
	expectFrame[*protocol.ServerSnapshot](t, k1)

	sendIntent(t, s0, "a-1", 1, protocol.EndTurn{})
	res := expectFrame[*protocol.ServerIntentResult](t, k0)
	if !res.Accepted || res.Duplicate || res.EventSeq != 4 {
		t.Fatalf("result = %+v, want accepted at seq 4", res)
	}
	evs := expectFrame[*protocol.ServerEvents](t, k0)
	if evs.FromSeq != 2 || evs.ToSeq != 4 || len(evs.Events) != 2 {
		t.Fatalf("seat 0 events = %+v, want 2..4 with the owner-only event hidden", evs)
	}
	if d := evs.Events[1].Event.(*protocol.CardsDrawnEvent); len(d.Cards) != 0 {
		t.Fatalf("seat 0 saw seat 1's drawn card: %+v", d)
	}
	evs1 := expectFrame[*protocol.ServerEvents](t, k1)
	if evs1.FromSeq != 2 || evs1.ToSeq != 4 || len(evs1.Events) != 3 {
		t.Fatalf("seat 1 events = %+v, want all 3", evs1)
	}

	// The same intent id again: stored result, duplicate, no events.
	sendIntent(t, s0, "a-1", 1, protocol.EndTurn{})
	dup := expectFrame[*protocol.ServerIntentResult](t, k0)
	if !dup.Accepted || !dup.Duplicate || dup.EventSeq != 4 {
		t.Fatalf("duplicate result = %+v", dup)
	}
	if v := testutil.ToFloat64(tn.metrics.ActiveGrains); v != 1 {
		t.Errorf("matchgrain_grains_active = %v, want 1", v)
	}
	if v := testutil.ToFloat64(tn.metrics.IntentsAccepted); v != 1 {
		t.Errorf("matchgrain_grain_intents_accepted_total = %v, want 1", v)
	}
	// Not seat 0's decision any more.
	sendIntent(t, s0, "a-2", 4, protocol.EndTurn{})
	rej := expectFrame[*protocol.ServerIntentResult](t, k0)
	if rej.Accepted || rej.Code != protocol.RejectNotYourTurn || rej.EventSeq != 4 {
		t.Fatalf("rejection = %+v", rej)
	}
	// A rejection changes nothing and broadcasts nothing: the next frame
	// other than a periodic ServerClock is the answer to a later marker
	// intent (frames of one seat arrive in order), not some event.
	sendIntent(t, s0, "a-3", 4, protocol.EndTurn{})
	for {
		f := k0.next(t)
		if _, ok := f.(*protocol.ServerClock); ok {
			continue
		}
		r, ok := f.(*protocol.ServerIntentResult)
		if !ok || r.IntentID != "a-3" || r.Accepted || r.EventSeq != 4 {
			t.Fatalf("after the rejection got %T %+v, want only the marker's rejection at seq 4", f, f)
		}
		break
	}
}

func TestGrainTicketIsSingleUse(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	req := seatRequest{MatchID: id, Seat: 0, TicketID: "once", TicketExpires: time.Now().Add(time.Minute)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tn.openSeat(ctx, req, newFrameSink())
	if err != nil {
		t.Fatalf("first open: %v", err)
	}
	defer s.Close(false)
	if _, err := tn.openSeat(ctx, req, newFrameSink()); !errors.Is(err, errTicketUsed) {
		t.Fatalf("second open with the same ticket: %v, want errTicketUsed", err)
	}
	if _, err := tn.openSeat(ctx, seatRequest{MatchID: "nope", Seat: 0, TicketID: "x"}, newFrameSink()); !errors.Is(err, errMatchNotFound) {
		t.Fatalf("unknown match: %v, want errMatchNotFound", err)
	}
}

// An attach whose answer is lost after its ticket was recorded (here the
// store's reply; in a cluster, the grain moving between the two) is retried
// by the cluster request for the same connection: the retry must open the seat,
// while another connection presenting the same ticket stays refused.
func TestGrainRetriedAttachKeepsItsTicket(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			tn := startTestNodeOn(t, fastTiming(), sk.open(t))
			id := tn.create(t, 0)
			tn.store.LoseReplyNext(persistence.MethodConsumeTicket, 1, nil)
			req := seatRequest{MatchID: id, Seat: 0, TicketID: "retried-" + sk.name, TicketExpires: time.Now().Add(time.Minute)}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			k := newFrameSink()
			s, err := tn.openSeat(ctx, req, k)
			if err != nil {
				t.Fatalf("open whose first ticket record lost its answer: %v, want the retry to succeed", err)
			}
			defer s.Close(false)
			if n := tn.store.Calls(persistence.MethodConsumeTicket); n < 2 {
				t.Fatalf("ticket consumed %d times, want the lost answer retried", n)
			}
			expectFrame[*protocol.ServerHello](t, k)
			if _, err := tn.openSeat(ctx, req, newFrameSink()); !errors.Is(err, errTicketUsed) {
				t.Fatalf("another connection with the same ticket: %v, want errTicketUsed", err)
			}
		})
	}
}

func TestGrainTakeoverDetachesOldSeat(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	old, k0 := tn.open(t, id, 0, 0)
	expectFrame[*protocol.ServerHello](t, k0)
	s2, k2 := tn.open(t, id, 0, 1)
	h := expectFrame[*protocol.ServerHello](t, k2)
	if !h.Resumed {
		t.Fatalf("resume from the current seq should be served by the journal: %+v", h)
	}
	up := expectFrame[*protocol.ServerEvents](t, k2)
	if up.FromSeq != 2 || up.ToSeq != 1 || len(up.Events) != 0 {
		t.Fatalf("up-to-date resume = %+v, want empty 2..1", up)
	}
	select {
	case r := <-k0.detached:
		if r != DetachReplaced {
			t.Fatalf("detach reason %d, want replaced", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("old seat was not detached")
	}
	// The replaced attachment can no longer act; the new one can.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := old.Intent(ctx, "old-1", 1, protocol.EndTurn{}); !errors.Is(err, errDetached) {
		t.Fatalf("replaced seat's intent: %v, want errDetached", err)
	}
	sendIntent(t, s2, "new-1", 1, protocol.EndTurn{})
	res := expectFrame[*protocol.ServerIntentResult](t, k2)
	if !res.Accepted || res.EventSeq != 4 {
		t.Fatalf("new seat's intent: %+v", res)
	}
}

// TestGrainStaleAttachDoesNotReplaceNewer: a connection the client gave up
// on (its attach was held up by a partition, and the client reconnected
// elsewhere with a fresh ticket) may have its attach land after the newer
// connection's. It must not take the seat over: the newer connection stays
// attached and the stale attach is refused. Its ticket was issued first, so
// it expires first. Found by the nemesis harness (docs/operations.md §9):
// the stale attach replaced the live one, whose client then stopped on
// 4409, and the match waited for the absence timeout.
func TestGrainStaleAttachDoesNotReplaceNewer(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	issued := time.Now()
	newer := seatRequest{MatchID: id, Seat: 0, TicketID: "newer", TicketExpires: issued.Add(2 * time.Minute)}
	kNew := newFrameSink()
	sNew, err := tn.openSeat(ctx, newer, kNew)
	if err != nil {
		t.Fatalf("open the newer connection: %v", err)
	}
	defer sNew.Close(false)
	expectFrame[*protocol.ServerHello](t, kNew)

	stale := seatRequest{MatchID: id, Seat: 0, TicketID: "stale", TicketExpires: issued.Add(time.Minute)}
	if s, err := tn.openSeat(ctx, stale, newFrameSink()); !errors.Is(err, errDetached) {
		if s != nil {
			s.Close(false)
		}
		t.Fatalf("stale attach after a newer one: %v, want errDetached", err)
	}
	select {
	case r := <-kNew.detached:
		t.Fatalf("the newer connection was detached (reason %d) by a stale attach", r)
	default:
	}
	// The newer connection still acts: its intent is answered.
	sendIntent(t, sNew, "after-stale", 1, protocol.EndTurn{})
	for {
		if res, ok := kNew.next(t).(*protocol.ServerIntentResult); ok {
			if res.IntentID != "after-stale" {
				t.Fatalf("the newer connection's intent: %+v", res)
			}
			break
		}
	}
	// A later ticket still takes the seat over.
	later := seatRequest{MatchID: id, Seat: 0, TicketID: "later", TicketExpires: issued.Add(3 * time.Minute)}
	sLater, err := tn.openSeat(ctx, later, newFrameSink())
	if err != nil {
		t.Fatalf("takeover with a later ticket: %v", err)
	}
	defer sLater.Close(false)
	select {
	case r := <-kNew.detached:
		if r != DetachReplaced {
			t.Fatalf("detach reason %d, want replaced", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a later ticket did not take the seat over")
	}
}

// TestGrainNewerSeatReattachesOverStaleAttach: the stale attach of
// TestGrainStaleAttachDoesNotReplaceNewer may also reach a new activation
// of the match before the live connection's seat re-attaches there (its
// seats start empty). The live seat's re-attach, whose ticket is newer,
// must then take the seat back instead of being refused as replaced. Found
// by the nemesis soak after the first fix (11 matches of 5,079 still
// stopped on 4409).
func TestGrainNewerSeatReattachesOverStaleAttach(t *testing.T) {
	tn := startTestNode(t, fastTiming())
	id := tn.create(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	issued := time.Now()
	kNew := newFrameSink()
	sNew, err := tn.openSeat(ctx, seatRequest{MatchID: id, Seat: 0, TicketID: "newer", TicketExpires: issued.Add(2 * time.Minute)}, kNew)
	if err != nil {
		t.Fatalf("open the newer connection: %v", err)
	}
	defer sNew.Close(false)
	expectFrame[*protocol.ServerHello](t, kNew)

	// The match moves (another member claims it), and the stale attach,
	// which has seen the new epoch, stops the old activation and lands on
	// a new one before the live seat re-attaches.
	rec, err := tn.store.Inner().Claim(ctx, id, "elsewhere")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	kStale := newFrameSink()
	stale, err := tn.newSeat(id, 0, kStale, issued.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close(false)
	if _, err := tn.call(ctx, id, &AttachSeat{Seat: 0, TicketID: "stale", TicketExpiresMs: issued.Add(time.Minute).UnixMilli(),
		SessionAddr: stale.pid.Address, SessionID: stale.pid.Id, SeenEpoch: rec.Epoch}); err != nil {
		t.Fatalf("stale attach on the new activation: %v", err)
	}
	if err := sNew.reattach(ctx); err != nil {
		t.Fatalf("the newer connection's re-attach after a stale attach: %v, want it to take the seat back", err)
	}
	select {
	case r := <-kStale.detached:
		if r != DetachReplaced {
			t.Fatalf("stale seat detach reason %d, want replaced", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stale attachment was not replaced")
	}
}

// TestGrainResultsDoNotWaitForCheckpoints: the snapshot that falls due on an
// intent and the finished mark of a match's last one are written after the
// result is sent, not before. Both are held in the store (with a store
// timeout far longer than the test waits for any frame), and every result
// still arrives; the held writes land once released.
func TestGrainResultsDoNotWaitForCheckpoints(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			timing := fastTiming()
			tn := startTestNodeRules(t, timing, sk.open(t), ToyRules{}, func(d *GrainDeps) {
				d.StoreTimeout = 5 * time.Minute
			})
			id := tn.create(t, 0)
			seats, sinks := tn.openBoth(t, id)
			for _, k := range sinks {
				expectFrame[*protocol.ServerSnapshot](t, k)
			}
			play := func(p int, n string, seq int64, in protocol.Intent) int64 {
				t.Helper()
				sendIntent(t, seats[p], n, seq, in)
				res := expectFrame[*protocol.ServerIntentResult](t, sinks[p])
				if !res.Accepted {
					t.Fatalf("%s: result %+v, want accepted", n, res)
				}
				for _, k := range sinks {
					expectFrame[*protocol.ServerEvents](t, k)
				}
				return res.EventSeq
			}

			// The activation's snapshot falls due on its SnapshotEvery-th
			// append; the seats' arrivals may have made some already.
			before := tn.store.Calls(persistence.MethodAppend)
			if got := tn.store.Calls(persistence.MethodSaveSnapshot); got != 0 || before >= timing.SnapshotEvery {
				t.Fatalf("%d snapshots and %d appends before any intent, want none and fewer than %d",
					got, before, timing.SnapshotEvery)
			}
			releaseSnapshot := tn.store.Hold(persistence.MethodSaveSnapshot)
			defer releaseSnapshot()
			seq, intents := int64(1), timing.SnapshotEvery-before
			for i := range intents {
				if got := tn.store.Calls(persistence.MethodSaveSnapshot); got != 0 {
					t.Fatalf("snapshot written after %d intents, want after %d", i, intents)
				}
				seq = play(i%2, fmt.Sprintf("e-%d", i), seq, protocol.EndTurn{})
			}
			waitFor(t, "the held snapshot to be started", func() bool {
				return tn.store.Calls(persistence.MethodSaveSnapshot) == 1
			})
			releaseSnapshot()

			releaseFinished := tn.store.Hold(persistence.MethodMarkFinished)
			defer releaseFinished()
			p := intents % 2
			sendIntent(t, seats[p], "concede", seq, protocol.Concede{})
			if res := expectFrame[*protocol.ServerIntentResult](t, sinks[p]); !res.Accepted {
				t.Fatalf("concede: result %+v, want accepted", res)
			}
			waitFor(t, "the held finished mark to be started", func() bool {
				return tn.store.Calls(persistence.MethodMarkFinished) == 1
			})
			if !unfinished(t, tn.store.Inner(), id) {
				t.Fatal("match marked finished while its mark is held")
			}
			releaseFinished()
			waitFor(t, "the match to be marked finished", func() bool { return !unfinished(t, tn.store.Inner(), id) })
		})
	}
}

// unfinished reports whether the store lists match id as unfinished.
func unfinished(t *testing.T, s persistence.Store, id string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := s.ListUnfinished(ctx, "", 1000)
	if err != nil {
		t.Fatalf("list unfinished: %v", err)
	}
	for _, in := range infos {
		if in.MatchID == id {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
