package sim

import (
	"container/heap"
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
	seed   uint64
	rng    *rand.Rand
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
	// pending holds the inputs that reached the member while it was frozen.
	pending []func()
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
	cores, err := actors.NewCores(actors.GrainDeps{
		Store: w.store, Rules: rules, Timing: w.timing,
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
// it thaws; never if it is dead.
func (m *member) input(fn func()) {
	switch {
	case !m.alive:
	case m.frozen:
		m.pending = append(m.pending, fn)
	default:
		fn()
	}
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
		if a == nil {
			// The activation is a message of its own (protoactor's
			// ClusterInit), ahead of the request in the mailbox; a halted
			// one still answers the request (Unavailable).
			a = &activation{core: m.cores()}
			m.act = a
			m.w.logf("%s activates", m.name)
			m.step(a, a.core.Activate(m.w.matchID), nil)
			if m.frozen {
				m.pending = append(m.pending, handle)
				return
			}
		}
		handle()
	})
}

// step carries out the Ready of one input and then advances the core, as
// the protoactor grain does, unless the store stalled the member inside
// the step (an append that landed, its answer not yet back): then the
// member freezes with the step's effects still to come, and they follow
// when it thaws, after whatever happened meanwhile (another member's
// takeover included).
func (m *member) step(a *activation, rd actors.Ready, reply func(*actors.Reply)) {
	w := m.w
	if !w.stallNext {
		m.carryOut(a, rd, reply)
		m.carryOut(a, a.core.Advance(), nil)
		return
	}
	w.stallNext = false
	rd.Sends = slices.Clone(rd.Sends) // the core reuses its slice
	m.freeze(w.between(300, 6000))
	m.pending = append([]func(){func() {
		m.carryOut(a, rd, reply)
		m.carryOut(a, a.core.Advance(), nil)
	}}, m.pending...)
}

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
	m.alive, m.act, m.pending = false, nil, nil
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
		w.logf("%s thaws with %d inputs", m.name, len(m.pending))
		for len(m.pending) > 0 && m.alive {
			fn := m.pending[0]
			m.pending = m.pending[1:]
			fn()
		}
		if !m.inView {
			m.alive, m.act = false, nil
			w.after(w.between(500, 5000), func() { m.restart(); w.viewChanged() })
		}
	})
}

func (m *member) leaveView() {
	if m.inView {
		m.inView = false
		m.w.logf("%s leaves the view", m.name)
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
	if !w.faulty() {
		return Ok
	}
	if w.now < w.faults.outageUntil {
		return Fail
	}
	if w.chance(w.faults.outage) {
		w.faults.outageUntil = w.now + w.between(100, 3000)
		w.logf("store outage until %d", w.faults.outageUntil)
		return Fail
	}
	switch {
	case op == "Append" && w.faults.freeze && w.chance(0.01):
		w.logf("store: the appending member stalls before the answer")
		w.stallNext = true
		return Ok
	case w.chance(w.faults.storeFail):
		w.logf("store: %s fails", op)
		return Fail
	case w.chance(w.faults.storeLose):
		w.logf("store: %s loses its reply", op)
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
