package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/matchgrain/matchgrain/persistence"
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
	if !m.Reattach {
		err := g.deps.Store.ConsumeTicket(g.storeCtx(), m.TicketID, time.UnixMilli(m.TicketExpiresMs), m.SessionAddr+"/"+m.SessionID)
		if errors.Is(err, persistence.ErrTicketUsed) {
			g.respond(&Reply{Code: ReplyTicketUsed, Message: "ticket already used"})
			return
		}
		if err != nil {
			g.log.Error("consume spectator ticket", "err", err)
			g.respond(&Reply{Code: ReplyUnavailable, Message: "store unavailable"})
			return
		}
	}
	pid := actor.NewPID(m.SessionAddr, m.SessionID)
	if g.spectators == nil {
		g.spectators = map[string]*attachment{}
	}
	g.spectators[m.SessionID] = &attachment{pid: pid, sessionID: m.SessionID, lastSeen: g.now(), ticketExpiresMs: m.TicketExpiresMs}
	g.send(pid, &SeatFrames{Epoch: g.epoch, Initial: true, Frames: g.attachFrames(m)})
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
	g.sendResult(a, protocol.ServerIntentResult{IntentID: ci.IntentID, Code: protocol.RejectSpectator,
		Reason: "spectators cannot act", EventSeq: g.engine.LastSeq()})
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
