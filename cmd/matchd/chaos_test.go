package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/protocol"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// seatTimeout bounds each wait of a seat: the nodes are separate processes
// on a loaded machine, and a failover sits inside some waits.
const seatTimeout = 30 * time.Second

// dialSeat connects a raw seat to the WebSocket of the edge at edgeHTTP.
func dialSeat(t *testing.T, admin *client.Admin, edgeHTTP, matchID string, seat int, resume int64) (*clienttest.Seat, *protocol.ServerHello) {
	t.Helper()
	return clienttest.Dial(t, admin, "ws://"+edgeHTTP+"/game", matchID, seat, clienttest.Options{Resume: resume, Build: "chaos-test", Timeout: seatTimeout})
}

// chaosCluster is two match members and one edge-only member sharing a
// throwaway PostgreSQL schema.
type chaosCluster struct {
	schema string
	url    string // the database; empty: the tests' shared server (pgtest.URL)
	common []string
	race   bool // every node is the -race build of matchd
	a, b   *proc
	edge   *proc
	admin  *client.Admin
}

// startChaosCluster starts a chaosCluster of plain matchd builds with extra
// flags for every node.
func startChaosCluster(t *testing.T, extra ...string) *chaosCluster {
	t.Helper()
	return startChaosClusterBuild(t, false, extra...)
}

// relaxedDetection are node flags for chaos tests whose subject is not
// failover time: probing every second instead of every 400 ms, a node
// declared dead needs about 3-9 s of silence instead of 1.2-3.6 s, so a
// member stalled by a loaded machine is not falsely evicted mid-test, and a
// killed or frozen one is still detected well inside the tests' waits.
var relaxedDetection = []string{"--probe-interval", "1s"}

// startChaosClusterBuild starts a chaosCluster, with the -race build of
// matchd for every node if race and extra flags for every node.
func startChaosClusterBuild(t *testing.T, race bool, extra ...string) *chaosCluster {
	t.Helper()
	return startChaosClusterWith(t, race, nil, extra...)
}

// startChaosClusterWith is startChaosClusterBuild with bFlags for member b
// alone (after the shared ones).
func startChaosClusterWith(t *testing.T, race bool, bFlags []string, extra ...string) *chaosCluster {
	t.Helper()
	cc := &chaosCluster{schema: pgtest.NewSchema(t), race: race}
	cc.common = []string{
		"--database-url", pgtest.URL(t), "--database-schema", cc.schema,
		"--cluster-name", "chaos-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--seat-keepalive", "200ms", "--reclaim-interval", "2s",
	}
	// Extra node flags for experiments, e.g. failure-detection tuning.
	cc.common = append(cc.common, strings.Fields(os.Getenv("MATCHGRAIN_CHAOS_FLAGS"))...)
	cc.common = append(cc.common, extra...)
	cc.a = startProcBuild(t, "a", race, cc.common...)
	cc.b = startProcBuild(t, "b", race, append(append(slices.Clip(cc.common), "--join", cc.a.gossip), bFlags...)...)
	cc.edge = startProcBuild(t, "e", race, append(cc.common, "--join", cc.a.gossip, "--edge-only")...)
	cc.admin = client.NewAdmin("http://"+cc.edge.http, testAdminToken, nil)
	return cc
}

func (cc *chaosCluster) createMatch(t *testing.T, seed uint64) string {
	t.Helper()
	var id string
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		id, err = cc.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1"}, {Name: "B", Deck: "S2"}}, &seed)
		return err
	})
	return id
}

// owner reads which member holds the match's current epoch.
func (cc *chaosCluster) owner(t *testing.T, matchID string) (string, int64) {
	t.Helper()
	var owner string
	var epoch int64
	q := fmt.Sprintf("SELECT owner, epoch FROM %s.matches WHERE match_id = $1", pgx.Identifier{cc.schema}.Sanitize())
	queryRow(t, q, []any{matchID}, &owner, &epoch)
	return owner, epoch
}

// logEpochs returns the epoch of every log entry of the match, in seq order.
func (cc *chaosCluster) logEpochs(t *testing.T, matchID string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dbURL := cc.url
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	q := fmt.Sprintf("SELECT seq, epoch FROM %s.match_log WHERE match_id = $1 ORDER BY seq", pgx.Identifier{cc.schema}.Sanitize())
	rows, err := conn.Query(ctx, q, matchID)
	if err != nil {
		t.Fatalf("log of %s: %v", matchID, err)
	}
	var epochs []int64
	var want int64 = 1
	for rows.Next() {
		var seq, epoch int64
		if err := rows.Scan(&seq, &epoch); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if seq != want {
			t.Fatalf("log of %s has seq %d where %d belongs", matchID, seq, want)
		}
		want++
		epochs = append(epochs, epoch)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	return epochs
}

func (cc *chaosCluster) procByMember(id string) *proc {
	for _, p := range []*proc{cc.a, cc.b} {
		if p.member == id {
			return p
		}
	}
	return nil
}

// play makes n accepted moves and returns the id, eventSeq and seat of the
// last acknowledged intent.
func play(t *testing.T, seats [2]*clienttest.Seat, prefix string, n int) (string, int64, *clienttest.Seat) {
	t.Helper()
	moves := clienttest.Play(t, seats, prefix, n)
	last := moves[len(moves)-1]
	return last.ID, last.Seq, seats[last.Seat]
}

// TestChaosKillOwnerMatchContinues kills -9 the member that owns a match
// while two players are connected through an edge-only member, and checks
// that (a) the match answers again from the other member, (b) every
// acknowledged intent is still there, (c) a re-sent intent id is a
// duplicate, and that the log was written by epochs in order only. Every
// node is the -race build of matchd: a data race any of them reports fails
// the test (see startProcBuild). A -race node runs several times slower and
// stalls on a loaded machine long enough to be falsely declared dead with
// the LAN defaults, so this cluster probes every 2 s (a crash is then
// declared after about 6-22 s instead of 1.2-4.4 s); failover timing is
// TestChaosFailoverTimes' subject, not this test's. The edge's patience
// follows the slower detection (--request-timeout derived: 27 s), so the
// player's calls wait through the failover instead of ending in 4500.
func TestChaosKillOwnerMatchContinues(t *testing.T) {
	cc := startChaosClusterBuild(t, true, "--probe-interval", "2s")
	id := cc.createMatch(t, 7)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		seats[s], _ = dialSeat(t, cc.admin, cc.edge.http, id, s, 0)
		clienttest.Await(seats[s], 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	lastID, lastSeq, lastSeat := play(t, seats, "before", 8)

	ownerID, epoch := cc.owner(t, id)
	victim := cc.procByMember(ownerID)
	if victim == nil {
		t.Fatalf("owner %s is not a match member", ownerID)
	}
	killed := time.Now()
	victim.kill()

	// The next move goes through as soon as the other member took over.
	s, v, in := clienttest.NextMove(t, seats)
	res := s.IntentWithin("after-kill", v.EventSeq, in, 60*time.Second)
	failover := time.Since(killed)
	if !res.Accepted {
		t.Fatalf("first intent after the kill rejected: %+v", res)
	}
	t.Logf("kill -9 of the owner → match answered again after %v", failover)
	if v.EventSeq < lastSeq {
		t.Fatalf("acknowledged events lost: view at seq %d, last acknowledged %d", v.EventSeq, lastSeq)
	}
	newOwner, newEpoch := cc.owner(t, id)
	if newOwner == ownerID || newEpoch <= epoch {
		t.Fatalf("owner %s epoch %d after the kill (was %s, %d)", newOwner, newEpoch, ownerID, epoch)
	}
	// The last intent acknowledged before the kill, re-sent: a duplicate.
	dup := lastSeat.IntentWithin(lastID, lastSeq, protocol.EndTurn{}, 30*time.Second)
	if !dup.Duplicate || !dup.Accepted || dup.EventSeq != lastSeq {
		t.Fatalf("re-sent %s: %+v, want duplicate at seq %d", lastID, dup, lastSeq)
	}
	play(t, seats, "after", 4)
	epochs := cc.logEpochs(t, id)
	if !slices.IsSorted(epochs) {
		t.Fatalf("log epochs out of order (two writers?): %v", epochs)
	}
	// The new owner's appends went through its group-commit writer, and its
	// counters say so on /metrics.
	fams := scrapeFamilies(t, cc.procByMember(newOwner).http)
	counter := func(name string) float64 {
		if f := fams[name]; f != nil && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
		t.Fatalf("%s missing on the new owner's /metrics", name)
		return 0
	}
	batches, batched := counter("matchgrain_store_append_batches_total"), counter("matchgrain_store_batched_appends_total")
	if batches < 1 || batched < batches {
		t.Fatalf("new owner: %v appends in %v group-commit batches after 4+ intents", batched, batches)
	}
	// The same statements timed (one may still be in flight at the scrape).
	if f := fams["matchgrain_store_statement_duration_seconds"]; f == nil || len(f.GetMetric()) != 1 ||
		f.GetMetric()[0].GetHistogram().GetSampleCount() < 1 ||
		float64(f.GetMetric()[0].GetHistogram().GetSampleCount()) > batches {
		t.Fatalf("new owner's statement times %v, want between 1 and its %v batches", f, batches)
	}
}

// TestChaosFrozenOwnerIsFenced freezes the owner (SIGSTOP) instead of
// killing it. The match moves on to the other member under a newer epoch.
// Before the freeze a connection through the owner's own edge takes over
// the seat that decides next, and right after SIGSTOP it sends an intent:
// the frame waits in the frozen process's socket, so when the old owner
// wakes its edge hands it to the still-running stale activation (a local
// call, before any peer can tell the member it was evicted), which applies
// it and tries to append it under its old epoch. The test checks that the
// store's fence refused that write (the node's counted
// matchgrain_store_fenced_writes_total, which it logs as fenced_writes once
// its grains have stopped), that the intent was never acknowledged by the
// stale activation, that the woken member exited through eviction and not
// a crash, and that the live activation kept every acknowledged intent.
func TestChaosFrozenOwnerIsFenced(t *testing.T) {
	// Info logs for the "matchd grains stopped fenced_writes=N" line. A
	// store call outlasts the freeze (4-6 s): an append the stale
	// activation had in flight when it was frozen (a seat's presence, say)
	// is answered on wake instead of timing out, which would stop the
	// activation for its unknown outcome before the stale intent reaches it
	// (seen once in a flake hunt: fenced_writes=0).
	cc := startChaosClusterBuild(t, false, append([]string{"--log-level", "info", "--store-timeout", "20s"}, relaxedDetection...)...)
	id := cc.createMatch(t, 11)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		seats[s], _ = dialSeat(t, cc.admin, cc.edge.http, id, s, 0)
		clienttest.Await(seats[s], 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	acked := clienttest.Play(t, seats, "before", 4)
	ownerID, epoch := cc.owner(t, id)
	victim := cc.procByMember(ownerID)
	if victim == nil {
		t.Fatalf("owner %s is not a match member", ownerID)
	}
	// The deciding seat moves to a connection through the owner's own edge
	// (a takeover: the edge-only member's connection gets 4409).
	decider, _, _ := clienttest.NextMove(t, seats)
	stale, _ := dialSeat(t, cc.admin, victim.http, id, decider.Index, 0)
	sv := clienttest.Await(stale, 20*time.Second, clienttest.Any[*protocol.ServerSnapshot]).View
	staleIntent := clienttest.FirstPlay(sv)
	if staleIntent == nil {
		t.Fatalf("seat %d has no move at seq %d through the owner's edge", decider.Index, sv.EventSeq)
	}
	if code, _ := decider.CloseCode(seatTimeout); code != protocol.CloseReplaced {
		t.Fatalf("the replaced connection closed with %d, want %d", code, protocol.CloseReplaced)
	}
	if err := victim.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	frozen := time.Now()
	// Sent after SIGSTOP, so not yet read: it waits in the frozen edge's
	// socket for the wake-up.
	const staleID = "stale-0"
	stale.Send(&protocol.ClientIntent{IntentID: staleID, BasedOnSeq: sv.EventSeq, Intent: staleIntent})
	// The seat comes back through the edge-only member (a fresh ticket
	// taking over again): its open waits for the failover.
	seats[decider.Index], _ = dialSeat(t, cc.admin, cc.edge.http, id, decider.Index, 0)
	clienttest.Await(seats[decider.Index], seatTimeout, clienttest.Any[*protocol.ServerSnapshot])
	acked = append(acked, clienttest.Play(t, seats, "frozen", 4)...)
	newOwner, newEpoch := cc.owner(t, id)
	if newOwner == ownerID || newEpoch <= epoch {
		t.Fatalf("owner %s epoch %d while the old owner is frozen (was %s, %d)", newOwner, newEpoch, ownerID, epoch)
	}
	// The newer claim fenced the old epoch: from here on its entries in the
	// log can only stay as many as they are now.
	staleEntries := countUpTo(cc.logEpochs(t, id), epoch)
	// A freeze longer than the cluster's stall threshold (3 s with these 1 s
	// probes, cluster/stall.go) keeps the woken member from activating the match
	// anew (which would claim a newer epoch and fence the live owner), so
	// the only writer it has is the stale activation.
	if d := time.Since(frozen); d < 4*time.Second {
		time.Sleep(4*time.Second - d)
	}
	// Read the stale connection from the wake-up on: its frames must be
	// kept before the process exits and the socket goes.
	staleFrames := make(chan []protocol.ServerFrame, 1)
	go func() {
		var fs []protocol.ServerFrame
		for {
			f, err := stale.Next(60 * time.Second)
			if err != nil {
				staleFrames <- fs
				return
			}
			fs = append(fs, f)
		}
	}()
	if err := victim.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
	// Peers repeat the eviction notice every topology republish (1 s); the
	// 60 s bound covers a loaded machine and the node's graceful stop.
	code := victim.exitCode(t, 60*time.Second)
	tail := victim.logTail()
	if code != 1 || !strings.Contains(tail, "evicted from the cluster") {
		t.Fatalf("the woken stale member exited with status %d, want 1 after eviction:\n%s", code, tail)
	}
	for _, crash := range []string{"panic:", "fatal error:", "DATA RACE"} {
		if strings.Contains(tail, crash) {
			t.Fatalf("the woken stale member crashed (%q):\n%s", crash, tail)
		}
	}
	if n := victim.stoppedFencedWrites(); n < 1 {
		t.Fatalf("the woken stale member stopped with fenced_writes=%d, want at least 1 refused write:\n%s", n, tail)
	} else {
		t.Logf("the stale member woke, had %d write(s) refused by the fence and exited through eviction", n)
	}
	var staleRes *protocol.ServerIntentResult
	var got []string
	for _, f := range <-staleFrames {
		r, ok := f.(*protocol.ServerIntentResult)
		if !ok {
			got = append(got, fmt.Sprintf("%T", f))
			continue
		}
		got = append(got, fmt.Sprintf("%+v", *r))
		if r.IntentID == staleID && r.Accepted {
			staleRes = r
		}
	}
	t.Logf("the stale connection got %v after the wake-up", got)
	// The live activation kept every acknowledged intent: each re-sent id
	// is a duplicate with its original eventSeq, and the match goes on.
	acked = append(acked, clienttest.Play(t, seats, "after", 2)...)
	for _, m := range acked {
		res := seats[m.Seat].Intent(m.ID, 0, m.Intent)
		if !res.Accepted || !res.Duplicate || res.EventSeq != m.Seq {
			t.Fatalf("re-sent %s: %+v, want an accepted duplicate at seq %d", m.ID, res, m.Seq)
		}
	}
	if staleRes != nil {
		// Only the live activation may have acknowledged it (the stale
		// one cannot write): then it knows the id at the same seq.
		res := seats[decider.Index].Intent(staleID, 0, staleIntent)
		if !res.Duplicate || res.EventSeq != staleRes.EventSeq {
			t.Fatalf("the frozen edge acknowledged %s at seq %d, but the live activation answers %+v", staleID, staleRes.EventSeq, res)
		}
	}
	epochs := cc.logEpochs(t, id)
	if !slices.IsSorted(epochs) {
		t.Fatalf("log epochs out of order after the stale member woke: %v", epochs)
	}
	if n := countUpTo(epochs, epoch); n != staleEntries {
		t.Fatalf("the log holds %d entries of the frozen owner's epoch %d or older, %d when it was fenced: a stale write landed (%v)", n, epoch, staleEntries, epochs)
	}
}

// countUpTo counts the log entries written by epoch e or older.
func countUpTo(epochs []int64, e int64) int {
	n := 0
	for _, x := range epochs {
		if x <= e {
			n++
		}
	}
	return n
}

// TestClusterTakeoverAcrossEdges: a seat connected through member a's edge
// is taken over by a connection through member b's edge (4409 for the old one).
func TestClusterTakeoverAcrossEdges(t *testing.T) {
	cc := startChaosClusterBuild(t, false, relaxedDetection...)
	id := cc.createMatch(t, 3)
	aAdmin := client.NewAdmin("http://"+cc.a.http, testAdminToken, nil)
	old, _ := dialSeat(t, aAdmin, cc.a.http, id, 0, 0)
	clienttest.Await(old, 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	bAdmin := client.NewAdmin("http://"+cc.b.http, testAdminToken, nil)
	fresh, _ := dialSeat(t, bAdmin, cc.b.http, id, 0, 0)
	clienttest.Await(fresh, 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	if err := old.Conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := old.Conn.Recv()
		if err == nil {
			continue
		}
		var ce *client.CloseError
		if !errors.As(err, &ce) || ce.Code != protocol.CloseReplaced {
			t.Fatalf("old connection ended with %v, want close 4409", err)
		}
		break
	}
	v := fresh.View()
	if v.You != 0 || v.MatchID != id {
		t.Fatalf("new connection's view: you=%d match=%s", v.You, v.MatchID)
	}
}

// Failover bounds of TestChaosFailoverTimes, kill -9 → the next intent
// accepted. The seats are connected to a third member (the edge), which is
// never killed: what is measured is the cluster's failover, not a client's
// reconnection (deploy/measure.sh failover times that, with sessions on the
// victim). A killed member's closed connections confirm its death at once
// (docs/cluster.md §1.3), then the survivor claims and rebuilds the match and
// the edge's retried request reaches it: 48, 56 and 259 ms over three kills
// on a busy 2-core box (load average 13), 34–43 ms medians in make
// chaos-smoke (-race nodes). The median's bound is the target of a failover
// of few matches (1 s); the worst's leaves room for a kill that falls back
// to memberlist's probes (up to about 4.9 s, docs/performance.md §3.3).
const (
	failoverMedianBound = time.Second
	failoverWorstBound  = 10 * time.Second
)

// TestChaosFailoverTimes measures kill -9 → the match answering on another
// member, over MATCHGRAIN_KILLS kills (default 3 in the normal suite, so
// that the median is one of several; the numbers in docs/performance.md
// come from MATCHGRAIN_KILLS=20), and fails when the median or the worst
// time passes its bound above. After each kill
// the dead member is restarted as a new process (a fresh member id) and the
// next kill waits until every node sees three members again.
func TestChaosFailoverTimes(t *testing.T) {
	kills := 3
	if v := os.Getenv("MATCHGRAIN_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("MATCHGRAIN_KILLS=%q: want a positive integer", v)
		}
		kills = n
	}
	// Info logs: the harness follows each node's topology through them.
	cc := startChaosClusterBuild(t, false, "--log-level", "info")
	id := cc.createMatch(t, 5)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		seats[s], _ = dialSeat(t, cc.admin, cc.edge.http, id, s, 0)
		clienttest.Await(seats[s], 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	var times []time.Duration
	for k := 0; k < kills; k++ {
		play(t, seats, fmt.Sprintf("k%d", k), 2)
		ownerID, _ := cc.owner(t, id)
		victim := cc.procByMember(ownerID)
		if victim == nil {
			t.Fatalf("kill %d: owner %s unknown", k, ownerID)
		}
		s, v, in := clienttest.NextMove(t, seats)
		killed := time.Now()
		victim.kill()
		res := s.IntentWithin(fmt.Sprintf("k%d-after", k), v.EventSeq, in, 60*time.Second)
		d := time.Since(killed)
		if !res.Accepted {
			t.Fatalf("kill %d: intent after the kill rejected: %+v", k, res)
		}
		times = append(times, d)
		t.Logf("kill %d: answered after %v", k, d)
		if k == kills-1 {
			break
		}
		// Bring the member back as a new process that joins the survivor.
		other := cc.a
		if victim == cc.a {
			other = cc.b
		}
		restarted := startProcBuild(t, victim.name, cc.race, append(cc.common, "--join", other.gossip)...)
		if victim == cc.a {
			cc.a = restarted
		} else {
			cc.b = restarted
		}
		// The next kill needs the restarted member in every view, or the
		// match has nowhere known to go.
		clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, seeMembers(3, cc.a, cc.b, cc.edge))
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	median, worst := sorted[len(sorted)/2], sorted[len(sorted)-1]
	t.Logf("failover over %d kills: median %v (bound %v), worst %v (bound %v), all %v",
		len(times), median, failoverMedianBound, worst, failoverWorstBound, times)
	if median > failoverMedianBound || worst > failoverWorstBound {
		t.Fatalf("failover median %v / worst %v over %d kills, bounds %v / %v", median, worst, len(times), failoverMedianBound, failoverWorstBound)
	}
}

// TestChaosOrphanTimersFire: a match nobody is connected to, whose owner is
// killed, is woken on the survivor by the reclaimer (no client request) and
// its absence timer still ends it.
func TestChaosOrphanTimersFire(t *testing.T) {
	cc := &chaosCluster{schema: pgtest.NewSchema(t)}
	cc.common = []string{
		"--database-url", pgtest.URL(t), "--database-schema", cc.schema,
		"--cluster-name", "orphan-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--reclaim-interval", "1s", "--absence-timeout", "6s",
	}
	cc.a = startProc(t, "a", cc.common...)
	cc.b = startProc(t, "b", append(cc.common, "--join", cc.a.gossip)...)
	cc.admin = client.NewAdmin("http://"+cc.a.http, testAdminToken, nil)
	// Create matches until one lives on b, the member we kill (the clients
	// talk to a's edge, which must survive).
	var id, owner string
	for i := 0; i < 20 && owner != cc.b.member; i++ {
		id = cc.createMatch(t, uint64(100+i))
		owner, _ = cc.owner(t, id)
	}
	if owner != cc.b.member {
		t.Fatalf("no match landed on member b in 20 tries")
	}
	cc.b.kill()
	// Nobody asks for the match: only the reclaimer can bring it back, and
	// only a running grain can end it for absence.
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pgtest.URL(t))
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		var finished bool
		var newOwner string
		q := fmt.Sprintf("SELECT finished, owner FROM %s.matches WHERE match_id = $1", pgx.Identifier{cc.schema}.Sanitize())
		if err := conn.QueryRow(ctx, q, id).Scan(&finished, &newOwner); err != nil {
			return err
		}
		if !finished {
			return fmt.Errorf("match not finished yet (owner %s)", newOwner)
		}
		if newOwner != cc.a.member {
			return fmt.Errorf("finished by %s, want the survivor %s", newOwner, cc.a.member)
		}
		return nil
	})
	// The finished match still answers with the absence result, and says so.
	seat, _ := dialSeat(t, cc.admin, cc.a.http, id, 0, 0)
	v := clienttest.Await(seat, 20*time.Second, clienttest.Any[*protocol.ServerSnapshot]).View
	if !v.IsFinished || v.Winner != protocol.NoWinner || v.FinishReason == nil || *v.FinishReason != protocol.FinishAbsence {
		t.Fatalf("orphaned match: finished=%v winner=%d reason=%v, want a draw by absence (both seats absent since creation)",
			v.IsFinished, v.Winner, v.FinishReason)
	}
}

// TestChaosBotMatchSurvivesOwnerKill plays a bot-vs-bot training match on
// PostgreSQL and kills -9 the member that owns it midway: the bots follow
// their grain to the other member and finish the match there, and the log
// was written by one epoch after the other.
func TestChaosBotMatchSurvivesOwnerKill(t *testing.T) {
	cc := startChaosCluster(t, "--bot-think", "40ms")
	var id string
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		seed := uint64(31)
		var err error
		id, err = cc.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1", Bot: true}, {Name: "B", Deck: "S2", Bot: true}}, &seed)
		return err
	})
	// Let the bots play a while on the first owner.
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if n := len(cc.logEpochs(t, id)); n < 20 {
			return fmt.Errorf("%d log entries so far", n)
		}
		return nil
	})
	ownerID, epoch := cc.owner(t, id)
	victim := cc.procByMember(ownerID)
	if victim == nil {
		t.Fatalf("owner %s is not a match member", ownerID)
	}
	before := len(cc.logEpochs(t, id))
	victim.kill()
	killed := time.Now()
	clustertest.Eventually(t, 120*time.Second, 50*time.Millisecond, func() error {
		if !cc.finished(t, id) {
			return fmt.Errorf("match %s not finished (%d log entries)", id, len(cc.logEpochs(t, id)))
		}
		return nil
	})
	newOwner, newEpoch := cc.owner(t, id)
	if newOwner == ownerID || newEpoch <= epoch {
		t.Fatalf("owner %s epoch %d after the kill (was %s, %d)", newOwner, newEpoch, ownerID, epoch)
	}
	epochs := cc.logEpochs(t, id)
	if !slices.IsSorted(epochs) {
		t.Fatalf("log epochs out of order (two writers?): %v", epochs)
	}
	if epochs[len(epochs)-1] <= epoch || len(epochs) <= before {
		t.Fatalf("nothing written after the kill: %d entries, epochs %v", len(epochs), epochs)
	}
	t.Logf("bot match: %d entries before the kill, %d in all, finished %v after the kill on %s (epoch %d)",
		before, len(epochs), time.Since(killed).Round(time.Millisecond), newOwner, newEpoch)
}

// finished reads the match's finished flag from the store.
func (cc *chaosCluster) finished(t *testing.T, matchID string) bool {
	t.Helper()
	var done bool
	queryRow(t, fmt.Sprintf("SELECT finished FROM %s.matches WHERE match_id = $1", pgx.Identifier{cc.schema}.Sanitize()),
		[]any{matchID}, &done)
	return done
}

// queryRow runs one read-only query on the test database and scans its row
// into dest.
func queryRow(t *testing.T, q string, args []any, dest ...any) {
	t.Helper()
	if err := scanRow(t, q, args, dest...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// scanRow is queryRow for a row that may not exist yet: the query's error
// is returned; a failed connection still fails the test.
func scanRow(t *testing.T, q string, args []any, dest ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }() // read-only connection
	return conn.QueryRow(ctx, q, args...).Scan(dest...)
}
