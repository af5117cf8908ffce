package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/protocol"
)

// pgHA is a highly available PostgreSQL of the test's own: a
// pg_auto_failover monitor, a primary and a synchronous standby, started
// and driven with deploy/pg-ha.sh.
type pgHA struct {
	script, dir, url string
}

// startPGHA starts the formation (fsync off, commits still wait for the
// standby) and removes it when t ends, or when the test binary dies.
func startPGHA(t *testing.T) *pgHA {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "pg-ha.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script, "start", "--fast", "--stop-with", strconv.Itoa(os.Getpid()))
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s start: %v\n%s", script, err, stderr.String())
	}
	h := &pgHA{script: script}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, value, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		switch value = strings.Trim(value, "'"); name {
		case "DATABASE_URL":
			h.url = value
		case "MATCHGRAIN_PGHA_DIR":
			h.dir = value
		}
	}
	if h.url == "" || h.dir == "" {
		t.Fatalf("%s start printed no DATABASE_URL or MATCHGRAIN_PGHA_DIR:\n%s", script, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", h.dir).CombinedOutput(); err != nil {
			t.Errorf("%s stop: %v\n%s", script, err, out)
		}
	})
	t.Logf("pg_auto_failover primary and synchronous standby in sync after %v", time.Since(start).Round(time.Millisecond))
	return h
}

// do runs one command of deploy/pg-ha.sh on the formation and returns what
// it printed on stdout.
func (h *pgHA) do(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(h.script, append(args, h.dir)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		status, _ := exec.Command(h.script, "status", h.dir).CombinedOutput()
		t.Fatalf("pg-ha.sh %s: %v\n%s\nstatus:\n%s", strings.Join(args, " "), err, stderr.String(), status)
	}
	return strings.TrimSpace(string(out))
}

// maxRTO bounds the time from a primary's death to the first intent
// accepted again (docs/operations.md §11: about 3 s measured here).
const maxRTO = 10 * time.Second

// haCluster is two match members on the formation, each its own edge.
type haCluster struct {
	h      *pgHA
	a, b   *proc
	admins []*client.Admin
}

func startHACluster(t *testing.T, h *pgHA) *haCluster {
	t.Helper()
	common := []string{
		"--database-url", h.url,
		"--cluster-name", "pgha-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--seat-keepalive", "200ms", "--reclaim-interval", "2s",
		// Longer than a promotion: an append cut off by the failover waits
		// for the new primary instead of stopping its match.
		"--store-timeout", "30s",
		// The soak re-sends every acknowledged intent of a round at once,
		// faster than a player's rate limit allows on a quiet machine.
		"--intents-per-second", "200", "--intent-burst", "200",
	}
	c := &haCluster{h: h}
	c.a = startProc(t, "a", common...)
	c.b = startProc(t, "b", append(common, "--join", c.a.gossip)...)
	for _, p := range []*proc{c.a, c.b} {
		c.admins = append(c.admins, client.NewAdmin("http://"+p.http, testAdminToken, nil))
	}
	return c
}

// botLoad keeps n bot matches in play, half through each member: each
// worker starts a new match whenever its last one ended, until stop is
// closed. wait returns every match run and fails the test if any match did
// not finish or its bots disagree with the server.
func (c *haCluster) botLoad(t *testing.T, ctx context.Context, n int, seed uint64, stop <-chan struct{}) (wait func() []bots.MatchRun) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		runs     []bots.MatchRun
		failures []error
	)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := seed + uint64(w)*1000 + i
				p := []*proc{c.a, c.b}[w%2]
				mr, err := bots.PlayMatch(ctx, c.admins[w%2], bots.MatchOptions{GameAddr: "ws://" + p.http + "/game",
					Decks: [2]string{"S1", "S2"}, Seed: &s, BotSeed: s, Think: 40 * time.Millisecond,
					Timeout: 4 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Errorf("bot worker %d, match %d: %w", w, i, err))
				} else {
					runs = append(runs, mr)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	return func() []bots.MatchRun {
		t.Helper()
		wg.Wait()
		if err := errors.Join(failures...); err != nil {
			t.Fatalf("matches under load failed across the database faults:\n%v", err)
		}
		return runs
	}
}

// watchedMatch creates a match through member a and connects a raw seat
// for each player, whose every intent id the test chooses.
func (c *haCluster) watchedMatch(t *testing.T, ctx context.Context, seed uint64) [2]*clienttest.Seat {
	t.Helper()
	var seats [2]*clienttest.Seat
	var id string
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		id, err = c.admins[0].CreateMatch(cctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1"}, {Name: "B", Deck: "S2"}}, &seed)
		return err
	})
	for s := range 2 {
		seats[s], _ = dialSeat(t, c.admins[0], c.a.http, id, s, 0)
		clienttest.Await(seats[s], seatTimeout, clienttest.Any[*protocol.ServerSnapshot])
	}
	return seats
}

// resendAll re-sends every acknowledged intent: each must come back a
// duplicate with its original eventSeq, or an acknowledged intent was lost.
func resendAll(t *testing.T, seats [2]*clienttest.Seat, acked []clienttest.Move) {
	t.Helper()
	for _, m := range acked {
		res := seats[m.Seat].Intent(m.ID, 0, m.Intent)
		if !res.Accepted || !res.Duplicate || res.EventSeq != m.Seq {
			t.Fatalf("re-sent %s: %+v, want an accepted duplicate at seq %d", m.ID, res, m.Seq)
		}
	}
}

// checkEpochs fails the test if a match's log was not written by rising
// epochs (a second writer).
func checkEpochs(t *testing.T, h *pgHA, runs []bots.MatchRun) {
	t.Helper()
	cc := &chaosCluster{schema: "public", url: h.url}
	for _, mr := range runs {
		if epochs := cc.logEpochs(t, mr.ID); !slices.IsSorted(epochs) {
			t.Fatalf("match %s: log epochs out of order: %v", mr.ID, epochs)
		}
	}
}

// acceptedMove makes the next move of the match, waiting up to within for
// its result; a re-send under the same id is what a client does when its
// answer is slow, and the server must count it once. It returns the move
// and when it was accepted.
func acceptedMove(t *testing.T, seats [2]*clienttest.Seat, id string, within time.Duration) (clienttest.Move, time.Time) {
	t.Helper()
	s, v, in := clienttest.NextMove(t, seats)
	res := s.IntentWithin(id, v.EventSeq, in, within)
	if !res.Accepted {
		t.Fatalf("intent %s (%T) rejected: %+v", id, in, res)
	}
	return clienttest.Move{ID: id, Seat: s.Index, Intent: in, Seq: res.EventSeq}, time.Now()
}

// gauge reads one gauge of a member's /metrics.
func gauge(t *testing.T, p *proc, name string) float64 {
	t.Helper()
	f := scrapeFamilies(t, p.http)[name]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("%s missing on %s's /metrics", name, p.name)
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

func sumCounter(t *testing.T, name string, ps ...*proc) float64 {
	t.Helper()
	total := 0.0
	for _, p := range ps {
		if f := scrapeFamilies(t, p.http)[name]; f != nil {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestChaosPostgresFailover runs two members on a pg_auto_failover
// formation (deploy/pg-ha.sh) under bot load and kills, one after the
// other, the whole primary database node (keeper and postmaster: the
// monitor must promote the standby by itself), the standby, and the
// monitor. Through all three: every match continues and finishes with its
// bots agreeing with the server; the time from the primary's death to the
// first intent accepted again is bounded; every acknowledged intent of the
// watched match, re-sent at the end, is a duplicate with its original
// eventSeq; each match's log was written by rising epochs. The members
// export whether commits wait for a standby, and that gauge follows the
// standby's death and return.
func TestChaosPostgresFailover(t *testing.T) {
	h := startPGHA(t)
	c := startHACluster(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	seats := c.watchedMatch(t, ctx, 71)
	stop := make(chan struct{})
	wait := c.botLoad(t, ctx, 4, 900, stop)
	acked := clienttest.Play(t, seats, "before", 6)
	if n := gauge(t, c.a, "matchgrain_store_synchronous_standbys"); n != 1 {
		t.Fatalf("matchgrain_store_synchronous_standbys = %v before any fault, want 1", n)
	}

	// 1. The primary's whole node dies: nothing restarts its postmaster, so
	// only the monitor's promotion of the standby brings writes back.
	killed := time.Now()
	victim := h.do(t, "kill-primary", "--whole-node")
	m, at := acceptedMove(t, seats, "after-primary-kill", 60*time.Second)
	acked = append(acked, m)
	rto := at.Sub(killed)
	status := h.do(t, "status")
	t.Logf("primary %s killed (keeper and postmaster): first intent accepted again after %v\n%s", victim, rto.Round(time.Millisecond), status)
	if !strings.Contains(status, "primary: ") || strings.Contains(status, "primary: "+victim) {
		t.Fatalf("%s is still the primary after its death:\n%s", victim, status)
	}
	if rto > maxRTO {
		t.Fatalf("first intent accepted %v after the primary died, want at most %v", rto, maxRTO)
	}
	acked = append(acked, clienttest.Play(t, seats, "promoted", 3)...)
	h.do(t, "start-node", victim)
	h.do(t, "wait") // the old primary is back, as the standby
	acked = append(acked, clienttest.Play(t, seats, "rejoined", 3)...)

	// 2. The standby dies: the primary waits for it until the monitor
	// releases it to go on alone, and the members' gauge says so.
	killed = time.Now()
	standby := h.do(t, "kill-standby", "--whole-node")
	m, at = acceptedMove(t, seats, "after-standby-kill", 60*time.Second)
	acked = append(acked, m)
	t.Logf("standby %s killed: first intent accepted again after %v", standby, at.Sub(killed).Round(time.Millisecond))
	clustertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := gauge(t, c.b, "matchgrain_store_synchronous_standbys"); n != 0 {
			return fmt.Errorf("matchgrain_store_synchronous_standbys = %v with the standby dead, want 0", n)
		}
		return nil
	})
	h.do(t, "start-node", standby)
	h.do(t, "wait")
	clustertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := gauge(t, c.b, "matchgrain_store_synchronous_standbys"); n != 1 {
			return fmt.Errorf("matchgrain_store_synchronous_standbys = %v with the standby back, want 1", n)
		}
		return nil
	})
	acked = append(acked, clienttest.Play(t, seats, "standby-back", 3)...)

	// 3. The monitor dies: the pair goes on as it is, nothing stalls.
	h.do(t, "kill-monitor")
	killed = time.Now()
	acked = append(acked, clienttest.Play(t, seats, "no-monitor", 3)...)
	t.Logf("monitor killed: 3 intents accepted in %v", time.Since(killed).Round(time.Millisecond))
	h.do(t, "start-monitor")
	h.do(t, "wait")

	close(stop)
	runs := wait()
	resendAll(t, seats, acked)
	checkEpochs(t, h, runs)
	unknown := sumCounter(t, "matchgrain_store_append_unknown_outcomes_total", c.a, c.b)
	errs := sumCounter(t, "matchgrain_store_append_errors_total", c.a, c.b)
	t.Logf("%d bot matches finished and verified, %d intents of the watched match re-sent as duplicates; "+
		"%.0f appends settled after the database went away, %.0f appends failed", len(runs), len(acked), unknown, errs)
}

// The soak plays on after each kill for soakWindow, an intent every
// soakPace, to see the whole outage.
const (
	soakWindow = 12 * time.Second
	soakPace   = 300 * time.Millisecond
)

// TestPGHASoak kills the primary MATCHGRAIN_PGHA_KILLS times under bot load,
// alternating its postmaster alone (its keeper restarts it, or the monitor
// promotes the standby, whichever is first) and its whole node (only a
// promotion helps; the node comes back as the standby afterwards), and
// reports the distribution of the time from each kill to the first intent
// accepted again. It runs only when asked (make pg-ha-soak).
func TestPGHASoak(t *testing.T) {
	kills, _ := strconv.Atoi(os.Getenv("MATCHGRAIN_PGHA_KILLS"))
	if kills <= 0 {
		t.Skip("a soak: set MATCHGRAIN_PGHA_KILLS (make pg-ha-soak)")
	}
	h := startPGHA(t)
	c := startHACluster(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*time.Minute+5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	wait := c.botLoad(t, ctx, 4, 1900, stop)
	type watched struct {
		seats [2]*clienttest.Seat
		acked []clienttest.Move
	}
	acked := 0
	rtos, pauses := map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := range kills {
		kind, args := "postmaster", []string{"kill-primary"}
		if i%2 == 1 {
			kind, args = "whole node", []string{"kill-primary", "--whole-node"}
		}
		// A fresh match each round: a long soak would play one to its end.
		w := watched{seats: c.watchedMatch(t, ctx, uint64(3000+i))}
		w.acked = clienttest.Play(t, w.seats, fmt.Sprintf("k%d-before", i), 4)
		killed := time.Now()
		victim := h.do(t, args...)
		m, at := acceptedMove(t, w.seats, fmt.Sprintf("k%d-after", i), 60*time.Second)
		w.acked = append(w.acked, m)
		rto := at.Sub(killed)
		rtos[kind] = append(rtos[kind], rto)
		// A postmaster killed alone leaves its backends serving until they
		// notice, so the first intent may pass before the outage: keep
		// playing, paced like a player, and take the longest pause too.
		pause := rto
		for j := 0; time.Since(killed) < soakWindow; j++ {
			if w.seats[0].View().IsFinished {
				break
			}
			time.Sleep(soakPace) // a player's pace, not a wait for a condition
			m, next := acceptedMove(t, w.seats, fmt.Sprintf("k%d-then-%d", i, j), 60*time.Second)
			w.acked = append(w.acked, m)
			pause = max(pause, next.Sub(at))
			at = next
		}
		pauses[kind] = append(pauses[kind], pause)
		if kind == "whole node" {
			h.do(t, "start-node", victim)
		}
		h.do(t, "wait")
		// Now, while the seats are in use (idle ones are closed by the
		// heartbeat timeout before the soak ends).
		resendAll(t, w.seats, w.acked)
		acked += len(w.acked)
		primary, _, _ := strings.Cut(strings.TrimPrefix(h.do(t, "status"), "primary: "), "\n")
		t.Logf("kill %d: %s of the primary %s; first intent accepted again after %v, longest pause within %v of the kill %v; primary now %s",
			i+1, kind, victim, rto.Round(time.Millisecond), soakWindow, pauses[kind][len(pauses[kind])-1].Round(time.Millisecond), primary)
	}
	close(stop)
	runs := wait()
	checkEpochs(t, h, runs)
	t.Logf("%d kills; %d bot matches finished and verified; %d acknowledged intents re-sent, all duplicates; %.0f appends settled after the database went away",
		kills, len(runs), acked, sumCounter(t, "matchgrain_store_append_unknown_outcomes_total", c.a, c.b))
	for _, kind := range []string{"postmaster", "whole node"} {
		for _, m := range []struct {
			what string
			d    []time.Duration
		}{{"kill to first accepted intent", rtos[kind]}, {"longest pause between accepted intents", pauses[kind]}} {
			d := slices.Clone(m.d)
			if len(d) == 0 {
				continue
			}
			slices.Sort(d)
			med, worst := d[len(d)/2], d[len(d)-1]
			t.Logf("%s kills, %s, sorted: %v; median %v, worst %v", kind, m.what, d, med.Round(time.Millisecond), worst.Round(time.Millisecond))
			if med > 5*time.Second || worst > maxRTO {
				t.Errorf("%s kills, %s: median %v (target 5 s), worst %v (target %v)", kind, m.what, med, worst, maxRTO)
			}
		}
	}
}
