package actors

import (
	"errors"

	"github.com/matchgrain/matchgrain/protocol"
)

// frame encodes one server frame. Encoding our own values cannot fail unless
// a value breaks the codec's limits, which would be a bug: it is logged and
// the seat gets an Internal error frame instead, so the client resyncs.
func (g *grain) frame(f protocol.ServerFrame, toSeq int64) OutFrame {
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
func (g *grain) view(seat int) protocol.MatchView {
	v := g.engine.View(seat)
	v.MatchID = g.id
	v.You = seat
	v.EventSeq = g.engine.LastSeq()
	v.Clock = g.clock.view(g.now(), g.deps.Timing)
	for i := range v.Players {
		v.Players[i].Name = g.meta.Names[i]
	}
	// Conceding is always possible while the match runs (docs/protocol.md §9.16), and the
	// server, not the engine, handles it.
	if !g.engine.IsFinished() && !hasConcede(v.LegalIntents) {
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

func (g *grain) snapshotFrame(seat int) OutFrame {
	return g.frame(&protocol.ServerSnapshot{View: g.view(seat)}, g.engine.LastSeq())
}

// project returns the events of evs that seat may see, as it may see them.
func (g *grain) project(seat int, evs []protocol.EventEnvelope) []protocol.EventEnvelope {
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
func (g *grain) batchFrame(seat int, evs []protocol.EventEnvelope) OutFrame {
	from, to := evs[0].Seq, evs[len(evs)-1].Seq
	return g.frame(&protocol.ServerEvents{FromSeq: from, ToSeq: to, Events: g.project(seat, evs)}, to)
}

// eventsFrame is every event from fromSeq (inclusive) to now for seat; the
// caller has checked that the journal covers fromSeq. fromSeq > last seq
// gives an empty frame meaning "up to date" (docs/protocol.md §4.4).
func (g *grain) eventsFrame(seat int, fromSeq int64) OutFrame {
	last := g.engine.LastSeq()
	if fromSeq > last {
		return g.frame(&protocol.ServerEvents{FromSeq: fromSeq, ToSeq: last}, last)
	}
	idx := int(fromSeq - g.journalFrom)
	f := &protocol.ServerEvents{FromSeq: fromSeq, ToSeq: last, Events: g.project(seat, g.events[idx:])}
	b, err := protocol.EncodeServerFrame(f)
	if errors.Is(err, protocol.ErrFrameTooLarge) {
		// A very long gap does not fit one frame; a snapshot always does
		// and is an allowed answer to a resume or resync (docs/protocol.md §4).
		return g.snapshotFrame(seat)
	}
	if err != nil {
		return g.frame(f, last) // logs and degrades to an Internal error frame
	}
	return OutFrame{Data: b, ToSeq: last}
}

func (g *grain) clockFrame() OutFrame {
	return g.frame(&protocol.ServerClock{Clock: g.clock.view(g.now(), g.deps.Timing), EventSeq: g.engine.LastSeq()}, 0)
}
