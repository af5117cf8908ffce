package actors

import (
	"github.com/matchgrain/matchgrain/protocol"
)

// frame encodes one server frame. Encoding our own values cannot fail unless
// a value breaks the codec's limits, which would be a bug: it is logged and
// the seat gets an Internal error frame instead, so the client resyncs.
func (g *Core) frame(f protocol.ServerFrame, toSeq int64) OutFrame {
	b, err := protocol.EncodeServerFrame(f)
	if err != nil {
		g.log.Error("encode server frame", "kind", int(f.ServerFrameKind()), "err", err)
		b, err = protocol.EncodeServerFrame(&protocol.ServerError{Code: protocol.ErrorInternal, Message: "internal error", EventSeq: g.engine.LastSeq()})
		if err != nil {
			g.log.Error("encode internal error frame", "err", err)
		}
		return OutFrame{Data: b}
	}
	return OutFrame{Data: b, ToSeq: toSeq}
}

// view is seat's MatchView with the parts only the grain knows.
func (g *Core) view(seat int) protocol.MatchView {
	v := g.engine.View(seat)
	v.MatchID = g.id
	v.You = seat
	v.EventSeq = g.engine.LastSeq()
	v.Clock = g.clock.view(g.now(), g.deps.Timing)
	for i := range v.Players {
		v.Players[i].Name = g.name(i)
	}
	// Conceding is always possible while the match runs (docs/protocol.md §9.16), and the
	// server, not the engine, handles it; a spectator may do nothing.
	if !spectating(seat) && !g.engine.IsFinished() && !hasConcede(v.LegalIntents) {
		v.LegalIntents = append(v.LegalIntents, protocol.Concede{})
	}
	return v
}

func hasConcede(in []protocol.Intent) bool {
	for _, i := range in {
		if i.IntentKind() == protocol.IntentConcede {
			return true
		}
	}
	return false
}

func (g *Core) snapshotFrame(seat int) OutFrame {
	return g.frame(&protocol.ServerSnapshot{View: g.view(seat)}, g.engine.LastSeq())
}

// project returns the events of evs that seat may see, as it may see them.
func (g *Core) project(seat int, evs []protocol.EventEnvelope) []protocol.EventEnvelope {
	out := make([]protocol.EventEnvelope, 0, len(evs))
	for _, e := range evs {
		if pe, ok := g.deps.Rules.Project(seat, e.Event); ok {
			out = append(out, protocol.EventEnvelope{Seq: e.Seq, Event: pe})
		}
	}
	return out
}

// batchFrame is one batch of new events for seat; its range covers the
// whole batch even if seat may see none of it (docs/protocol.md §9.4).
func (g *Core) batchFrame(seat int, evs []protocol.EventEnvelope) OutFrame {
	from, to := evs[0].Seq, evs[len(evs)-1].Seq
	return g.frame(&protocol.ServerEvents{FromSeq: from, ToSeq: to, Events: g.project(seat, evs)}, to)
}

// eventsFrames is every event from fromSeq (inclusive) to last for seat (the
// match's last seq, or a delayed spectator's last visible one), in as many
// ServerEvents frames as the frame size limit needs, their ranges
// contiguous; all holds those events (eventsFrom), from fromSeq on, and
// maybe later ones, left out. fromSeq > last gives one empty frame meaning
// "up to date" (docs/protocol.md §4.4). Events always follow a resumable
// hello, however long the gap (docs/protocol.md §13): a hello's resumed is
// true exactly when they do.
func (g *Core) eventsFrames(seat int, fromSeq, last int64, all []protocol.EventEnvelope) []OutFrame {
	if fromSeq > last {
		return []OutFrame{g.frame(&protocol.ServerEvents{FromSeq: fromSeq, ToSeq: last}, last)}
	}
	for len(all) > 0 && all[len(all)-1].Seq > last {
		all = all[:len(all)-1]
	}
	evs := g.project(seat, all)
	var out []OutFrame
	from, size, start := fromSeq, 0, 0
	var buf []byte
	for i, e := range evs {
		var err error
		buf, err = protocol.AppendEvent(buf[:0], e.Event)
		if err != nil {
			return append(out, g.frame(&protocol.ServerEvents{FromSeq: from, ToSeq: last, Events: evs[start:]}, last)) // logs, degrades
		}
		n := len(buf) + envelopeOverhead
		if size+n > maxEventsBytes && i > start {
			to := evs[i-1].Seq
			out = append(out, g.frame(&protocol.ServerEvents{FromSeq: from, ToSeq: to, Events: evs[start:i]}, to))
			from, size, start = to+1, 0, i
		}
		size += n
	}
	return append(out, g.frame(&protocol.ServerEvents{FromSeq: from, ToSeq: last, Events: evs[start:]}, last))
}

// envelopeOverhead bounds what an EventEnvelope adds to its event: the
// array header and an int64 seq. maxEventsBytes leaves room for the frame's
// own header and range within MaxFrameBytes.
const (
	envelopeOverhead = 1 + 9 + 5
	maxEventsBytes   = protocol.MaxFrameBytes - 64
)

func (g *Core) clockFrame() OutFrame {
	return g.frame(&protocol.ServerClock{Clock: g.clock.view(g.now(), g.deps.Timing), EventSeq: g.engine.LastSeq()}, 0)
}
