package nemesis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/matchgrain/matchgrain/cluster"
)

// Timing is the members' failure detection and the seats' keep-alive,
// scaled down as the chaos tests scale them, and what the liveness bound is
// derived from (docs/operations.md §9).
type Timing struct {
	ProbeInterval   time.Duration
	SeatKeepalive   time.Duration
	ReclaimInterval time.Duration
}

// DefaultTiming probes every second (the chaos tests' relaxed detection: a
// member slowed by a loaded machine is not declared dead for nothing).
var DefaultTiming = Timing{ProbeInterval: time.Second, SeatKeepalive: 500 * time.Millisecond, ReclaimInterval: 5 * time.Second}

// memberRestart bounds how long a member that exited (declared dead while
// cut off, then evicted) takes to be running again: the supervisor's 1 s
// delay and a start on a loaded machine.
const memberRestart = 5 * time.Second

// LivenessBound is how long after a heal every match must accept an
// intent again (docs/operations.md §9). The longest path after a heal: a
// member its peers still suspect is declared dead up to CrashDetection after
// the heal (its suspicion may have started during the fault), exits as
// evicted and is back within memberRestart, and the rendezvous hash moves
// matches to it; a seat whose grain moved finds it within three
// keep-alives; a seat whose connection closed reconnects after at most the
// last backoff step, and one whose connection went silent notices within
// clientReadTimeout. A db-cut's append in flight at the heal (the store's
// 5 s call bound, then a reactivation) and a silent connection alone take
// less.
func (t Timing) LivenessBound() time.Duration {
	fd := cluster.FailureDetection{ProbeInterval: t.ProbeInterval}
	return fd.CrashDetection() + memberRestart + 3*t.SeatKeepalive + clientBackoff[len(clientBackoff)-1] + clientReadTimeout
}

// drainPatience bounds how long the matches in play may take to finish
// after the last heal; one still playing then is reported unfinished, with
// what its seats wait for.
const drainPatience = 4 * time.Minute

// Config is one run of the harness.
type Config struct {
	Members  int           // 3 to 5 matchd members
	Matches  int           // matches in play at once
	Duration time.Duration // faults are injected this long; then the matches in play finish
	Seed     uint64        // the fault schedule's seed
	Matchd   string        // the matchd binary
	Think    time.Duration // each bot's pause before an intent
	Timing   Timing
	// FaultHold is the longest a fault lasts (it lasts between half of it
	// and all of it).
	FaultHold time.Duration
	Log       *slog.Logger
	// PGHA, if set, is deploy/pg-ha.sh: the run uses the highly available
	// PostgreSQL it starts instead of a single server, and injects
	// primary-kill too. Members then wait up to 30 s for the store.
	PGHA string
	// Kinds, if set, are the only fault kinds injected (primary-kill needs
	// PGHA); default every kind.
	Kinds []Kind
}

// Report is what a run found.
type Report struct {
	Seed    uint64
	Faults  []Fault
	Matches int
	Verdict Verdict
	Bound   time.Duration
	Ops     int
	// Restarts counts members that exited on their own (evicted after
	// peers declared them dead) and were restarted: not a violation, the
	// price of a fault.
	Restarts int
	// HA says the run had the highly available database, and so the
	// primary-kill fault.
	HA bool
}

// Pass reports whether the run found no violation.
func (r *Report) Pass() bool { return r.Verdict.violations() == 0 }

// Write prints the report; its last lines name every fault kind with its
// count and every violation count, then the seed.
func (r *Report) Write(w io.Writer) {
	v := r.Verdict
	for _, p := range v.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	counts := map[Kind]int{}
	for _, f := range r.Faults {
		counts[f.Kind]++
	}
	fmt.Fprintf(w, "schedule:")
	for _, f := range r.Faults {
		fmt.Fprintf(w, " %s", f)
	}
	fmt.Fprintln(w)
	var kinds []string
	for _, k := range Kinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	if r.HA {
		kinds = append(kinds, fmt.Sprintf("%s=%d", KindPrimaryKill, counts[KindPrimaryKill]))
	} else {
		kinds = append(kinds, string(KindPrimaryKill)+"=off")
	}
	fmt.Fprintf(w, "faults: %d (%s)\n", len(r.Faults), strings.Join(kinds, " "))
	fmt.Fprintf(w, "intents: sent=%d acknowledged=%d resent=%d lost=%d applied-twice=%d forks=%d\n",
		r.Ops, v.Acknowledged, v.Resent, v.Lost, v.AppliedTwice, v.Forks)
	fmt.Fprintf(w, "matches: %d unfinished=%d seats-disagree=%d log-gaps=%d epoch-drops=%d\n",
		r.Matches, v.Unfinished, v.Disagree, v.LogGaps, v.EpochDrops)
	fmt.Fprintf(w, "liveness: max=%v bound=%v late=%d (members restarted after eviction: %d)\n", v.Liveness.Round(time.Millisecond), r.Bound, v.Late, r.Restarts)
	verdict := "PASS"
	if !r.Pass() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "nemesis %s seed=%d\n", verdict, r.Seed)
}

// Run runs the harness inside the client namespace (the network must be up:
// Setup): PostgreSQL, the members, the workload with faults for
// c.Duration, then the matches in play finish, and the checker judges.
func Run(ctx context.Context, c Config, workDir string) (*Report, error) {
	lg := c.Log
	pgDir := filepath.Join(workDir, "pg")
	if err := os.MkdirAll(pgDir, 0o755); err != nil {
		return nil, err
	}
	url := dbURL
	var ha *pgHA
	if c.PGHA != "" {
		h, err := startPGHA(ctx, c.PGHA, workDir)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := h.stop(context.Background()); err != nil {
				lg.Warn("stop the HA database", "err", err)
			}
		}()
		ha, url = h, h.url
		lg.Info("highly available database up", "url", url)
	} else {
		pg, err := startPG(ctx, pgDir)
		if pg != nil {
			defer func() { _ = pg.Process.Kill() }() // throwaway
		}
		if err != nil {
			return nil, err
		}
	}
	token, key := randomHex(16), randomHex(32)
	members := make([]*member, c.Members)
	for i := range members {
		n := i + 1
		f, err := os.Create(filepath.Join(workDir, fmt.Sprintf("m%d.log", n)))
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // the member's log, kept for diagnosis until the directory goes
		members[i] = &member{n: n, bin: c.Matchd, args: memberArgs(n, c.Members, c.Timing, url, ha != nil, token, key), log: f, lg: lg}
	}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	// The first member creates the schema; the others join it.
	if err := members[0].start(); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members[1:] {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i+1] = m.start() }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	lg.Info("cluster up", "members", c.Members)

	w := &workload{members: members, timing: c.Timing, think: c.Think, hist: &History{}, lg: lg}
	w.admin = newAdmin(w, token)
	bound := c.Timing.LivenessBound()

	// The workload: c.Matches slots, each playing match after match until
	// the faults end; then each finishes the match it is playing. A slot
	// starts no match that would, at the mean length so far, outlast the
	// faults by much: the run ends soon after the last heal.
	end := time.Now().Add(c.Duration)
	playCtx, stopPlay := context.WithCancel(ctx)
	defer stopPlay()
	var newMatches sync.WaitGroup
	stopNew := make(chan struct{})
	for slot := range c.Matches {
		newMatches.Add(1)
		go func() {
			defer newMatches.Done()
			for i := uint64(0); ; i++ {
				select {
				case <-stopNew:
					return
				default:
				}
				if i > 0 && time.Until(end) < w.hist.meanLength()/2 {
					return
				}
				w.playMatch(playCtx, c.Seed^uint64(slot)<<32^i)
			}
		}()
	}

	faults := schedule(ctx, c, members, ha, bound, end)
	close(stopNew)
	lg.Info("faults over; waiting for the matches in play to finish")
	finished := make(chan struct{})
	go func() { newMatches.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(drainPatience):
		w.hist.mu.Lock()
		for _, m := range w.hist.Matches {
			if m.Finished.IsZero() {
				lg.Warn("match still in play; stopping it", "match", m.ID, "after", drainPatience, "seats", m.stuck())
			}
		}
		w.hist.mu.Unlock()
		stopPlay()
		<-finished
	}
	played := time.Now()

	r := &Report{Seed: c.Seed, Faults: faults, Bound: bound, HA: ha != nil}
	for _, m := range members {
		m.mu.Lock()
		r.Restarts += m.restarts
		m.mu.Unlock()
	}
	w.hist.mu.Lock()
	r.Matches, r.Ops = len(w.hist.Matches), len(w.hist.Ops)
	ids := make([]string, len(w.hist.Matches))
	for i, m := range w.hist.Matches {
		ids[i] = m.ID
	}
	w.hist.mu.Unlock()
	logs, err := readLogs(ctx, url, ids)
	if err != nil {
		return nil, err
	}
	checkHistory(&r.Verdict, w.hist, logs)
	checkLiveness(&r.Verdict, w.hist, faults, bound, played)
	resend(ctx, w, &r.Verdict)
	return r, nil
}

// schedule injects faults one at a time until c.Duration has passed: the
// kinds in a shuffled round, each on random members, held for a random
// time up to c.FaultHold, then healed; after each heal the cluster gets the
// liveness bound to recover before the next fault, so that each heal is
// judged alone.
func schedule(ctx context.Context, c Config, members []*member, ha *pgHA, bound time.Duration, end time.Time) []Fault {
	kinds := c.Kinds
	if len(kinds) == 0 {
		kinds = Kinds
		if ha != nil {
			kinds = append(slices.Clone(Kinds), KindPrimaryKill)
		}
	}
	rng := newRand(c.Seed)
	var faults []Fault
	var round []Kind
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	if !wait(min(bound/2, c.Duration/4)) { // the first matches get going
		return faults
	}
	for time.Now().Add(c.FaultHold).Before(end) {
		if len(round) == 0 {
			round = slices.Clone(kinds)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		f := pick(rng, round[0], len(members))
		round = round[1:]
		hold := c.FaultHold/2 + time.Duration(rng.Int64N(int64(c.FaultHold/2)))
		f.Start = time.Now()
		c.Log.Info("fault", "fault", f.String(), "hold", hold)
		if err := inject(ctx, f, members, ha); err != nil {
			c.Log.Error("inject failed", "fault", f.String(), "err", err)
		}
		wait(hold)
		if err := heal(ctx, f, members, ha); err != nil {
			c.Log.Error("heal failed", "fault", f.String(), "err", err)
		}
		f.Healed = time.Now()
		faults = append(faults, f)
		c.Log.Info("healed", "fault", f.String())
		if !wait(bound) {
			break
		}
	}
	return faults
}

func inject(ctx context.Context, f Fault, members []*member, ha *pgHA) error {
	switch f.Kind {
	case KindPrimaryKill:
		return ha.killPrimary(ctx)
	case KindPause:
		return members[f.Targets[0]-1].signal(syscall.SIGSTOP)
	case KindKill:
		return members[f.Targets[0]-1].kill()
	default:
		return ApplyNet(ctx, f, len(members))
	}
}

func heal(ctx context.Context, f Fault, members []*member, ha *pgHA) error {
	switch f.Kind {
	case KindPrimaryKill:
		return ha.settle(ctx)
	case KindPause:
		return members[f.Targets[0]-1].signal(syscall.SIGCONT)
	case KindKill:
		return members[f.Targets[0]-1].restart()
	default:
		return HealNet(ctx, f)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b)
}

// newRand is the schedule's generator for seed: one seed, one schedule.
func newRand(seed uint64) *mrand.Rand { return mrand.New(mrand.NewPCG(seed, 0x6e656d65)) }
