package sim

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/protocol"
)

// faults are the fault points one seed switches on, and how often they
// strike, until the instant faults stop.
type faults struct {
	until int64
	// Store: a call fails (nothing written), loses its reply (written), or
	// the store is down for a while; storeSlow: a call takes time, its
	// request or answer may be lost, and the store timeout races the answer.
	storeFail, storeLose, outage, storeSlow float64
	outageUntil                             int64
	// Members crash (memory lost) or freeze (resume stale later).
	crash, freeze bool
	// Network: requests and replies lost; any message slow (overtaken) or
	// delivered twice.
	loss, slow, dup float64
	// Players: cut their connection (then reconnect, take the seat over, or
	// leave for good). Not faults but habits, kept after faults stop:
	// players think past their decision time, or leave a running match.
	cut       float64
	quit      bool
	slowThink float64
	leave     float64
}

// pick draws a seed's fault profile: each fault point on or off.
func pick(rng *rand.Rand) faults {
	on := func(p float64) float64 {
		if rng.IntN(2) == 0 {
			return 0
		}
		return p
	}
	return faults{
		until:     int64(rng.IntN(60_000)),
		storeFail: on(0.03), storeLose: on(0.03), outage: on(0.002),
		crash: rng.IntN(2) == 0, freeze: rng.IntN(2) == 0,
		loss: on(0.05), slow: on(0.05), dup: on(0.05),
		cut: on(0.08), quit: rng.IntN(4) == 0, slowThink: on(0.08), leave: on(0.01),
	}
}

// Timing is the grain timing of simulated matches: the production shape,
// scaled down so that a match is short.
func Timing() actors.Timing {
	return actors.Timing{
		DecisionTime: 10 * time.Second, BankTime: 20 * time.Second, AbsenceTimeout: 30 * time.Second,
		ClockInterval: 5 * time.Second, SeatKeepAlive: 2 * time.Second, SnapshotEvery: 8,
		ResumeWindow: 16, IdleStop: 60 * time.Second, BotThink: time.Second,
	}
}

// settle is how long after faults stop a match must have finished.
const settle = 15 * 60_000

// calm is how long after faults stop every member is back and every
// orphan reclaimed (a restart takes up to 20 s, a reclaim sweep 36 s);
// timerSlack is how late a grain's timer may fire in the simulation.
const (
	calm       = 60_000
	timerSlack = 5
)

// Result is what one simulated match did.
type Result struct {
	Seed      uint64
	Steps     int
	VirtualMs int64
	LogLen    int
	Finished  bool
	// SlowCalls are the store calls that took time; TimedOut those whose
	// timeout answered first; LateWrites the writes of those that landed
	// after their caller had given up on them.
	SlowCalls, TimedOut, LateWrites int
}

// Simulate runs one match under seed and checks every invariant, after
// each step and at the end. trace, if set, gets every step.
func Simulate(seed uint64, trace func(string)) (Result, error) {
	w := &world{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x6d61746368677261)), timing: Timing(),
		durable: map[intentKey]int64{}, fifo: map[fifoKey]int64{}, trace: trace}
	w.now = 1_700_000_000_000
	w.created = w.now
	w.matchID = fmt.Sprintf("sim-%d", seed)
	w.faults = pick(w.rng)
	w.faults.until += w.now
	w.srng = rand.New(rand.NewPCG(seed, 0x73746f72652d6c61))
	if w.srng.IntN(2) == 0 {
		w.faults.storeSlow = 0.05
	}
	w.store = NewStore(func() time.Time { return time.UnixMilli(w.now) })
	w.store.OnAppend = w.onAppend
	w.store.Violation = func(err error) { w.fail("one writer: %v", err) }
	res := Result{Seed: seed}
	// One match in five is a training match: the grain plays one seat.
	var bots [2]bool
	if w.rng.IntN(5) == 0 {
		bots[w.rng.IntN(2)] = true
	}
	meta, err := actors.EncodeMatchMeta([2]string{"a", "b"}, [2]string{"S1", "S2"}, seed, w.created, bots, rules)
	if err != nil {
		return res, err
	}
	if err := w.store.CreateMatch(context.Background(), w.matchID, meta); err != nil {
		return res, err
	}
	w.store.Fault = w.storeFate
	for i := range 3 {
		w.members = append(w.members, w.newMember(i))
	}
	for s := range 2 {
		w.players[s] = w.newPlayer(s)
		if bots[s] {
			w.players[s].bot = true
			continue
		}
		w.after(w.between(0, 2000), w.players[s].connect)
	}
	w.after(w.between(0, 1000), func() {
		if m := w.owner(); m != nil {
			m.request(&actors.Wake{}, nil)
		}
	})
	w.after(w.between(1000, 36000), w.sweep)
	w.after(w.between(1000, 20000), w.chaos)

	deadline := w.faults.until + settle
	for w.events.Len() > 0 && w.failure == nil {
		e := heap.Pop(&w.events).(event)
		w.now = e.at
		if w.now > deadline || w.done() {
			break
		}
		w.steps++
		e.fn()
	}
	res.Steps, res.VirtualMs = w.steps, w.now-w.created
	res.SlowCalls, res.TimedOut, res.LateWrites = w.slowCalls, w.timedOut, w.lateWrites
	if w.failure == nil {
		w.checkEnd(&res)
	}
	if w.failure != nil {
		return res, fmt.Errorf("seed %d: %w", seed, w.failure)
	}
	return res, nil
}

// done: the match is finished and marked, every player still playing has
// its end, and faults have stopped.
func (w *world) done() bool {
	if w.faulty() {
		return false
	}
	_, _, marked := w.store.record(w.matchID)
	if !marked {
		return false
	}
	for _, p := range w.players {
		if !p.bot && !p.quit && !p.fold.finished {
			return false
		}
	}
	return true
}

// checkEnd checks the final state against the durable log.
func (w *world) checkEnd(res *Result) {
	meta, log, marked := w.store.record(w.matchID)
	res.LogLen = len(log)
	truth, err := actors.ReplayLog(rules, w.timing, meta, log)
	if err != nil {
		w.fail("the durable log does not replay: %v", err)
		return
	}
	res.Finished = truth.Finished
	// Liveness: faults stopped long enough ago for the match to end.
	if !truth.Finished || !marked {
		w.fail("liveness: %d min after faults stopped the match is not over (finished %v, marked %v, %d entries)",
			settle/60_000, truth.Finished, marked, len(log))
		return
	}
	// No intent applied twice; every acknowledged intent durable at its seq.
	bySeat := map[intentKey]actors.LogRecord{}
	lastChange := w.created
	var present [2]int64
	// absentAt is when each seat's absence was logged (0: present).
	var absentAt [2]int64
	absenceLimit := w.timing.AbsenceTimeout.Milliseconds()
	for _, r := range truth.Records {
		// Absence never fires late: a seat absent past its bound is judged
		// at that instant (or the match ended before, some other way),
		// unless something disturbed the activation meanwhile (a crash,
		// a freeze, a move, a slow or failed store call).
		for s, at := range absentAt {
			due := at + absenceLimit
			if at != 0 && r.At > due+timerSlack && w.calmBetween(at, due+timerSlack) {
				w.fail("seat %d absent since %d: log entry %d (%s) at %d, %dms after its absence limit, and no absence loss before it",
					s, at, r.Seq, r.Kind, r.At, r.At-at-absenceLimit)
				return
			}
		}
		// Clocks fire in time: once faults have long stopped (members back,
		// orphans reclaimed), nothing happens after a decision deadline
		// but the timeout it calls for, at that instant.
		if r.DeadlineAt > w.faults.until+calm && r.At > r.DeadlineAt+timerSlack {
			w.fail("log entry %d (%s) at %d, %dms after the decision deadline %d", r.Seq, r.Kind, r.At, r.At-r.DeadlineAt, r.DeadlineAt)
			return
		}
		switch r.Kind {
		case "intent":
			k := intentKey{r.Seat, r.IntentID}
			if _, ok := bySeat[k]; ok {
				w.fail("intent %q of seat %d in the log twice", r.IntentID, r.Seat)
				return
			}
			bySeat[k] = r
			lastChange = r.At
		case "presence":
			if r.Present {
				present[r.Seat], absentAt[r.Seat] = r.At, 0
			} else {
				absentAt[r.Seat] = r.At
			}
		case "finish":
			// Clocks and absence never fire early.
			switch r.Reason {
			case protocol.FinishTimeout:
				if r.At < r.DeadlineAt || r.DeadlineAt == 0 || r.At-lastChange < w.timing.DecisionTime.Milliseconds() {
					w.fail("timeout at %d: the deadline was %d, the decision started at %d", r.At, r.DeadlineAt, lastChange)
				}
			case protocol.FinishAbsence:
				since := max(present[max(r.Loser, 0)], w.created)
				if r.Loser >= 0 && r.At-since < w.timing.AbsenceTimeout.Milliseconds() {
					w.fail("absence loss of seat %d at %d, %dms after it was last present", r.Loser, r.At, r.At-since)
				}
			}
			lastChange = r.At
		}
	}
	for _, p := range w.players {
		if p.bot {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(p.accepted)) {
			seq := p.accepted[id]
			r, ok := bySeat[intentKey{p.seat, id}]
			if !ok {
				w.fail("seat %d: acknowledged intent %q is not in the log", p.seat, id)
				return
			}
			if r.EventSeq != seq {
				w.fail("seat %d: intent %q acknowledged at seq %d, durable at %d", p.seat, id, seq, r.EventSeq)
				return
			}
		}
		// Every event a seat saw is the truth as that seat may see it.
		for _, seq := range slices.Sorted(maps.Keys(p.seen)) {
			got := p.seen[seq]
			if seq < 1 || seq > int64(len(truth.Events)) {
				w.fail("seat %d saw event %d; the match has %d", p.seat, seq, len(truth.Events))
				return
			}
			var want []byte
			if ev, ok := rules.Project(p.seat, truth.Events[seq-1].Event); ok {
				if want, err = protocol.AppendEvent(nil, ev); err != nil {
					w.fail("encode event %d: %v", seq, err)
					return
				}
			}
			if !bytes.Equal(got, want) {
				w.fail("seat %d: event %d differs from the durable one projected for it", p.seat, seq)
				return
			}
		}
		// A seat's view is the fold of its events.
		if !p.quit {
			v := truth.Views[p.seat]
			// The reason too: a seat back after the end knows why it ended.
			want := foldOf(&v)
			if p.lastSeq != int64(len(truth.Events)) || p.fold != want {
				w.fail("seat %d: view %+v at seq %d, the match ended %+v at seq %d", p.seat, p.fold, p.lastSeq, want, len(truth.Events))
			}
		}
	}
}

// Run simulates n matches from seed first on, on every core (independent
// seeds in parallel), and returns the first failure, if any.
func Run(first uint64, n int) (Stats, error) {
	var (
		next   atomic.Uint64
		mu     sync.Mutex
		failed error
		st     Stats
		wg     sync.WaitGroup
	)
	next.Store(first)
	end := first + uint64(n)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local Stats
			for {
				seed := next.Add(1) - 1
				if seed >= end {
					break
				}
				mu.Lock()
				stop := failed != nil && seed > failedSeed(failed)
				mu.Unlock()
				if stop {
					break
				}
				r, err := Simulate(seed, nil)
				local.add(r)
				if err != nil {
					mu.Lock()
					if failed == nil || seed < failedSeed(failed) {
						failed = &SeedError{Seed: seed, Err: err}
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			st.merge(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return st, failed
}

// SeedError is a failed simulation and the seed that replays it.
type SeedError struct {
	Seed uint64
	Err  error
}

func (e *SeedError) Error() string { return e.Err.Error() }
func (e *SeedError) Unwrap() error { return e.Err }

func failedSeed(err error) uint64 {
	if se, ok := err.(*SeedError); ok {
		return se.Seed
	}
	return ^uint64(0)
}

// Stats sums the results of many matches.
type Stats struct {
	Matches, Finished int
	Steps             int64
	VirtualMs         int64
	LogEntries        int64
	// The store's races (Result).
	SlowCalls, TimedOut, LateWrites int64
}

func (s *Stats) add(r Result) {
	s.Matches++
	if r.Finished {
		s.Finished++
	}
	s.Steps += int64(r.Steps)
	s.VirtualMs += r.VirtualMs
	s.LogEntries += int64(r.LogLen)
	s.SlowCalls += int64(r.SlowCalls)
	s.TimedOut += int64(r.TimedOut)
	s.LateWrites += int64(r.LateWrites)
}

func (s *Stats) merge(o Stats) {
	s.Matches += o.Matches
	s.Finished += o.Finished
	s.Steps += o.Steps
	s.VirtualMs += o.VirtualMs
	s.LogEntries += o.LogEntries
	s.SlowCalls += o.SlowCalls
	s.TimedOut += o.TimedOut
	s.LateWrites += o.LateWrites
}

// rules is the game of simulated matches: the grain's toy game, short, so
// that a million matches are affordable; the simulator tests the grain
// (durability, idempotency, clocks, seats), not the card game.
var rules = actors.ToyRules{Turns: 12}
