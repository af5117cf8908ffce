package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/actors/internal/mutate"
	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// The match session logic is a state machine, Core, in the manner of
// etcd-io/raft's Step and Ready: it takes one input at a time (an
// activation, a request from a seat, a timer, an idle timeout) and returns
// a Ready saying what must happen: the messages for seats and the reply in
// the order they must leave, when the next tick is due, whether the
// activation ends and why. It starts no goroutine, arms no timer and sends
// nothing itself; grain (grain.go) carries a Ready out with protoactor, and
// the simulator (actors/sim) with its virtual network and clock.
//
// It reaches outside itself only through the clock, GrainDeps.Now, and
// through its host for the store: a step that needs the store returns a
// Ready with only Store set, and goes on when the host gives the answer
// back with StoreDone (storecall.go). A step's sends, timers and stop are
// in the Ready that ends it, after its last store answer, so nothing is
// sent before the append it depends on succeeded (docs/architecture.md §3).
// A simulated store, network and clock make a core fully deterministic.

// Ready is what one step of a core asks its host to do. When Store is set,
// nothing else is: the host makes that store call and gives its answer to
// StoreDone before any other input of the core, and the step goes on.
// Otherwise the step is over, and the host does, in this order: deliver
// Sends in order (To nil is the reply to the request's sender, if it has
// one), arm the tick timer when Tick is set, arm the idle stop when
// IdleStop is set, and stop the activation when Stop is set. Then the host
// calls Advance, which writes the checkpoint a step found due.
type Ready struct {
	// Store is the store call the step waits for (nil: the step is over).
	// It points into the core and is valid until StoreDone.
	Store *StoreCall
	Sends []Send
	// Tick is set when the next tick is due in TickIn (at least 1 ms).
	Tick   bool
	TickIn time.Duration
	// IdleStop arms the idle stop: an idle input after Timing.IdleStop
	// without requests.
	IdleStop bool
	// Stop ends the activation (a halt, or an idle finished match); Halt
	// says why when it was a halt.
	Stop bool
	Halt HaltReason
}

// Send is one message a step sends: to a seat's PID, or, with To nil, the
// reply to the request being handled.
type Send struct {
	To  *actor.PID
	Msg any
}

// attachment is one seat's live connection, as the PID of a seat on some edge.
type attachment struct {
	pid       *actor.PID
	sessionID string
	lastSeen  int64
	// ticketExpiresMs is the expiry of the ticket the connection opened
	// with: a later ticket was issued later, so it orders takeovers.
	ticketExpiresMs int64
}

type grainState int

const (
	stateLoading grainState = iota
	stateRunning
	stateNotFound
	stateStopped // fenced or broken: never answers again
	stateRefused // pinned to rules this member does not run: says so until it passivates
	// stateNotOwner: another member owned the match in this member's view
	// when the activation came; it says so until it passivates, or until
	// the view names this member and the host starts a new activation
	// (OwnedNow).
	stateNotOwner
)

// Core is the state of one activation of a match and its logic (see
// Ready). It is not safe for concurrent use: its host gives it one input at
// a time.
type Core struct {
	deps  *GrainDeps
	id    string
	log   *slog.Logger
	state grainState
	epoch int64

	meta    matchMeta
	engine  Engine
	logSeq  int64
	sinceSS int
	// checkpointDue: persist found a snapshot (and, once the match is
	// over, its finished mark) due; advance writes them after the reply.
	checkpointDue bool
	clock         decisionClock
	absent        absence
	// names are the names guests chose for their seats (NameSeat), durable
	// via the log; "" leaves meta's.
	names [2]string
	// journal holds accepted intents by seat and id (durable via the log).
	journal intentJournal
	// rejected remembers rejections so a re-sent id answers the same way;
	// it is memory only: a rejection changed nothing worth persisting.
	rejected map[journalKey]protocol.ServerIntentResult
	// recent holds the latest Timing.ResumeWindow events or a few more
	// (keepEvents); older ones are rebuilt from the durable log when a
	// resume needs them.
	recent eventJournal
	// everyEvent, when set (ReplayMatch), collects every event as well.
	everyEvent *[]protocol.EventEnvelope

	refusal string // why the activation was refused (stateRefused)

	seats [2]*attachment
	// spectators are the attached spectators' connections by session id
	// (spectators.go); nil until the first one.
	spectators map[string]*attachment
	// specShown and specPending are the delayed spectators' horizon and
	// the batches after it (spectators.go).
	specShown     int64
	specPending   []specBatch
	lastClockSent int64
	// botStuckAt is the log position at which a bot seat failed to act
	// (memory only: a new activation tries again once).
	botStuckAt int64

	// rd collects the current step's actions; its Sends slice is reused
	// from step to step (the host is done with it when it calls the next).
	rd Ready
	// await, when set, is the rest of the step, waiting for the answer to
	// call, made since callStart.
	await     func(StoreResult)
	call      StoreCall
	callStart time.Time
}

type journalKey struct {
	seat int
	id   string
}

const maxRejectedRemembered = 4096

// newCore returns a core for deps, not yet activated.
func newCore(deps *GrainDeps) *Core {
	return &Core{deps: deps, journal: intentJournal{}, rejected: map[journalKey]protocol.ServerIntentResult{}}
}

// begin starts a step: the previous step's Ready was carried out. An input
// while a store call is outstanding is a bug of the host, which must hold
// it (see Ready).
func (g *Core) begin() {
	if g.await != nil {
		panic(fmt.Sprintf("actors: match %q got an input while its %v call was outstanding", g.id, g.call.Op))
	}
	g.rd = Ready{Sends: g.rd.Sends[:0]}
}

// ready is what the step asks for so far: its store call, if it waits for
// one, or else everything it did.
func (g *Core) ready() Ready {
	if g.await != nil {
		return Ready{Store: &g.call}
	}
	return g.rd
}

// store ends the step's current stretch with call; k goes on with the step
// when the answer comes (StoreDone). The caller returns right after.
func (g *Core) store(call StoreCall, k func(StoreResult)) {
	g.call, g.await, g.callStart = call, k, time.Now()
}

// StoreDone is the answer to the store call of the last Ready (its Store):
// the step that made the call goes on.
func (g *Core) StoreDone(res StoreResult) Ready {
	k := g.await
	if k == nil {
		panic(fmt.Sprintf("actors: match %q got a store answer it did not ask for", g.id))
	}
	g.await = nil
	k(res)
	return g.ready()
}

// movingReply is the answer of an activation that is going away, to a
// request meant for the match's next activation (the core's once it has
// halted, its mailbox's once it is stopping).
func movingReply() *Reply {
	return &Reply{Code: ReplyUnavailable, Message: movingMessage}
}

// movingMessage is movingReply's message.
const movingMessage = "match is moving"

// OwnedNow reports whether this activation, refused because another
// member owned its match in this member's view (it answers Reply.NotOwner
// meanwhile), now finds this member the owner (GrainDeps.Owns): its host
// then starts a new activation, a new Core and Activate, for the request at
// hand.
func (g *Core) OwnedNow() bool {
	return g.state == stateNotOwner && g.deps.Owns(g.id)
}

// Awaiting reports whether the core waits for a store answer (StoreDone).
func (g *Core) Awaiting() bool { return g.await != nil }

// Activate is the first input of an activation: it claims matchID
// (fencing every older activation) and rebuilds its state.
func (g *Core) Activate(matchID string) Ready {
	g.begin()
	g.activate(matchID)
	return g.ready()
}

// Handle is a request from a seat, the gateway or the reclaimer: the value
// carried by an envelope.Msg.
func (g *Core) Handle(msg any) Ready {
	g.begin()
	g.onMessage(msg)
	return g.ready()
}

// Tick is the timer the previous Ready asked for.
func (g *Core) Tick() Ready {
	g.begin()
	g.onTick()
	return g.ready()
}

// Idle is the idle stop the previous Ready asked for, after
// Timing.IdleStop without requests: a finished match, or one that is not
// running, ends.
func (g *Core) Idle() Ready {
	g.begin()
	if g.state != stateRunning || g.engine.IsFinished() {
		g.rd.Stop = true
	}
	return g.rd
}

// Advance writes the checkpoint a step found due (docs/architecture.md §3,
// step 7). The host calls it once the step's Ready is carried out, so
// neither write delays a reply or a frame.
func (g *Core) Advance() Ready {
	g.begin()
	g.checkpoint()
	return g.ready()
}

// Stopped is the end of the activation, however it came (the host stops
// it after a Ready with Stop, or for its own reasons).
func (g *Core) Stopped() {
	if g.deps.Metrics != nil && g.state == stateRunning {
		g.deps.Metrics.ActiveGrains.Add(-1)
	}
}

// send queues msg for the seat at pid.
func (g *Core) send(pid *actor.PID, msg any) {
	g.rd.Sends = append(g.rd.Sends, Send{To: pid, Msg: msg})
}

func (g *Core) now() int64 { return g.deps.Now().UnixMilli() }

// activate claims the match (fencing every older activation) and rebuilds
// its state from snapshot + log tail.
func (g *Core) activate(id string) {
	g.id = id
	g.log = g.deps.Logger.With("match", id)
	g.journal = intentJournal{}
	g.rejected = map[journalKey]protocol.ServerIntentResult{}
	if g.deps.MayActivate != nil {
		if err := g.deps.MayActivate(); err != nil {
			g.log.Warn("activation refused", "reason", err)
			g.halt(HaltActivationRefused)
			return
		}
	}
	if g.deps.Owns != nil && !g.deps.Owns(id) {
		// A caller routed by a view that differs from this member's; it
		// retries and finds the owner once the views agree. The activation
		// stays and answers so rather than halt: while the views differ,
		// every caller routed here retries every 10 to 20 ms, and a halt
		// per request would spawn and stop an actor for each.
		g.log.Info("activation refused: another member owns the match in this member's view")
		g.state = stateNotOwner
		g.rd.IdleStop = true
		return
	}
	started := time.Now()
	g.store(StoreCall{Op: StoreClaim, MatchID: id, Owner: g.deps.Owner()}, func(res StoreResult) {
		g.claimed(res.Recovery, res.Err, started)
	})
}

// claimed goes on with an activation once its claim is answered.
func (g *Core) claimed(rec persistence.Recovery, err error, started time.Time) {
	if errors.Is(err, persistence.ErrMatchNotFound) {
		g.state = stateNotFound
		g.rd.IdleStop = true
		return
	}
	if err != nil {
		g.log.Error("claim failed", "err", err)
		g.halt(HaltClaimFailed)
		return
	}
	claimed := time.Now()
	rebuild, err := g.recoverSnapshot(rec)
	if err != nil {
		g.recoveryFailed(rec.Epoch, err)
		return
	}
	if !rebuild {
		g.recovered(rec, started, claimed)
		return
	}
	// A running match resumed from a snapshot: its seats may resume from
	// before it, so the journal is rebuilt from the log first.
	snapLogSeq, snapEventSeq := rec.Snapshot.Seq, g.engine.LastSeq()
	g.readLog(snapLogSeq, snapEventSeq, func(evs []protocol.EventEnvelope, err error) {
		g.rebuildJournal(snapLogSeq, snapEventSeq, evs, err)
		g.recovered(rec, started, claimed)
	})
}

// recoveryFailed ends an activation whose claimed record could not be rebuilt.
func (g *Core) recoveryFailed(epoch int64, err error) {
	if errors.Is(err, ErrVersionMismatch) {
		// Nothing was written; the claim only bumped the epoch. The match
		// waits for a member that runs its rules (a rolling upgrade moves it
		// there), and answers every request with the reason meanwhile.
		g.log.Error("activation refused", "epoch", epoch, "reason", err)
		g.state, g.refusal = stateRefused, err.Error()
		g.rd.IdleStop = true
		return
	}
	g.log.Error("recovery failed", "epoch", epoch, "err", err)
	g.halt(HaltRecoveryFailed)
}

// recovered replays the claimed log tail and starts serving.
func (g *Core) recovered(rec persistence.Recovery, started, claimed time.Time) {
	if err := g.recoverTail(rec); err != nil {
		g.recoveryFailed(rec.Epoch, err)
		return
	}
	id := g.id
	g.state = stateRunning
	if g.deps.Metrics != nil {
		g.deps.Metrics.ActiveGrains.Add(1)
		if g.epoch > 1 && !g.engine.IsFinished() {
			g.deps.Metrics.addTakeover(Takeover{MatchID: id, Epoch: g.epoch, At: time.Now(), LogSeq: g.logSeq,
				RecoveryMs: time.Since(started).Milliseconds()})
		}
	}
	now := g.now()
	// Connections do not survive an activation change: a seat the log
	// thinks present is absent from now until its edge re-attaches.
	for s := range 2 {
		if g.absent.Since[s] == 0 && !g.isBot(s) {
			g.absent.Since[s] = now
		}
	}
	// The claim's and the rebuild's times say where a failover's herd
	// spends the store's and the member's time (docs/performance.md).
	g.log.Info("match activated", "epoch", g.epoch, "log_seq", g.logSeq, "event_seq", g.engine.LastSeq(),
		"finished", g.engine.IsFinished(), "claim_ms", ms(claimed.Sub(started)), "rebuild_ms", ms(time.Since(claimed)))
	if g.engine.IsFinished() {
		// A match whose last entry ended it but whose finished mark never
		// landed (its activation died in between, or the mark failed) is
		// still listed as unfinished, and the reclaimer would wake it
		// again and again: mark it now.
		g.checkpointDue = !rec.Finished
		g.rd.IdleStop = true
	}
	g.startSpectatorHorizon(now, func() {
		if mutate.Planted == mutate.DropReactivationTimer || g.state != stateRunning {
			return
		}
		g.onTick() // overdue deadlines fire at once
	})
}

// recover rebuilds the state of rec without the store: ReplayMatch's
// rebuild. Its resume journal starts at the snapshot.
func (g *Core) recover(rec persistence.Recovery) error {
	if _, err := g.recoverSnapshot(rec); err != nil {
		return err
	}
	return g.recoverTail(rec)
}

// recoverSnapshot rebuilds the state up to the tail of rec: from its
// snapshot, or from the match's creation. rebuild says the match is running
// from a snapshot, whose resume journal the log up to it should fill.
func (g *Core) recoverSnapshot(rec persistence.Recovery) (rebuild bool, err error) {
	g.epoch = rec.Epoch
	if err := decodeInternal(rec.Meta, &g.meta); err != nil {
		return false, fmt.Errorf("match meta: %w", err)
	}
	if want := RulesVersion(g.deps.Rules); g.meta.Version != "" && want != "" && g.meta.Version != want {
		return false, fmt.Errorf("%w: the match is pinned to %s, this member runs %s", ErrVersionMismatch, g.meta.Version, want)
	}
	if rec.Snapshot != nil {
		var ss grainSnapshot
		if err := decodeInternal(rec.Snapshot.Data, &ss); err != nil {
			return false, fmt.Errorf("snapshot: %w", err)
		}
		journal, err := ss.journal()
		if err != nil {
			return false, fmt.Errorf("snapshot at log seq %d: %w", rec.Snapshot.Seq, err)
		}
		eng, err := g.deps.Rules.Restore(ss.Engine)
		if err != nil {
			return false, fmt.Errorf("restore engine at log seq %d: %w", rec.Snapshot.Seq, err)
		}
		g.engine, g.clock, g.absent, g.names, g.logSeq, g.journal = eng, ss.Clock, ss.Absent, ss.Names, rec.Snapshot.Seq, journal
		g.recent.reset(eng.LastSeq() + 1)
		// A finished match is woken more often (to mark it finished, by a
		// stray hello) than resumed from before its snapshot: such a resume
		// replays the log then (eventsFrom), which retention may have pruned.
		return !eng.IsFinished(), nil
	}
	eng, evs, err := g.deps.Rules.New(g.meta.Seed, g.meta.Decks)
	if err != nil {
		return false, fmt.Errorf("set up match: %w", err)
	}
	g.engine = eng
	g.recent.reset(1)
	g.keepEvents(evs)
	g.clock = newDecisionClock(eng.Decider(), g.meta.CreatedAt, g.meta.Guests, g.deps.Timing)
	g.absent = absence{Since: [2]int64{g.meta.CreatedAt, g.meta.CreatedAt}}
	for s := range 2 {
		if g.isBot(s) {
			g.absent.Since[s] = 0 // a bot is never away
		}
	}
	return false, nil
}

// recoverTail applies the log tail of rec after recoverSnapshot.
func (g *Core) recoverTail(rec persistence.Recovery) error {
	for _, le := range rec.Tail {
		var e logEntry
		if err := decodeInternal(le.Payload, &e); err != nil {
			return fmt.Errorf("log entry %d: %w", le.Seq, err)
		}
		if le.Seq != g.logSeq+1 {
			return fmt.Errorf("log gap: entry %d after %d", le.Seq, g.logSeq)
		}
		evs, err := g.apply(e)
		if err != nil {
			return fmt.Errorf("replay log entry %d: %w", le.Seq, err)
		}
		g.keepEvents(evs)
		g.logSeq = le.Seq
	}
	return nil
}

// keepEvents adds a batch to the in-memory event journal and trims it to
// Timing.ResumeWindow. A finished match keeps its window too: a seat that
// resumes after the end gets the last events, GameFinished among them
// (docs/protocol.md §9.8). An event that cannot be encoded (a bug) empties
// the journal: resumes from before it then replay the log or get a snapshot.
func (g *Core) keepEvents(evs []protocol.EventEnvelope) {
	if g.everyEvent != nil {
		*g.everyEvent = append(*g.everyEvent, evs...)
	}
	if err := g.recent.add(evs); err != nil {
		g.log.Error("keep events for resumes", "err", err)
		g.recent.reset(g.engine.LastSeq() + 1)
	}
	g.recent.trim(g.deps.Timing.ResumeWindow)
}

// eventsFrom gives k the events from fromSeq to the last seq: from the
// journal, or else (a resuming hello from before the journal) rebuilt by
// replaying the durable log on a scratch activation. ok is false when they
// cannot be had: the caller sends a snapshot instead.
func (g *Core) eventsFrom(fromSeq int64, k func(evs []protocol.EventEnvelope, ok bool)) {
	evs, err := g.recent.since(fromSeq)
	if err == nil {
		k(evs, true)
		return
	}
	if !errors.Is(err, errNotJournaled) {
		g.log.Error("read events kept for resumes", "from_seq", fromSeq, "err", err)
	}
	g.readLog(g.logSeq, g.engine.LastSeq(), func(all []protocol.EventEnvelope, err error) {
		if err != nil {
			g.log.Warn("resume events not rebuilt from the log: snapshot instead", "from_seq", fromSeq, "err", err)
			k(nil, false)
			return
		}
		if g.deps.Metrics != nil {
			g.deps.Metrics.JournalRebuilds.Add(1)
		}
		k(all[fromSeq-1:], true)
	})
}

// apply runs one log entry against the engine and the clocks. It is the only
// place state changes, live and on replay alike.
func (g *Core) apply(e logEntry) ([]protocol.EventEnvelope, error) {
	switch e.Kind {
	case entryIntent:
		f, err := protocol.DecodeClientFrame(e.Frame)
		if err != nil {
			return nil, fmt.Errorf("decode intent %q: %w", e.IntentID, err)
		}
		ci, ok := f.(*protocol.ClientIntent)
		if !ok || ci.Intent == nil {
			return nil, fmt.Errorf("log entry holds %T, not an intent", f)
		}
		evs, err := g.applyIntent(e, ci.Intent)
		if err != nil {
			return nil, fmt.Errorf("engine rejected logged intent %q: %w", e.IntentID, err)
		}
		return evs, nil
	case entryFinish:
		evs := g.engine.Finish(e.Loser, protocol.FinishReason(e.Reason))
		g.afterChange(e.At)
		return evs, nil
	case entryPresence:
		if e.Seat < 0 || e.Seat > 1 {
			return nil, fmt.Errorf("presence for seat %d", e.Seat)
		}
		if e.Present {
			g.absent.Since[e.Seat] = 0
			g.clock.joined(e.Seat, e.At)
		} else {
			g.absent.Since[e.Seat] = e.At
		}
		return nil, nil
	case entryName:
		if e.Seat < 0 || e.Seat > 1 || e.Name == "" {
			return nil, fmt.Errorf("name %q for seat %d", e.Name, e.Seat)
		}
		g.names[e.Seat] = e.Name
		return nil, nil
	}
	return nil, fmt.Errorf("unknown log entry kind %d", e.Kind)
}

// applyIntent runs an intent (Concede is the server's: it finishes the
// match); an error is the engine's rejection and changed nothing.
func (g *Core) applyIntent(e logEntry, in protocol.Intent) ([]protocol.EventEnvelope, error) {
	var evs []protocol.EventEnvelope
	if _, concede := in.(protocol.Concede); concede {
		evs = g.engine.Finish(e.Seat, protocol.FinishConceded)
	} else {
		var err error
		if evs, err = g.engine.Execute(e.Seat, in); err != nil {
			return nil, err
		}
	}
	g.journal.add(e.Seat, e.IntentID, g.engine.LastSeq())
	g.afterChange(e.At)
	return evs, nil
}

func (g *Core) afterChange(at int64) {
	if g.engine.IsFinished() {
		g.clock.stop(at, g.deps.Timing)
		return
	}
	g.clock.restart(g.engine.Decider(), at, g.deps.Timing)
}

// commit applies a server-side entry (finish, presence) and makes it
// durable; k gets its events and whether it is durable.
func (g *Core) commit(e logEntry, k func(evs []protocol.EventEnvelope, ok bool)) {
	evs, err := g.apply(e)
	if err != nil {
		g.log.Error("apply server command", "kind", int(e.Kind), "err", err)
		g.halt(HaltApplyFailed)
		k(nil, false)
		return
	}
	g.persist(e, evs, func(ok bool) { k(evs, ok) })
}

// persist appends an entry that is already applied in memory; k learns
// whether it is durable. Nothing is sent to any seat before it is. On a
// store failure the activation cannot know whether the write landed, and
// its memory is ahead of what it can prove durable, so it halts and a fresh
// activation rebuilds from the log.
func (g *Core) persist(e logEntry, evs []protocol.EventEnvelope, k func(ok bool)) {
	payload, err := encodeLogEntry(e)
	if err != nil {
		g.log.Error("encode log entry", "err", err)
		g.halt(HaltEncodeFailed)
		k(false)
		return
	}
	g.store(StoreCall{Op: StoreAppend, MatchID: g.id, Epoch: g.epoch,
		Entries: []persistence.LogEntry{{Seq: g.logSeq + 1, Payload: payload}}}, func(res StoreResult) {
		err := res.Err
		if g.deps.Metrics != nil {
			g.deps.Metrics.observeAppend(time.Since(g.callStart), err)
		}
		g.deps.Metrics.observeFenced(err)
		if err != nil && mutate.Planted == mutate.TimeoutCountsAsAppended && errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
		if err != nil {
			if errors.Is(err, persistence.ErrFenced) {
				g.log.Warn("fenced: a newer activation owns this match", "epoch", g.epoch)
			} else {
				g.log.Error("append failed", "log_seq", g.logSeq+1, "err", err)
			}
			g.halt(appendHaltReason(err))
			k(false)
			return
		}
		g.logSeq++
		g.keepEvents(evs)
		g.sinceSS++
		if g.sinceSS >= g.deps.Timing.SnapshotEvery || g.engine.IsFinished() {
			g.checkpointDue = true
		}
		k(true)
	})
}

// checkpoint writes the snapshot and the finished mark that persist found
// due. Receive calls it once the message is fully handled, so the result,
// the events and the reply are already on their way: neither write is part
// of any acknowledgement (the appended entry is what makes an intent
// durable; a snapshot only shortens the next recovery, and an unmarked
// finished match is reclaimed, replayed and marked by its next activation),
// so a player should not wait for them. Every 32nd intent used to pay a
// second round trip to PostgreSQL, and the match's last one two more, before
// its result left.
func (g *Core) checkpoint() {
	if !g.checkpointDue || g.state != stateRunning {
		return
	}
	g.checkpointDue = false
	g.snapshot(func() {
		if g.state != stateRunning || !g.engine.IsFinished() {
			return
		}
		g.store(StoreCall{Op: StoreMarkFinished, MatchID: g.id, Epoch: g.epoch}, func(res StoreResult) {
			g.deps.Metrics.observeFenced(res.Err)
			if res.Err != nil && !errors.Is(res.Err, persistence.ErrFenced) {
				g.log.Warn("mark finished", "err", res.Err)
			}
			g.rd.IdleStop = true
		})
	})
}

// snapshot saves the state as a snapshot at the current log seq; k runs
// after, whether it was saved or not.
func (g *Core) snapshot(k func()) {
	state, err := g.engine.MarshalState()
	if err != nil {
		g.log.Error("marshal engine state", "err", err)
		k()
		return
	}
	ss := newSnapshot(state, g.clock, g.absent, g.names, g.journal)
	data, err := encodeInternal(ss)
	if err != nil {
		g.log.Error("encode snapshot", "err", err)
		k()
		return
	}
	g.store(StoreCall{Op: StoreSaveSnapshot, MatchID: g.id, Epoch: g.epoch,
		Snapshot: persistence.Snapshot{Seq: g.logSeq, Data: data}}, func(res StoreResult) {
		if err := res.Err; err != nil {
			g.deps.Metrics.observeFenced(err)
			if errors.Is(err, persistence.ErrFenced) {
				g.halt(HaltFenced)
			} else {
				// A missing snapshot only lengthens the next recovery.
				g.log.Warn("save snapshot", "log_seq", g.logSeq, "err", err)
			}
		} else {
			g.sinceSS = 0
		}
		k()
	})
}

// halt stops this activation for good: it drops its state and never serves
// again. Requests already in its mailbox are answered Unavailable before it
// stops (a poison pill, not a stop), and those that arrive after the pill by
// the grain's mailbox (stoppingMailbox), so their callers retry on the
// activation that owns the match now; seats re-attach there.
func (g *Core) halt(reason HaltReason) {
	if g.state == stateRunning && g.deps.Metrics != nil {
		g.deps.Metrics.ActiveGrains.Add(-1)
	}
	g.deps.Metrics.observeHalt(reason)
	if g.log != nil {
		g.log.Info("activation halted", "halt_reason", reason.String(), "epoch", g.epoch, "log_seq", g.logSeq)
	}
	g.state = stateStopped
	g.spectators = nil
	for s, a := range g.seats {
		if a != nil {
			// No SeatDetached: the edge seat's keep-alive finds the new
			// activation and re-attaches without the client noticing.
			g.seats[s] = nil
		}
	}
	g.engine = nil
	g.recent = eventJournal{}
	g.rd.Stop, g.rd.Halt, g.rd.Tick = true, reason, false
}

// respond queues the reply to the request being handled (dropped by the
// host when the request has no sender).
func (g *Core) respond(r *Reply) {
	if g.engine != nil {
		r.LastSeq = g.engine.LastSeq()
	}
	r.Epoch = g.epoch
	g.rd.Sends = append(g.rd.Sends, Send{Msg: r})
}

func (g *Core) onMessage(msg any) {
	switch g.state {
	case stateNotFound:
		if _, ok := msg.(*Reply); !ok {
			g.respond(&Reply{Code: ReplyNotFound, Message: "match not found"})
		}
		return
	case stateNotOwner:
		g.respond(&Reply{Code: ReplyUnavailable, Message: "not the owner in this member's view", NotOwner: true})
		return
	case stateStopped, stateLoading:
		g.respond(movingReply())
		return
	case stateRefused:
		g.respond(&Reply{Code: ReplyUnavailable, Message: g.refusal})
		return
	}
	if e := seenEpoch(msg); e > g.epoch {
		// A seat has had frames from a newer activation: one claimed the
		// match after this one, so this one's next write would be fenced,
		// and what it answers meanwhile comes from an old state (the seat
		// would even drop it, by its epoch).
		g.log.Info("superseded: a seat has seen a newer activation", "epoch", g.epoch, "seen_epoch", e)
		g.halt(HaltSuperseded)
		g.respond(movingReply())
		return
	}
	switch v := msg.(type) {
	case *Wake:
		g.respond(&Reply{Code: ReplyOK})
	case *Inspect:
		g.respond(&Reply{Code: ReplyOK, Status: g.status()})
	case *AttachSeat:
		g.onAttach(v)
	case *SubmitIntent:
		g.onIntent(v)
	case *ResyncSeat:
		g.onResync(v)
	case *DetachSeat:
		g.onDetach(v)
	case *SeatPing:
		g.onSeatPing(v)
	case *NameSeat:
		g.onNameSeat(v)
	case *envelope.Unknown:
		g.log.Warn("ignoring unknown message type", "type", v.Type)
		g.respond(&Reply{Code: ReplyBadRequest, Message: "unknown message"})
	default:
		g.log.Warn("ignoring unexpected message", "type", fmt.Sprintf("%T", v))
		g.respond(&Reply{Code: ReplyBadRequest, Message: "unexpected message"})
	}
}

// name is the display name of seat: the one its guest chose, or meta's.
func (g *Core) name(seat int) string {
	if n := g.names[seat]; n != "" {
		return n
	}
	return g.meta.Names[seat]
}

// seenEpoch is the newest activation epoch the sender of m has seen (0 if
// m carries none).
func seenEpoch(m any) int64 {
	switch v := m.(type) {
	case *AttachSeat:
		return v.SeenEpoch
	case *SubmitIntent:
		return v.SeenEpoch
	case *ResyncSeat:
		return v.SeenEpoch
	case *SeatPing:
		return v.SeenEpoch
	}
	return 0
}

// attached returns the attachment of seat (or of the spectator, seat
// protocol.SeatSpectator) if sessionID holds it.
func (g *Core) attached(seat int, sessionID string) *attachment {
	var a *attachment
	switch {
	case spectating(seat):
		a = g.spectators[sessionID]
	case seat == 0 || seat == 1:
		a = g.seats[seat]
	}
	if a == nil || a.sessionID != sessionID {
		return nil
	}
	a.lastSeen = g.now()
	return a
}

// rebuildJournal rebuilds the event journal up to the snapshot point from
// the durable log (the store keeps the entries a snapshot covers), so a
// client behind the snapshot resumes from events after a failover, not from
// a snapshot (docs/protocol.md §13). evs are the log's events (readLog),
// ending at snapEventSeq. A store that could not read its log back (err),
// or a replay that disagreed, leaves the journal starting at the snapshot;
// a resume from before it then tries the log again (eventsFrom).
func (g *Core) rebuildJournal(snapLogSeq, snapEventSeq int64, evs []protocol.EventEnvelope, err error) {
	if err != nil {
		g.log.Warn("event journal not rebuilt", "log_seq", snapLogSeq, "err", err)
		return
	}
	// Only the latest window is kept; the tail replayed next adds to it.
	g.recent.reset(max(1, snapEventSeq+1-int64(g.deps.Timing.ResumeWindow)))
	g.keepEvents(evs[g.recent.first()-1:])
}

// readLog reads log entries 1..toLogSeq, replays them on a scratch
// activation and gives k every event from seq 1; they must end at
// wantEventSeq.
func (g *Core) readLog(toLogSeq, wantEventSeq int64, k func([]protocol.EventEnvelope, error)) {
	if _, ok := g.deps.Store.(persistence.LogReader); !ok {
		k(nil, errNoLogReader)
		return
	}
	g.store(StoreCall{Op: StoreReadLog, MatchID: g.id, From: 1, To: toLogSeq}, func(res StoreResult) {
		if res.Err != nil {
			k(nil, fmt.Errorf("read log to %d: %w", toLogSeq, res.Err))
			return
		}
		k(g.replayEntries(res.Entries, toLogSeq, wantEventSeq))
	})
}

// replayEntries replays head, log entries 1..toLogSeq, on a scratch
// activation and returns every event from seq 1; they must end at
// wantEventSeq.
func (g *Core) replayEntries(head []persistence.LogEntry, toLogSeq, wantEventSeq int64) ([]protocol.EventEnvelope, error) {
	eng, evs, err := g.deps.Rules.New(g.meta.Seed, g.meta.Decks)
	if err != nil {
		return nil, fmt.Errorf("set up match: %w", err)
	}
	scratch := &Core{deps: g.deps, id: g.id, log: g.log, meta: g.meta, engine: eng,
		journal: intentJournal{},
		clock:   newDecisionClock(eng.Decider(), g.meta.CreatedAt, g.meta.Guests, g.deps.Timing)}
	for i, le := range head {
		if le.Seq != int64(i)+1 {
			return nil, fmt.Errorf("log gap: entry %d, want %d", le.Seq, i+1)
		}
		var e logEntry
		if err := decodeInternal(le.Payload, &e); err != nil {
			return nil, fmt.Errorf("log entry %d: %w", le.Seq, err)
		}
		more, err := scratch.apply(e)
		if err != nil {
			return nil, fmt.Errorf("replay log entry %d: %w", le.Seq, err)
		}
		evs = append(evs, more...)
	}
	if int64(len(head)) != toLogSeq || eng.LastSeq() != wantEventSeq || len(evs) == 0 || evs[0].Seq != 1 || evs[len(evs)-1].Seq != wantEventSeq {
		return nil, fmt.Errorf("replay disagrees: %d entries to log seq %d, event seq %d, want %d",
			len(head), toLogSeq, eng.LastSeq(), wantEventSeq)
	}
	return evs, nil
}

// ms is d in milliseconds with microseconds kept, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
