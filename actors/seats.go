package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/actors/internal/mutate"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// keepAliveMisses is how many seat keep-alives may go missing before the
// grain treats the seat's transport as gone (its edge died or lost the link).
const keepAliveMisses = 3

// consumeTicket records a first attach's ticket as used (a re-attach has
// none); k goes on with the attach, and is not called when the attach was
// answered. The seat's PID is the ticket's consumer: the same connection's
// attach, retried because its answer was lost while the match moved, finds
// its own record and goes on; any other use is refused.
func (g *Core) consumeTicket(m *AttachSeat, k func()) {
	if m.Reattach {
		k()
		return
	}
	g.store(StoreCall{Op: StoreConsumeTicket, TicketID: m.TicketID, TicketExpires: time.UnixMilli(m.TicketExpiresMs),
		Owner: m.SessionAddr + "/" + m.SessionID}, func(res StoreResult) {
		if errors.Is(res.Err, persistence.ErrTicketUsed) {
			g.respond(&Reply{Code: ReplyTicketUsed, Message: "ticket already used"})
			return
		}
		if res.Err != nil {
			g.log.Error("consume ticket", "seat", m.Seat, "err", res.Err)
			g.respond(&Reply{Code: ReplyUnavailable, Message: "store unavailable"})
			return
		}
		k()
	})
}

func (g *Core) onAttach(m *AttachSeat) {
	if spectating(m.Seat) {
		g.onAttachSpectator(m)
		return
	}
	if m.Seat < 0 || m.Seat > 1 || m.SessionID == "" || m.SessionAddr == "" {
		g.respond(&Reply{Code: ReplyBadRequest, Message: "bad seat"})
		return
	}
	if g.isBot(m.Seat) {
		g.respond(&Reply{Code: ReplyBadRequest, Message: "seat is played by a bot"})
		return
	}
	if cur := g.seats[m.Seat]; !m.Reattach && cur != nil && cur.sessionID != m.SessionID && m.TicketExpiresMs < cur.ticketExpiresMs &&
		mutate.Planted != mutate.StaleAttachTakesSeat {
		// A stale attach: its ticket was issued before the live
		// connection's, so its client already opened that newer one (it
		// gave up on this connection while a partition held the attach
		// up). Taking the seat over would cut off the live connection.
		g.respond(&Reply{Code: ReplyReplaced, Message: "seat taken by a newer connection"})
		return
	}
	g.consumeTicket(m, func() { g.attachSeat(m) })
}

// attachSeat goes on with an attach once its ticket is consumed (a first
// attach) or at once (a re-attach).
func (g *Core) attachSeat(m *AttachSeat) {
	if cur := g.seats[m.Seat]; m.Reattach && cur != nil && cur.sessionID != m.SessionID &&
		(m.TicketExpiresMs <= cur.ticketExpiresMs || mutate.Planted == mutate.StaleAttachKeepsSeat) {
		// A re-attach never overrides a live attachment that came with a
		// ticket at least as new: that is the newer connection. One with
		// an older ticket is a stale attach that reached this activation
		// before the live seat re-attached; the re-attach takes it back.
		g.respond(&Reply{Code: ReplyReplaced, Message: "seat taken by another connection"})
		return
	}
	pid := actor.NewPID(m.SessionAddr, m.SessionID)
	if old := g.seats[m.Seat]; old != nil && old.sessionID != m.SessionID {
		g.send(old.pid, &SeatDetached{Epoch: g.epoch, Reason: DetachReplaced})
	}
	g.seats[m.Seat] = &attachment{pid: pid, sessionID: m.SessionID, lastSeen: g.now(), ticketExpiresMs: m.TicketExpiresMs}
	if g.absent.Since[m.Seat] != 0 && !g.engine.IsFinished() {
		held := g.clock.held()
		g.commit(logEntry{Kind: entryPresence, At: g.now(), Seat: m.Seat, Present: true}, func(_ []protocol.EventEnvelope, ok bool) {
			if !ok {
				return
			}
			if held && !g.clock.held() {
				// The guest came: the other seat's clock runs from now, and
				// it should not learn so only at the next periodic
				// ServerClock.
				if other := g.seats[1-m.Seat]; other != nil {
					g.send(other.pid, &SeatFrames{Epoch: g.epoch, Frames: []OutFrame{g.clockFrame()}})
				}
			}
			g.greet(m, pid)
		})
		return
	}
	g.greet(m, pid)
}

// greet sends a seat that just attached where the match stands and
// answers the attach.
func (g *Core) greet(m *AttachSeat, pid *actor.PID) {
	g.absent.Since[m.Seat] = 0
	g.attachFrames(m, func(frames []OutFrame) {
		g.send(pid, &SeatFrames{Epoch: g.epoch, Initial: true, Frames: frames})
		g.respond(&Reply{Code: ReplyOK})
		g.scheduleTick()
	})
}

// attachFrames gives k the answer to an attach (a seat's or a
// spectator's): the hello unless it is a re-attach, the state (the events
// after m.ResumeFromSeq, or a snapshot) and the clock.
func (g *Core) attachFrames(m *AttachSeat, k func([]OutFrame)) {
	// A finished match resumes like a running one: a seat whose connection
	// moved (a failover, a lost link) just before the end still gets the
	// last events, GameFinished with its reason among them (docs/protocol.md §9.8).
	resumable := m.ResumeFromSeq > 0 && m.ResumeFromSeq <= g.engine.LastSeq() &&
		(mutate.Planted != mutate.FinishedAnswersSnapshot || !g.engine.IsFinished())
	if !resumable {
		k(g.helloFrames(m, false, []OutFrame{g.snapshotFrame(m.Seat)}))
		return
	}
	g.eventsFrom(m.ResumeFromSeq+1, func(evs []protocol.EventEnvelope, ok bool) {
		if !ok {
			k(g.helloFrames(m, false, []OutFrame{g.snapshotFrame(m.Seat)}))
			return
		}
		k(g.helloFrames(m, true, g.eventsFrames(m.Seat, m.ResumeFromSeq+1, g.engine.LastSeq(), evs)))
	})
}

// helloFrames puts an attach's state between the hello (unless it is a
// re-attach) and the clock.
func (g *Core) helloFrames(m *AttachSeat, resumed bool, state []OutFrame) []OutFrame {
	var frames []OutFrame
	if !m.Reattach {
		frames = append(frames, g.frame(&protocol.ServerHello{
			ProtocolVersion: protocol.Version, MatchID: g.id, PlayerIndex: m.Seat, Resumed: resumed,
			EventSeq: g.engine.LastSeq(), ServerTimeMs: g.now(),
		}, 0))
	}
	frames = append(frames, state...)
	return append(frames, g.clockFrame())
}

func (g *Core) onIntent(m *SubmitIntent) {
	a := g.attached(m.Seat, m.SessionID)
	if a == nil {
		g.respond(&Reply{Code: ReplyNotAttached, Message: "seat not attached"})
		return
	}
	if spectating(m.Seat) {
		code, msg := g.refuseSpectatorIntent(a, m)
		g.respond(&Reply{Code: code, Message: msg})
		return
	}
	// The reply comes only after the intent's outcome is settled: a write
	// that found this activation fenced answers Unavailable, so the edge
	// retries the same intent on the new activation instead of the client
	// waiting for a result that will never come.
	g.handleIntent(a, m, func(code ReplyCode, msg string) {
		g.respond(&Reply{Code: code, Message: msg})
	})
}

// handleIntent runs a seat's (or the bot's, a nil) intent; k gets the
// reply once its outcome is settled.
func (g *Core) handleIntent(a *attachment, m *SubmitIntent, k func(ReplyCode, string)) {
	ci, err := submittedIntent(m)
	if err != nil {
		// The edge validated this frame; a failure here is a bug upstream.
		g.log.Warn("undecodable intent frame from edge", "seat", m.Seat, "err", err)
		k(ReplyBadRequest, "undecodable intent frame")
		return
	}
	key := journalKey{m.Seat, ci.IntentID}
	if seq, ok := g.journal.lookup(m.Seat, ci.IntentID); ok && mutate.Planted != mutate.ApplyDuplicate {
		g.sendResult(a, protocol.ServerIntentResult{IntentID: ci.IntentID, Accepted: true, EventSeq: seq, Duplicate: true})
		k(ReplyOK, "")
		return
	}
	if r, ok := g.rejected[key]; ok && mutate.Planted != mutate.ApplyDuplicate {
		r.Duplicate = true
		g.sendResult(a, r)
		k(ReplyOK, "")
		return
	}
	if code, reason := g.precheck(m.Seat, ci); code != protocol.RejectNone {
		g.reject(a, key, ci, code, reason)
		k(ReplyOK, "")
		return
	}
	frame := m.Frame
	if frame == nil {
		if frame, err = protocol.EncodeClientFrame(ci); err != nil {
			g.log.Warn("unencodable intent", "seat", m.Seat, "err", err)
			k(ReplyBadRequest, "unencodable intent")
			return
		}
	}
	e := logEntry{Kind: entryIntent, At: g.now(), Seat: m.Seat, IntentID: ci.IntentID, Frame: frame}
	evs, err := g.applyIntent(e, ci.Intent)
	if err != nil {
		code, reason := g.deps.Rules.RejectCode(err)
		if code == protocol.RejectIllegal && ci.BasedOnSeq < g.engine.LastSeq() {
			// The client decided on an old state: it must resync (docs/protocol.md §9.15).
			code = protocol.RejectStale
		}
		g.reject(a, key, ci, code, reason)
		k(ReplyOK, "")
		return
	}
	res := protocol.ServerIntentResult{IntentID: ci.IntentID, Accepted: true, EventSeq: g.engine.LastSeq()}
	if mutate.Planted == mutate.AckBeforeAppend {
		g.broadcast(evs, m.Seat, &res, true)
	}
	g.persist(e, evs, func(ok bool) {
		if !ok {
			k(ReplyUnavailable, movingMessage)
			return
		}
		if g.deps.Metrics != nil {
			g.deps.Metrics.IntentsAccepted.Add(1)
		}
		if mutate.Planted != mutate.AckBeforeAppend {
			// Every accepted intent restarts the decision clock, so the clock goes too.
			g.broadcast(evs, m.Seat, &res, true)
		}
		k(ReplyOK, "")
	})
}

// submittedIntent is m's intent: the value the sender passed, or else (a
// remote sender) its frame decoded here.
func submittedIntent(m *SubmitIntent) (*protocol.ClientIntent, error) {
	if ci := m.Intent; ci != nil && ci.Intent != nil {
		return ci, nil
	}
	f, err := protocol.DecodeClientFrame(m.Frame)
	if err != nil {
		return nil, fmt.Errorf("decode intent frame: %w", err)
	}
	ci, ok := f.(*protocol.ClientIntent)
	if !ok || ci.Intent == nil {
		return nil, fmt.Errorf("intent frame holds %T, not an intent", f)
	}
	return ci, nil
}

// precheck applies the checks that come before the engine (docs/protocol.md §4.3).
func (g *Core) precheck(seat int, ci *protocol.ClientIntent) (protocol.IntentRejectCode, string) {
	if g.engine.IsFinished() {
		return protocol.RejectMatchFinished, "match finished"
	}
	if _, concede := ci.Intent.(protocol.Concede); concede {
		return protocol.RejectNone, ""
	}
	if g.engine.Decider() != seat {
		return protocol.RejectNotYourTurn, "the other player decides"
	}
	return protocol.RejectNone, ""
}

func (g *Core) reject(a *attachment, key journalKey, ci *protocol.ClientIntent, code protocol.IntentRejectCode, reason string) {
	r := protocol.ServerIntentResult{IntentID: ci.IntentID, Code: code, Reason: reason, EventSeq: g.engine.LastSeq()}
	if len(g.rejected) < maxRejectedRemembered {
		g.rejected[key] = r
	}
	if g.deps.Metrics != nil {
		g.deps.Metrics.IntentsRejected.Add(1)
	}
	g.sendResult(a, r)
}

func (g *Core) sendResult(a *attachment, r protocol.ServerIntentResult) {
	if a == nil {
		return // a bot's intent: the grain itself is the sender
	}
	g.send(a.pid, &SeatFrames{Epoch: g.epoch, Frames: []OutFrame{g.frame(&r, 0)}})
}

// broadcast sends the result (to seat only) and then the events of one batch
// to every attached seat, each through its own projection. A seat gets the
// whole batch range even when it may see none of its events (docs/protocol.md §9.4).
func (g *Core) broadcast(evs []protocol.EventEnvelope, seat int, res *protocol.ServerIntentResult, deciderChanged bool) {
	// The clock is public and the same for every seat: encoded once, its
	// bytes shared (sinks never modify frames).
	var clock *OutFrame
	for s, a := range g.seats {
		if a == nil {
			continue
		}
		var frames []OutFrame
		if res != nil && s == seat {
			frames = append(frames, g.frame(res, 0))
		}
		if len(evs) > 0 {
			frames = append(frames, g.batchFrame(s, evs))
		}
		if deciderChanged || g.engine.IsFinished() {
			if clock == nil {
				f := g.clockFrame()
				clock = &f
			}
			frames = append(frames, *clock)
		}
		if len(frames) > 0 {
			g.send(a.pid, &SeatFrames{Epoch: g.epoch, Frames: frames})
		}
	}
	// Spectators come after both seats, so that their frames never go out
	// ahead of a seat's.
	if len(g.spectators) > 0 && clock == nil && (deciderChanged || g.engine.IsFinished()) {
		f := g.clockFrame()
		clock = &f
	}
	g.broadcastSpectators(evs, clock)
	if deciderChanged {
		g.lastClockSent = g.now()
	}
	g.scheduleTick()
}

func (g *Core) onResync(m *ResyncSeat) {
	a := g.attached(m.Seat, m.SessionID)
	if a == nil {
		g.respond(&Reply{Code: ReplyNotAttached, Message: "seat not attached"})
		return
	}
	g.respond(&Reply{Code: ReplyOK})
	if spectating(m.Seat) && g.spectatorsDelayed() {
		// A delayed spectator never gets a snapshot of a later state:
		// events up to the horizon (docs/protocol.md §14.5).
		from := max(m.FromSeq, 1)
		if m.Full {
			from = 1
		}
		g.delayedFrames(from, g.specShown, func(fs []OutFrame, ok bool) {
			if ok {
				g.send(a.pid, &SeatFrames{Epoch: g.epoch, Requested: true, Frames: fs})
				return
			}
			delete(g.spectators, m.SessionID)
			g.send(a.pid, &SeatDetached{Epoch: g.epoch, Reason: DetachUnavailable})
		})
		return
	}
	var fs []OutFrame
	// A resync from before the journal gets a snapshot, not a replay of the
	// log: an open connection can ask again and again (docs/protocol.md §4.4).
	var evs []protocol.EventEnvelope
	err := errNotJournaled
	if !m.Full && m.FromSeq >= 1 {
		evs, err = g.recent.since(m.FromSeq)
		if err != nil && !errors.Is(err, errNotJournaled) {
			g.log.Error("read events kept for resumes", "from_seq", m.FromSeq, "err", err)
		}
	}
	if err != nil {
		fs = []OutFrame{g.snapshotFrame(m.Seat)}
	} else {
		fs = g.eventsFrames(m.Seat, m.FromSeq, g.engine.LastSeq(), evs)
	}
	g.send(a.pid, &SeatFrames{Epoch: g.epoch, Requested: true, Frames: fs})
}

func (g *Core) onDetach(m *DetachSeat) {
	if g.attached(m.Seat, m.SessionID) == nil {
		g.respond(&Reply{Code: ReplyOK})
		return
	}
	if spectating(m.Seat) {
		delete(g.spectators, m.SessionID)
		g.respond(&Reply{Code: ReplyOK})
		return
	}
	g.seats[m.Seat] = nil
	g.markAbsent(m.Seat, func() { g.respond(&Reply{Code: ReplyOK}) })
}

// markAbsent makes a seat's absence durable; k runs after.
func (g *Core) markAbsent(seat int, k func()) {
	if g.engine.IsFinished() || g.absent.Since[seat] != 0 {
		k()
		return
	}
	g.commit(logEntry{Kind: entryPresence, At: g.now(), Seat: seat, Present: false}, func(_ []protocol.EventEnvelope, ok bool) {
		if ok {
			g.scheduleTick()
		}
		k()
	})
}

// onSeatPing refreshes every pinged seat the grain still holds (attached
// records the contact) and names the others.
func (g *Core) onSeatPing(m *SeatPing) {
	var missing []int
	if g.attached(m.Seat, m.SessionID) == nil {
		missing = append(missing, 0)
	}
	for i, p := range m.More {
		if g.attached(p.Seat, p.SessionID) == nil {
			missing = append(missing, i+1)
		}
	}
	g.respond(&Reply{Code: ReplyOK, NotAttached: missing})
}

// onTick fires overdue deadlines, drops seats whose edge went silent, sends
// the periodic ServerClock and schedules the next tick.
func (g *Core) onTick() {
	if g.state != stateRunning {
		return
	}
	if g.deps.Owns != nil && !g.deps.Owns(g.id) {
		// The match belongs to another member in this member's view (see
		// GrainDeps.Owns); protoactor would stop this activation at a
		// topology change, but not if the change came before it started.
		g.log.Info("match owned elsewhere in this member's view: stopping this activation", "epoch", g.epoch)
		g.halt(HaltMovedAway)
		return
	}
	g.dropSilentSeats(0, g.now())
}

// dropSilentSeats drops the seats from seat from on whose edge went
// silent, then goes on with the tick.
func (g *Core) dropSilentSeats(from int, now int64) {
	stale := now - keepAliveMisses*g.deps.Timing.SeatKeepAlive.Milliseconds()
	for s := from; s < 2; s++ {
		if a := g.seats[s]; a != nil && a.lastSeen < stale {
			g.log.Info("seat transport lost", "seat", s)
			g.seats[s] = nil
			g.markAbsent(s, func() {
				if g.state == stateRunning {
					g.dropSilentSeats(s+1, now)
				}
			})
			return
		}
	}
	g.tickDeadlines(now)
}

// tickDeadlines drops silent spectators and releases delayed ones' events,
// then goes on with the tick.
func (g *Core) tickDeadlines(now int64) {
	g.dropSilentSpectators(now - keepAliveMisses*g.deps.Timing.SeatKeepAlive.Milliseconds())
	if g.spectatorsDelayed() {
		g.releaseSpectators(now, func() {
			if g.state == stateRunning {
				g.tickDue(now)
			}
		})
		return
	}
	g.tickDue(now)
}

// tickDue fires a due timeout or absence loss and the bot's move, then
// goes on with the tick.
func (g *Core) tickDue(now int64) {
	if g.engine.IsFinished() {
		g.tickClock(now)
		return
	}
	next := func() {
		if g.state != stateRunning {
			return
		}
		g.botAct(now, func() {
			if g.state == stateRunning {
				g.tickClock(now)
			}
		})
	}
	if at := g.clock.timeoutAt(g.deps.Timing); at > 0 && at <= now {
		g.finish(g.clock.Decider, protocol.FinishTimeout, now, next)
	} else if loser, ok := g.absent.due(now, g.deps.Timing); ok {
		g.finish(loser, protocol.FinishAbsence, now, next)
	} else {
		next()
	}
}

// tickClock sends the periodic ServerClock and schedules the next tick.
func (g *Core) tickClock(now int64) {
	if !g.engine.IsFinished() && now-g.lastClockSent >= g.deps.Timing.ClockInterval.Milliseconds() {
		g.lastClockSent = now
		f := g.clockFrame()
		for _, a := range g.seats {
			if a != nil {
				g.send(a.pid, &SeatFrames{Epoch: g.epoch, Frames: []OutFrame{f}})
			}
		}
		if !g.spectatorsDelayed() {
			g.pushSpectators([]OutFrame{f})
		}
	}
	g.scheduleTick()
}

// finish ends the match by a server decision; k runs after.
func (g *Core) finish(loser int, reason protocol.FinishReason, now int64, k func()) {
	g.log.Info("match ends by server decision", "loser", loser, "reason", int(reason))
	g.commit(logEntry{Kind: entryFinish, At: now, Loser: loser, Reason: int(reason)}, func(evs []protocol.EventEnvelope, ok bool) {
		if ok {
			g.broadcast(evs, -1, nil, true)
		}
		k()
	})
}

// scheduleTick asks for one timer at the earliest thing the grain must do
// by itself: a timeout, an absence loss, the next ServerClock, or a
// keep-alive check.
func (g *Core) scheduleTick() {
	if g.state != stateRunning {
		return
	}
	now := g.now()
	t := g.deps.Timing
	next := now + t.SeatKeepAlive.Milliseconds()
	if !g.engine.IsFinished() {
		consider := func(at int64) {
			if at > 0 && at < next {
				next = at
			}
		}
		consider(g.clock.timeoutAt(t))
		if mutate.Planted != mutate.AbsenceNotScheduled {
			consider(g.absent.next(t))
		}
		consider(g.lastClockSent + t.ClockInterval.Milliseconds())
		consider(g.botDue())
	}
	if at := g.spectatorTickDue(); at > 0 && at < next {
		next = at
	}
	g.rd.Tick, g.rd.TickIn = true, max(time.Duration(next-now)*time.Millisecond, time.Millisecond)
}

// maxSeatNameBytes bounds a name a guest gives its seat; the edge checks
// names more strictly (characters, length in runes) before they get here.
const maxSeatNameBytes = 256

// onNameSeat records the name a guest chose (NameSeat): durably, so that
// every activation shows it, and at once to every attached seat, as a
// snapshot, since names travel only in views.
func (g *Core) onNameSeat(m *NameSeat) {
	if m.Seat < 0 || m.Seat > 1 || !g.meta.Guests[m.Seat] {
		g.respond(&Reply{Code: ReplyBadRequest, Message: "not a guest seat"})
		return
	}
	if m.Name == "" || len(m.Name) > maxSeatNameBytes {
		g.respond(&Reply{Code: ReplyBadRequest, Message: fmt.Sprintf("name of %d bytes, want 1..%d", len(m.Name), maxSeatNameBytes)})
		return
	}
	if g.names[m.Seat] != "" || g.engine.IsFinished() {
		g.respond(&Reply{Code: ReplyOK}) // the first name stands
		return
	}
	g.commit(logEntry{Kind: entryName, At: g.now(), Seat: m.Seat, Name: m.Name}, func(_ []protocol.EventEnvelope, ok bool) {
		if !ok {
			return
		}
		for s, a := range g.seats {
			if a != nil {
				g.send(a.pid, &SeatFrames{Epoch: g.epoch, Frames: []OutFrame{g.snapshotFrame(s)}})
			}
		}
		g.respond(&Reply{Code: ReplyOK})
	})
}
