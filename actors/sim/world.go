package sim

import (
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/persistence"
)

// world is one simulated match: a few members that host its activations,
// a store, two players and the network between them, all on one virtual
// clock and one generator seeded by the seed. Nothing in it reads the real
// clock or starts a goroutine, so a seed replays step for step.
type world struct {
	seed uint64
	rng  *rand.Rand
	// srng draws the store's latencies and lost messages: a stream apart,
	// so that a store call that is not slow draws nothing from rng and a
	// seed's other choices stay as they were before latency was modelled.
	srng   *rand.Rand
	now    int64 // virtual Unix milliseconds
	events eventQueue
	seq    uint64
	steps  int

	timing  actors.Timing
	faults  faults
	store   *Store
	members []*member
	players [2]*player
	matchID string
	created int64

	// durable is every intent in the durable log, by seat and id, with the
	// log seq that holds it (kept from the store's appends as they land).
	durable map[intentKey]int64
	// fifo is when the last push of an activation to a connection arrives.
	fifo map[fifoKey]int64

	// stallNext: the store stalls the member whose step is running right
	// after the current call (member.step).
	stallNext bool
	// logReadFailed: a ReadLog call failed, so a resume the journal could
	// not serve rightly got a snapshot instead of the events.
	logReadFailed bool

	// slowCalls, timedOut and lateWrites count the store's races (Result).
	slowCalls, timedOut, lateWrites int

	// disturbed holds the instants something disturbed the match's
	// activation (disturb), in order.
	disturbed []int64

	failure error
	trace   func(string)
}

type intentKey struct {
	seat int
	id   string
}

// event is something due at a virtual instant; seq orders events due at
// the same instant by when they were scheduled.
type event struct {
	at  int64
	seq uint64
	fn  func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// after schedules fn d milliseconds from now.
func (w *world) after(d int64, fn func()) {
	w.seq++
	heap.Push(&w.events, event{at: w.now + max(d, 0), seq: w.seq, fn: fn})
}

// between returns a uniform choice in [lo, hi].
func (w *world) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + w.rng.Int64N(hi-lo+1)
}

// chance is true with probability p.
func (w *world) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }

// faulty reports whether faults may still happen: they stop at faults.until
// so that liveness can be checked.
func (w *world) faulty() bool { return w.now < w.faults.until }

func (w *world) logf(format string, args ...any) {
	if w.trace != nil {
		w.trace(fmt.Sprintf("%8d ", w.now) + fmt.Sprintf(format, args...))
	}
}

// disturb records that something delayed or moved the match's activation
// now (a crash, a freeze, a halt, a claim, a slow or failed store call):
// its timers are only bound to fire in time between disturbances.
func (w *world) disturb() {
	if n := len(w.disturbed); n == 0 || w.disturbed[n-1] != w.now {
		w.disturbed = append(w.disturbed, w.now)
	}
}

// calmBetween reports whether nothing disturbed the match from lo to hi.
func (w *world) calmBetween(lo, hi int64) bool {
	i, _ := slices.BinarySearch(w.disturbed, lo)
	return i == len(w.disturbed) || w.disturbed[i] > hi
}

// fail records the first invariant violation; the run stops after the step.
func (w *world) fail(format string, args ...any) {
	if w.failure == nil {
		w.failure = fmt.Errorf("t=%dms: "+format, append([]any{w.now}, args...)...)
		w.logf("VIOLATION %v", w.failure)
	}
}

// net sends one message: it arrives after a delay, or (while faults run)
// is lost, delayed more, or delivered twice; two messages may overtake each
// other.
func (w *world) net(lossy bool, fn func()) {
	d := w.between(1, 20)
	if w.faulty() {
		if lossy && w.chance(w.faults.loss) {
			return
		}
		if w.chance(w.faults.slow) {
			d = w.between(20, 1500)
		}
		if w.chance(w.faults.dup) {
			w.after(d+w.between(0, 300), fn)
		}
	}
	w.after(d, fn)
}

// member is one virtual matchd: it hosts at most one activation of the
// match (the simulator runs one match per world).
type member struct {
	w           *world
	idx         int
	incarnation int
	name        string
	score       uint64 // its rendezvous score for the match
	alive       bool
	frozen      bool
	inView      bool
	cores       func() *actors.Core
	act         *activation
	// pending is the mailbox: the inputs that reached the member while it
	// was frozen or its activation waited for the store.
	pending []func()
	// resume holds the answers from the store that came while the member
	// was frozen: they go before the mailbox.
	resume []func()
	// busy: the activation waits for the answer to store call callID; the
	// mailbox waits with it, as protoactor's does.
	busy     bool
	callID   uint64
	draining bool
	// exiting: the member thawed out of the view; it exits once its
	// backlog is handled.
	exiting bool
}

// activation is one Core hosted by a member, with its timer.
type activation struct {
	core      *actors.Core
	timerGen  int
	lastInput int64
	idleArmed bool
	stopped   bool
}

func (w *world) newMember(idx int) *member {
	m := &member{w: w, idx: idx}
	m.restart()
	return m
}

// restart starts the member as a new incarnation (a new id, as matchd gets
// after a crash or an eviction).
func (m *member) restart() {
	w := m.w
	m.incarnation++
	m.name = fmt.Sprintf("m%d.%d", m.idx, m.incarnation)
	h := fnv.New64a()
	h.Write([]byte(m.name + "/" + w.matchID))
	m.score = h.Sum64()
	m.alive, m.frozen, m.inView, m.act, m.pending = true, false, true, nil, nil
	m.resume, m.busy, m.exiting = nil, false, false
	cores, err := actors.NewCores(actors.GrainDeps{
		Store: w.store, Rules: rules, Timing: w.timing, StoreTimeout: storeTimeout * time.Millisecond,
		Owner:  func() string { return m.name },
		Now:    func() time.Time { return time.UnixMilli(w.now) },
		Logger: slog.New(slog.DiscardHandler),
		Owns:   func(string) bool { return w.owner() == m },
	})
	if err != nil {
		panic(fmt.Sprintf("sim: grain deps: %v", err)) // the simulator's own setup
	}
	m.cores = cores
	w.logf("%s starts", m.name)
	w.disturb()
}

// owner is the member that owns the match in the cluster's view
// (rendezvous hashing over the members in view), nil when none is.
func (w *world) owner() *member {
	var best *member
	for _, m := range w.members {
		if m.inView && (best == nil || m.score > best.score) {
			best = m
		}
	}
	return best
}

// input runs fn on the member as one message of its mailbox: now, or when
// it thaws and its activation has its store answer; never if it is dead.
func (m *member) input(fn func()) {
	if !m.alive {
		return
	}
	m.pending = append(m.pending, fn)
	m.drain()
}

// drain runs what the member can run now: store answers first, then the
// mailbox while no store call is outstanding.
func (m *member) drain() {
	if m.draining {
		return // the outer drain gets to it
	}
	m.draining = true
	defer func() { m.draining = false }()
	for m.alive && !m.frozen {
		var fn func()
		switch {
		case len(m.resume) > 0:
			fn, m.resume = m.resume[0], m.resume[1:]
		case m.busy || len(m.pending) == 0:
			m.exitIfDone()
			return
		default:
			fn, m.pending = m.pending[0], m.pending[1:]
		}
		fn()
	}
}

// exitIfDone ends a member that thawed out of the view once its backlog is
// handled, as matchd exits when evicted; it restarts later.
func (m *member) exitIfDone() {
	if !m.exiting || m.busy || len(m.pending) > 0 || len(m.resume) > 0 {
		return
	}
	w := m.w
	m.alive, m.act, m.exiting = false, nil, false
	w.after(w.between(500, 5000), func() { m.restart(); w.viewChanged() })
}

// request delivers a request to the match's grain on this member,
// activating it first if needed; reply gets the grain's Reply.
func (m *member) request(msg any, reply func(*actors.Reply)) {
	m.input(func() {
		a := m.act
		handle := func() {
			a.lastInput = m.w.now
			m.w.logf("%s <- %s", m.name, describe(msg))
			m.step(a, a.core.Handle(msg), reply)
		}
		if a == nil || a.core.OwnedNow() {
			// The activation is a message of its own (protoactor's
			// ClusterInit), ahead of the request in the mailbox; a halted
			// one still answers the request (Unavailable). One refused
			// by the view gives way to a new one once the view names
			// this member, as in the protoactor grain.
			if a != nil {
				a.stopped = true
				a.core.Stopped()
			}
			a = &activation{core: m.cores()}
			m.act = a
			m.w.logf("%s activates", m.name)
			m.w.disturb()
			m.step(a, a.core.Activate(m.w.matchID), nil)
			if m.frozen || m.busy {
				// Next in the mailbox, after the activation's store calls.
				m.pending = append([]func(){handle}, m.pending...)
				return
			}
		}
		handle()
	})
}

// step carries out the Ready of one input and then advances the core, as
// the protoactor grain does; a Ready that waits for the store is carried
// out when the answer comes (storeCall).
func (m *member) step(a *activation, rd actors.Ready, reply func(*actors.Reply)) {
	if rd.Store != nil {
		m.storeCall(rd.Store, func(res actors.StoreResult) { m.step(a, a.core.StoreDone(res), reply) })
		return
	}
	m.carryOut(a, rd, reply)
	m.advance(a, a.core.Advance())
}

// advance carries out the Ready of Advance (the checkpoint's writes).
func (m *member) advance(a *activation, rd actors.Ready) {
	if rd.Store != nil {
		m.storeCall(rd.Store, func(res actors.StoreResult) { m.advance(a, a.core.StoreDone(res)) })
		return
	}
	m.carryOut(a, rd, nil)
}

// storeTimeout bounds one store call of a simulated grain, in ms (the
// grain's default StoreTimeout).
const storeTimeout = 5000

// storeCall makes a core's store call and gives k the answer. Most calls
// are answered within the step (their fates are outcomes: fail, lose the
// reply, stall the caller). While faults run, a call may be slow instead:
// the request reaches the store after a delay, or never; the answer comes
// back after another, or never; and if no answer is back after the store
// timeout, k gets the timeout, while the request may still land after it.
// The member's mailbox waits meanwhile, as the grain's does, but its
// timers, its peers, the players and the store go on.
func (m *member) storeCall(call *actors.StoreCall, k func(actors.StoreResult)) {
	w := m.w
	if !w.faulty() || !w.chanceS(w.faults.storeSlow) {
		res := call.Do(context.Background(), w.store)
		if w.stallNext {
			// The member stalls between the write and its answer: the
			// step goes on when it thaws, after whatever happened
			// meanwhile (another member's takeover included).
			w.stallNext = false
			m.freeze(w.between(300, 6000))
			m.resume = append(m.resume, func() { k(res) })
			return
		}
		k(res)
		return
	}
	c := *call // the core reuses its call once it has an answer, the timeout included
	m.callID++
	m.busy = true
	id, inc := m.callID, m.incarnation
	answer := func(res actors.StoreResult) {
		if !m.alive || m.incarnation != inc || !m.busy || m.callID != id {
			return // too late: the timeout answered, or the member is gone
		}
		m.busy = false
		w.disturb()
		m.resume = append(m.resume, func() { k(res) })
		m.drain()
	}
	there, back := w.storeLatency(), w.storeLatency()
	w.logf("%s: %s call %d slow (%d ms there, %d ms back)", m.name, c.Op, id, there, back)
	w.slowCalls++
	gaveUp := false
	w.disturb()
	w.after(storeTimeout, func() {
		if m.busy && m.callID == id && m.incarnation == inc {
			w.logf("%s: %s call %d times out", m.name, c.Op, id)
			w.timedOut++
			gaveUp = true
			if c.Op == actors.StoreReadLog {
				w.logReadFailed = true
			}
		}
		answer(actors.StoreResult{Err: fmt.Errorf("sim store %s: %w", c.Op, context.DeadlineExceeded)})
	})
	if there < 0 {
		w.logf("%s: %s call %d lost on its way", m.name, c.Op, id)
		return
	}
	w.after(there, func() {
		w.logf("%s: %s call %d reaches the store", m.name, c.Op, id)
		res := c.Do(context.Background(), w.store)
		if gaveUp && res.Err == nil && c.Op != actors.StoreClaim && c.Op != actors.StoreReadLog {
			w.logf("%s: %s call %d lands after its caller gave up on it", m.name, c.Op, id)
			w.lateWrites++
		}
		if w.stallNext {
			w.stallNext = false
			if m.alive && m.incarnation == inc && !m.frozen {
				m.freeze(w.between(300, 6000))
			}
		}
		if back < 0 {
			w.logf("%s: %s call %d answer lost", m.name, c.Op, id)
			return
		}
		w.after(back, func() { answer(res) })
	})
}

// storeLatency is one way of a slow store call in ms, or -1 when the
// message is lost: up to 3.6 s, or (one in ten) 7.2 to 8 s, past the
// store timeout, so that a request may land after its caller gave up.
func (w *world) storeLatency() int64 {
	if w.srng.Float64() < 0.1 {
		return -1
	}
	d := 1 + w.srng.Int64N(4000)
	if d > 3600 {
		d *= 2
	}
	return d
}

// chanceS is chance on the store's stream.
func (w *world) chanceS(p float64) bool { return p > 0 && w.srng.Float64() < p }

// carryOut does what a Ready asks, as the protoactor grain does.
func (m *member) carryOut(a *activation, rd actors.Ready, reply func(*actors.Reply)) {
	w := m.w
	for _, s := range rd.Sends {
		if s.To == nil {
			if reply != nil {
				r := s.Msg.(*actors.Reply)
				w.net(true, func() { reply(r) })
			}
			continue
		}
		w.push(a, s.To, s.Msg)
	}
	if rd.IdleStop && !a.idleArmed {
		a.idleArmed = true
		m.armIdle(a)
	}
	if rd.Stop {
		if rd.Halt != actors.HaltNone {
			w.logf("%s halts: %s", m.name, rd.Halt)
			w.disturb()
		}
		a.stopped = true
		a.core.Stopped()
		if m.act == a {
			m.act = nil
		}
		return
	}
	if rd.Tick {
		a.timerGen++
		gen := a.timerGen
		w.after(rd.TickIn.Milliseconds(), func() {
			m.input(func() {
				if m.act != a || a.stopped || a.timerGen != gen {
					return
				}
				m.step(a, a.core.Tick(), nil)
			})
		})
	}
}

// armIdle is protoactor's receive timeout: Idle after IdleStop without input.
func (m *member) armIdle(a *activation) {
	w := m.w
	due := a.lastInput + w.timing.IdleStop.Milliseconds()
	w.after(max(due-w.now, 1), func() {
		m.input(func() {
			if m.act != a || a.stopped {
				return
			}
			if w.now-a.lastInput < w.timing.IdleStop.Milliseconds() {
				m.armIdle(a)
				return
			}
			m.carryOut(a, a.core.Idle(), nil)
		})
	})
}

// push delivers a grain's message to the player connection at pid. The
// pushes of one activation to one connection keep their order, as
// protoactor's do (one sender, one endpoint), whatever their delays.
func (w *world) push(a *activation, pid *actor.PID, msg any) {
	seat := 0
	if strings.HasPrefix(pid.Id, "p1") {
		seat = 1
	}
	p := w.players[seat]
	d := w.between(1, 20)
	if w.faulty() && w.chance(w.faults.slow) {
		d = w.between(20, 1500)
	}
	k := fifoKey{a, pid.Id}
	at := max(w.now+d, w.fifo[k])
	w.fifo[k] = at
	w.after(at-w.now, func() { p.onPush(pid.Id, msg) })
}

type fifoKey struct {
	a    *activation
	conn string
}

// crash kills a member: its activation's memory is gone; the cluster
// notices after the failure detection time.
func (m *member) crash() {
	w := m.w
	w.logf("%s crashes", m.name)
	w.disturb()
	m.alive, m.act, m.pending, m.resume, m.busy, m.exiting = false, nil, nil, nil, false, false
	w.after(2000, func() { m.leaveView() })
	w.after(w.between(3000, 20000), func() { m.restart(); w.viewChanged() })
}

// freeze stalls a member for d ms: it keeps its state and handles what
// reached it meanwhile when it thaws. A stall longer than the failure
// detection time gets it declared dead; it then exits, as matchd does when
// evicted, after handling its backlog.
func (m *member) freeze(d int64) {
	w := m.w
	w.logf("%s freezes for %dms", m.name, d)
	w.disturb()
	m.frozen = true
	inc := m.incarnation
	if d > 2000 {
		w.after(2000, func() {
			if m.incarnation == inc {
				m.leaveView()
			}
		})
	}
	w.after(d, func() {
		if m.incarnation != inc || !m.alive {
			return
		}
		m.frozen = false
		w.logf("%s thaws with %d inputs", m.name, len(m.pending)+len(m.resume))
		w.disturb()
		m.exiting = !m.inView
		m.drain()
	})
}

func (m *member) leaveView() {
	if m.inView {
		m.inView = false
		m.w.logf("%s leaves the view", m.name)
		m.w.disturb()
		m.w.viewChanged()
	}
}

// viewChanged runs the reclaimers a second after a topology change.
func (w *world) viewChanged() {
	w.after(1000, w.reclaim)
}

// reclaim is the orphan reclaimer of every member: the owner in the view
// wakes the unfinished match if it is not active there.
func (w *world) reclaim() {
	_, _, finished := w.store.record(w.matchID)
	m := w.owner()
	if finished || m == nil || !m.alive || m.frozen || m.act != nil {
		return
	}
	w.logf("%s reclaims", m.name)
	m.request(&actors.Wake{}, nil)
}

// sweep runs the periodic reclaim, every 30 s ± 20 %.
func (w *world) sweep() {
	w.reclaim()
	w.after(w.between(24000, 36000), w.sweep)
}

// chaos injects one member fault now and then while faults run.
func (w *world) chaos() {
	if !w.faulty() {
		return
	}
	m := w.members[w.rng.IntN(len(w.members))]
	if m.alive && !m.frozen {
		switch {
		case w.faults.crash && w.chance(0.5):
			m.crash()
		case w.faults.freeze:
			m.freeze(w.between(300, 6000))
		}
	}
	w.after(w.between(5000, 40000), w.chaos)
}

// storeFate is the store's fault function.
func (w *world) storeFate(op string) Fate {
	f := w.pickFate(op)
	if op == "ReadLog" && f == Fail {
		w.logReadFailed = true
	}
	return f
}

func (w *world) pickFate(op string) Fate {
	if !w.faulty() {
		return Ok
	}
	if w.now < w.faults.outageUntil {
		w.disturb()
		return Fail
	}
	if w.chance(w.faults.outage) {
		w.faults.outageUntil = w.now + w.between(100, 3000)
		w.logf("store outage until %d", w.faults.outageUntil)
		w.disturb()
		return Fail
	}
	switch {
	case op == "Append" && w.faults.freeze && w.chance(0.01):
		w.logf("store: the appending member stalls before the answer")
		w.stallNext = true
		return Ok
	case w.chance(w.faults.storeFail):
		w.logf("store: %s fails", op)
		w.disturb()
		return Fail
	case w.chance(w.faults.storeLose):
		w.logf("store: %s loses its reply", op)
		w.disturb()
		return LoseReply
	}
	return Ok
}

// onAppend watches every entry that lands in the log: an intent already
// durable must never land again.
func (w *world) onAppend(e persistence.LogEntry) {
	r, err := actors.DecodeLogRecord(e)
	if err != nil {
		w.fail("undecodable log entry %d: %v", e.Seq, err)
		return
	}
	w.logf("store: entry %d (%s seat %d %q) lands", e.Seq, r.Kind, r.Seat, r.IntentID)
	if r.Kind != "intent" {
		return
	}
	k := intentKey{r.Seat, r.IntentID}
	if seq, ok := w.durable[k]; ok {
		w.fail("intent %q of seat %d applied twice: log entries %d and %d", r.IntentID, r.Seat, seq, e.Seq)
	}
	w.durable[k] = e.Seq
}

func describe(msg any) string {
	switch m := msg.(type) {
	case *actors.SubmitIntent:
		return fmt.Sprintf("intent seat %d %s", m.Seat, m.SessionID)
	case *actors.AttachSeat:
		return fmt.Sprintf("attach seat %d %s reattach=%v from %d", m.Seat, m.SessionID, m.Reattach, m.ResumeFromSeq)
	case *actors.SeatPing:
		return fmt.Sprintf("ping seat %d %s", m.Seat, m.SessionID)
	case *actors.ResyncSeat:
		return fmt.Sprintf("resync seat %d from %d", m.Seat, m.FromSeq)
	case *actors.DetachSeat:
		return fmt.Sprintf("detach seat %d %s", m.Seat, m.SessionID)
	case *actors.Wake:
		return "wake"
	}
	return fmt.Sprintf("%T", msg)
}
