package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/protocol"
)

// Spectators (docs/protocol.md §14) use the seats' messages with Seat =
// protocol.SeatSpectator: AttachSeat, ResyncSeat, SubmitIntent (always
// refused), DetachSeat and SeatPing. So an edge's seat, its keep-alive and
// its re-attach after a failover work for a spectator unchanged. The grain
// keeps spectators by session id, up to GrainDeps.MaxSpectators.
//
// A spectator must never hold the seats up. The grain builds each batch's
// spectator frames once (one projection, one encoding) and hands the same
// SeatFrames to every spectator after the seats got theirs; sending never
// waits (a step's sends are fire-and-forget), and a spectator's edge seat
// drops its connection when its bounded queue is full instead of waiting
// for it (docs/protocol.md §14.8).

// spectating reports whether seat names a spectator.
func spectating(seat int) bool { return seat == protocol.SeatSpectator }

// onAttachSpectator attaches one spectator's connection: its ticket is
// consumed like a seat's, then it gets the hello, its state (the events
// after ResumeFromSeq, or a snapshot) and the clock. It replaces nobody.
func (g *Core) onAttachSpectator(m *AttachSeat) {
	if m.SessionID == "" || m.SessionAddr == "" {
		g.respond(&Reply{Code: ReplyBadRequest, Message: "bad spectator"})
		return
	}
	if _, known := g.spectators[m.SessionID]; !known && len(g.spectators) >= g.deps.MaxSpectators {
		// Checked before the ticket is consumed: a refused spectator may
		// retry with a fresh ticket, and the refusal writes nothing.
		g.respond(&Reply{Code: ReplySpectatorsFull, Message: "spectators full"})
		return
	}
	if !g.consumeTicket(m) {
		return
	}
	var frames []OutFrame
	if g.spectatorsDelayed() {
		var ok bool
		if frames, ok = g.delayedAttachFrames(m); !ok {
			g.respond(&Reply{Code: ReplyUnavailable, Message: "events not available"})
			return
		}
	} else {
		frames = g.attachFrames(m)
	}
	pid := actor.NewPID(m.SessionAddr, m.SessionID)
	if g.spectators == nil {
		g.spectators = map[string]*attachment{}
	}
	g.spectators[m.SessionID] = &attachment{pid: pid, sessionID: m.SessionID, lastSeen: g.now(), ticketExpiresMs: m.TicketExpiresMs}
	g.send(pid, &SeatFrames{Epoch: g.epoch, Initial: true, Frames: frames})
	g.respond(&Reply{Code: ReplyOK})
	g.scheduleTick()
}

// refuseSpectatorIntent answers an intent from a spectator: refused, with
// nothing remembered and nothing changed (docs/protocol.md §14.4).
func (g *Core) refuseSpectatorIntent(a *attachment, m *SubmitIntent) (ReplyCode, string) {
	ci, err := submittedIntent(m)
	if err != nil {
		g.log.Warn("undecodable intent frame from edge", "seat", m.Seat, "err", err)
		return ReplyBadRequest, "undecodable intent frame"
	}
	seq := g.engine.LastSeq()
	if g.spectatorsDelayed() {
		seq = g.specShown
	}
	g.sendResult(a, protocol.ServerIntentResult{IntentID: ci.IntentID, Code: protocol.RejectSpectator,
		Reason: "spectators cannot act", EventSeq: seq})
	return ReplyOK, ""
}

// pushSpectators sends frames, built once, to every spectator: the same
// message for all of them (sinks never modify frames).
func (g *Core) pushSpectators(frames []OutFrame) {
	if len(frames) == 0 || len(g.spectators) == 0 {
		return
	}
	msg := &SeatFrames{Epoch: g.epoch, Frames: frames}
	for _, a := range g.spectators {
		g.send(a.pid, msg)
	}
}

// broadcastSpectators pushes one batch (and the clock, when it goes to the
// seats too) to the spectators, projected for nobody's seat.
func (g *Core) broadcastSpectators(evs []protocol.EventEnvelope, clock *OutFrame) {
	if g.spectatorsDelayed() {
		if len(evs) > 0 {
			g.holdBatch(evs[len(evs)-1].Seq, g.now())
		}
		return
	}
	if len(g.spectators) == 0 {
		return
	}
	var frames []OutFrame
	if len(evs) > 0 {
		frames = append(frames, g.batchFrame(protocol.SeatSpectator, evs))
	}
	if clock != nil {
		frames = append(frames, *clock)
	}
	g.pushSpectators(frames)
}

// dropSilentSpectators forgets spectators whose edge stopped its
// keep-alives before stale (its member died or lost the link). A spectator
// is never absent: nothing is logged.
func (g *Core) dropSilentSpectators(stale int64) {
	for id, a := range g.spectators {
		if a.lastSeen < stale {
			delete(g.spectators, id)
		}
	}
}

// The spectator delay (docs/protocol.md §14.5): GrainDeps.SpectatorDelayEvents
// and SpectatorDelay hold batches back from spectators. The grain keeps the
// last seq spectators may see (specShown, always a batch's end) and the
// batches after it with their append times (specPending); a batch becomes
// visible once enough events follow it (or the match finished) and it is
// old enough. Delayed spectators get events only, never a snapshot of a
// later state, and no clock.

// specBatch is a batch not yet visible to delayed spectators: its last seq
// and when it was appended (Unix ms).
type specBatch struct{ toSeq, at int64 }

// spectatorsDelayed reports whether this match holds spectators back.
func (g *Core) spectatorsDelayed() bool {
	return g.deps.SpectatorDelayEvents > 0 || g.deps.SpectatorDelay > 0
}

// startSpectatorHorizon sets the horizon of a new activation at now. The
// append times of batches before it are not known here, so with a time
// delay everything up to the last seq counts as appended now (spectators
// wait longer after a failover, never less). Without one, the batch ends
// come from the events kept for resumes: each batch ends with its Decision
// event, or with GameFinished right after it (docs/protocol.md §13).
func (g *Core) startSpectatorHorizon(now int64) {
	g.specShown, g.specPending = 0, nil
	if !g.spectatorsDelayed() {
		return
	}
	last := g.engine.LastSeq()
	if g.deps.SpectatorDelay > 0 {
		g.specPending = []specBatch{{toSeq: last, at: now}}
		return
	}
	evs, err := g.recent.since(g.recent.first())
	if err != nil {
		g.specPending = []specBatch{{toSeq: last, at: now}}
		return
	}
	for i, e := range evs {
		_, decision := e.Event.(*protocol.DecisionEvent)
		_, finished := e.Event.(*protocol.GameFinishedEvent)
		if finished || decision && (i+1 == len(evs) || !isGameFinished(evs[i+1].Event)) {
			g.specPending = append(g.specPending, specBatch{toSeq: e.Seq, at: now})
		}
	}
	if n := len(g.specPending); n == 0 || g.specPending[n-1].toSeq != last {
		g.specPending = append(g.specPending, specBatch{toSeq: last, at: now})
	}
	g.releaseSpectators(now)
}

func isGameFinished(ev protocol.Event) bool {
	_, ok := ev.(*protocol.GameFinishedEvent)
	return ok
}

// holdBatch records a new batch ending at toSeq, appended at now, and
// releases what became visible.
func (g *Core) holdBatch(toSeq, now int64) {
	g.specPending = append(g.specPending, specBatch{toSeq: toSeq, at: now})
	g.releaseSpectators(now)
}

// releaseSpectators moves the horizon past every batch that became visible
// by now and sends delayed spectators the events up to it.
func (g *Core) releaseSpectators(now int64) {
	last, finished := g.engine.LastSeq(), g.engine.IsFinished()
	shown := g.specShown
	for len(g.specPending) > 0 {
		b := g.specPending[0]
		if !finished && last-b.toSeq < int64(g.deps.SpectatorDelayEvents) {
			break
		}
		if now-b.at < g.deps.SpectatorDelay.Milliseconds() {
			break
		}
		shown, g.specPending = b.toSeq, g.specPending[1:]
	}
	if shown == g.specShown {
		return
	}
	from := g.specShown + 1
	g.specShown = shown
	if len(g.spectators) == 0 {
		return
	}
	frames, ok := g.delayedFrames(from, shown)
	if !ok {
		// The events cannot be had (an unreadable log): the spectators
		// reconnect and resume, which tries again.
		for id, a := range g.spectators {
			g.send(a.pid, &SeatDetached{Epoch: g.epoch, Reason: DetachUnavailable})
			delete(g.spectators, id)
		}
		return
	}
	g.pushSpectators(frames)
}

// delayedFrames are the spectators' events from fromSeq to toSeq (at most
// the horizon); false when they cannot be had. A finished match whose end
// is visible may answer with a snapshot instead, which shows nothing later.
func (g *Core) delayedFrames(fromSeq, toSeq int64) ([]OutFrame, bool) {
	if fromSeq > toSeq {
		return g.eventsFrames(protocol.SeatSpectator, fromSeq, toSeq, nil), true
	}
	if evs, ok := g.eventsFrom(fromSeq); ok {
		return g.eventsFrames(protocol.SeatSpectator, fromSeq, toSeq, evs), true
	}
	if g.engine.IsFinished() && toSeq == g.engine.LastSeq() {
		return []OutFrame{g.snapshotFrame(protocol.SeatSpectator)}, true
	}
	return nil, false
}

// delayedAttachFrames answers a delayed spectator's attach: the hello at
// the horizon (resumed: events follow, if only "up to date") and the events
// after ResumeFromSeq up to the horizon; no clock.
func (g *Core) delayedAttachFrames(m *AttachSeat) ([]OutFrame, bool) {
	state, ok := g.delayedFrames(max(m.ResumeFromSeq, 0)+1, g.specShown)
	if !ok {
		return nil, false
	}
	if m.Reattach {
		return state, true
	}
	snapshot := len(state) == 1 && len(state[0].Data) > 1 && state[0].Data[1] == byte(protocol.ServerSnapshotKind)
	hello := g.frame(&protocol.ServerHello{ProtocolVersion: protocol.Version, MatchID: g.id, PlayerIndex: protocol.SeatSpectator,
		Resumed: !snapshot, EventSeq: g.specShown, ServerTimeMs: g.now()}, 0)
	return append([]OutFrame{hello}, state...), true
}

// spectatorTickDue is when the next held batch becomes old enough, 0 for never.
func (g *Core) spectatorTickDue() int64 {
	if len(g.specPending) == 0 || g.deps.SpectatorDelay <= 0 {
		return 0
	}
	return g.specPending[0].at + g.deps.SpectatorDelay.Milliseconds()
}
