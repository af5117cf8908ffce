package sim

import (
	"bytes"
	"fmt"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/protocol"
)

// player is one seat's client together with its edge seat: it connects
// with a ticket, plays when its view says it decides, re-sends an intent
// under the same id until it has a result, keeps its attachment alive,
// re-attaches and resumes, resyncs on a gap, and (as the seed decides)
// cuts its connection, takes its seat over from a new connection, thinks
// past its decision time, or leaves for good. What it receives is checked
// as it arrives and kept for the checks at the end.
type player struct {
	w    *world
	seat int
	conn *conn
	nth  int // connections made

	lastSeq int64
	fold    fold
	// seen holds, per event seq, the projected event as received (nil: the
	// batch covered the seq but did not show it to this seat).
	seen map[int64][]byte
	// accepted holds the event seq of each intent acknowledged as accepted.
	accepted map[string]int64
	pending  *pendingIntent
	intents  int
	quit     bool
	playing  bool
	leaving  bool // the match is over: the player leaves
	bot      bool // the grain plays this seat: no client
}

// conn is one connection of a player (an edge seat with its PID).
type conn struct {
	id              string
	ticket          string
	ticketExpiresMs int64
	epoch           int64
	attached        bool
	closed          bool
	resyncing       bool
}

type pendingIntent struct {
	id     string
	frame  []byte
	sentAt int64
}

// fold is what a player knows of the match from its events.
type fold struct {
	turn, next, winner int
	finished           bool
	reason             int // the finish reason; noReason while unknown
}

// noReason is fold.reason before the player learns why the match ended.
const noReason = -1

// foldOf is what a snapshot says of the match.
func foldOf(v *protocol.MatchView) fold {
	f := fold{turn: v.TurnNumber, next: v.ActivePlayer, winner: v.Winner, finished: v.IsFinished, reason: noReason}
	if v.FinishReason != nil {
		f.reason = int(*v.FinishReason)
	}
	return f
}

// newPlayer returns a player that knows nothing yet (next -1: it plays
// only once it has seen whose decision runs).
func (w *world) newPlayer(seat int) *player {
	return &player{w: w, seat: seat, seen: map[int64][]byte{}, accepted: map[string]int64{}, fold: fold{next: -1, winner: -1, reason: noReason}}
}

// connect opens a new connection and attaches it with a fresh ticket,
// resuming from what the player has. An open connection stays open: the
// new one takes the seat over.
func (p *player) connect() {
	w := p.w
	if p.quit || p.leaving {
		return
	}
	p.nth++
	// A ticket lives a minute from when it is issued, so a newer
	// connection's ticket expires later (the grain orders takeovers by it).
	c := &conn{id: fmt.Sprintf("p%d-c%d", p.seat, p.nth), ticket: fmt.Sprintf("t%d-%d", p.seat, p.nth), ticketExpiresMs: w.now + 60_000}
	p.conn = c
	w.logf("player %d connects as %s from %d", p.seat, c.id, p.lastSeq)
	p.attach(c, false)
	p.keepAlive(c)
}

// attach sends the (re-)attach of c and retries it until it is answered.
func (p *player) attach(c *conn, reattach bool) {
	w := p.w
	// A re-attach carries the connection's ticket expiry too, as the
	// edge's does (grains.Seat.reattach): the grain orders a re-attach
	// against a stale attach that reached a new activation first by it.
	m := &actors.AttachSeat{Seat: p.seat, ResumeFromSeq: p.lastSeq, Reattach: reattach, TicketExpiresMs: c.ticketExpiresMs,
		SessionAddr: "edge", SessionID: c.id, SeenEpoch: c.epoch}
	if !reattach {
		m.TicketID = c.ticket
	}
	answered := false
	p.call(m, func(r *actors.Reply) {
		if answered || c.closed {
			return
		}
		answered = true
		switch r.Code {
		case actors.ReplyOK:
			c.attached = true
			p.schedulePlay()
		case actors.ReplyReplaced, actors.ReplyTicketUsed:
			if p.conn == c {
				// Only an older connection of this player can hold the seat.
				w.fail("seat %d: its newest connection %s was refused the seat (code %d)", p.seat, c.id, r.Code)
				return
			}
			p.drop(c, "replaced")
		default:
			w.after(w.between(50, 500), func() { p.attach(c, reattach) })
		}
	}, func() {
		if !answered && !c.closed {
			answered = true
			p.attach(c, reattach)
		}
	})
}

// call sends a request to the owner in the view; timeout runs when no
// answer came within the edge's request timeout.
func (p *player) call(msg any, reply func(*actors.Reply), timeout func()) {
	w := p.w
	w.net(true, func() {
		if m := w.owner(); m != nil {
			m.request(msg, reply)
		}
	})
	if timeout != nil {
		w.after(3000, timeout)
	}
}

// keepAlive pings the grain every SeatKeepAlive while c is the player's
// connection; a grain that does not hold c gets a re-attach.
func (p *player) keepAlive(c *conn) {
	w := p.w
	w.after(w.timing.SeatKeepAlive.Milliseconds(), func() {
		if c.closed || p.conn != c {
			return
		}
		if w.faulty() && w.chance(w.faults.cut) {
			p.cut(c)
			return
		}
		if c.attached {
			p.call(&actors.SeatPing{Seat: p.seat, SessionID: c.id, SeenEpoch: c.epoch}, func(r *actors.Reply) {
				if r.Code == actors.ReplyOK && len(r.NotAttached) > 0 && c.attached && !c.closed {
					c.attached = false
					p.attach(c, true)
				}
			}, nil)
		}
		p.keepAlive(c)
	})
}

// cut ends c: sometimes with a detach the grain may get, sometimes by
// simply opening a new connection (a takeover), sometimes for good.
func (p *player) cut(c *conn) {
	w := p.w
	switch {
	case w.faults.quit && w.chance(0.15):
		w.logf("player %d leaves for good", p.seat)
		p.quit = true
		p.drop(c, "quit")
		p.call(&actors.DetachSeat{Seat: p.seat, SessionID: c.id, Leave: true}, func(*actors.Reply) {}, nil)
	case w.chance(0.5):
		p.drop(c, "cut")
		p.call(&actors.DetachSeat{Seat: p.seat, SessionID: c.id}, func(*actors.Reply) {}, nil)
		w.after(w.between(100, 20000), p.connect)
	default:
		w.logf("player %d takes its seat over from a new connection", p.seat)
		c.closed = true
		w.after(1, p.connect) // a ticket issued later expires later
	}
}

// drop closes c; a player without a connection reconnects later.
func (p *player) drop(c *conn, why string) {
	if c.closed {
		return
	}
	c.closed = true
	p.w.logf("player %d drops %s (%s)", p.seat, c.id, why)
	if p.conn == c && !p.quit && why == "replaced" {
		p.w.after(p.w.between(100, 3000), p.connect)
	}
}

// schedulePlay arranges the player's next intent if it decides.
func (p *player) schedulePlay() {
	w := p.w
	if p.playing || p.quit || p.fold.finished || p.fold.next != p.seat || p.pending != nil {
		return
	}
	p.playing = true
	think := w.between(50, 2500)
	if w.chance(w.faults.leave) {
		w.logf("player %d walks away from the match", p.seat)
		p.quit = true
		if c := p.conn; c != nil {
			p.drop(c, "walked away")
		}
		return
	}
	if w.chance(w.faults.slowThink) {
		think = w.between(w.timing.DecisionTime.Milliseconds(), (w.timing.DecisionTime+w.timing.BankTime).Milliseconds()+5000)
	}
	w.after(think, func() {
		p.playing = false
		if p.quit || p.fold.finished || p.fold.next != p.seat || p.pending != nil || p.conn == nil || p.conn.closed {
			return
		}
		p.intents++
		id := fmt.Sprintf("i%d-%d", p.seat, p.intents)
		frame, err := protocol.EncodeClientFrame(&protocol.ClientIntent{IntentID: id, BasedOnSeq: p.lastSeq, Intent: protocol.EndTurn{}})
		if err != nil {
			w.fail("encode intent: %v", err)
			return
		}
		p.pending = &pendingIntent{id: id, frame: frame}
		p.submit(p.pending)
	})
}

// submit sends the pending intent and re-sends it, under the same id,
// until a result for it arrives.
func (p *player) submit(pi *pendingIntent) {
	w := p.w
	c := p.conn
	if p.pending != pi || p.quit {
		return
	}
	if c == nil || c.closed || !c.attached {
		w.after(w.between(200, 1000), func() { p.submit(pi) })
		return
	}
	pi.sentAt = w.now
	answered := false
	p.call(&actors.SubmitIntent{Seat: p.seat, SessionID: c.id, Frame: pi.frame, SeenEpoch: c.epoch}, func(r *actors.Reply) {
		if answered {
			return
		}
		answered = true
		switch r.Code {
		case actors.ReplyOK:
			// The result comes as a frame; re-send if it was lost.
			w.after(3000, func() { p.submit(pi) })
		case actors.ReplyNotAttached:
			if c.attached && !c.closed {
				c.attached = false
				p.attach(c, true)
			}
			w.after(w.between(50, 500), func() { p.submit(pi) })
		default:
			w.after(w.between(50, 500), func() { p.submit(pi) })
		}
	}, func() {
		if !answered {
			answered = true
			p.submit(pi)
		}
	})
}

// onPush takes a grain's message for connection id.
func (p *player) onPush(id string, msg any) {
	c := p.conn
	if c == nil || c.id != id || c.closed {
		return
	}
	switch m := msg.(type) {
	case *actors.SeatDetached:
		if m.Epoch >= c.epoch {
			// Every other connection of this player is older: a stale
			// attach (a late or duplicated one) took the seat from the
			// live connection.
			p.w.fail("seat %d: its newest connection %s was detached (reason %d)", p.seat, c.id, m.Reason)
		}
	case *actors.SeatFrames:
		if m.Epoch < c.epoch {
			return
		}
		c.epoch = m.Epoch
		for _, f := range m.Frames {
			p.onFrame(c, m, f)
			if p.w.failure != nil {
				return
			}
		}
		p.schedulePlay()
		if p.fold.finished && !p.leaving {
			// A client leaves a finished match after a while.
			p.leaving = true
			p.w.after(p.w.between(0, 10000), func() {
				if c := p.conn; c != nil && !c.closed {
					p.drop(c, "match over")
					p.call(&actors.DetachSeat{Seat: p.seat, SessionID: c.id, Leave: true}, func(*actors.Reply) {}, nil)
				}
			})
		}
	}
}

func (p *player) onFrame(c *conn, m *actors.SeatFrames, of actors.OutFrame) {
	w := p.w
	f, err := protocol.DecodeServerFrame(of.Data)
	if err != nil {
		w.fail("seat %d: undecodable frame: %v", p.seat, err)
		return
	}
	switch f := f.(type) {
	case *protocol.ServerSnapshot:
		v := f.View
		if v.EventSeq < p.lastSeq {
			w.fail("seat %d: a snapshot at seq %d after events up to %d: the stream went back", p.seat, v.EventSeq, p.lastSeq)
			return
		}
		got := foldOf(&v)
		if v.IsFinished && got.reason == noReason {
			w.fail("seat %d: a snapshot of the finished match at seq %d without its finish reason", p.seat, v.EventSeq)
			return
		}
		if m.Initial && v.IsFinished && p.lastSeq > 0 && p.lastSeq < v.EventSeq && !w.logReadFailed {
			// The attach resumed from lastSeq (attach sends it), and every
			// event is in the log: the seat must get the ones it missed,
			// GameFinished among them, as after a failover just before the end.
			w.fail("seat %d resumed from %d after the end and got a snapshot at %d, not the events", p.seat, p.lastSeq, v.EventSeq)
			return
		}
		if v.EventSeq == p.lastSeq && p.lastSeq > 0 && got != p.fold {
			w.fail("seat %d: at seq %d its events fold to %+v, a snapshot says %+v", p.seat, p.lastSeq, p.fold, got)
			return
		}
		p.lastSeq, p.fold = v.EventSeq, got
		c.resyncing = false
	case *protocol.ServerEvents:
		if f.ToSeq <= p.lastSeq {
			return // already had them
		}
		if f.FromSeq > p.lastSeq+1 {
			// A gap: a push overtook another, or was lost with a cut.
			if !c.resyncing {
				c.resyncing = true
				w.logf("player %d: gap %d..%d after %d, resync", p.seat, f.FromSeq, f.ToSeq, p.lastSeq)
				p.call(&actors.ResyncSeat{Seat: p.seat, SessionID: c.id, FromSeq: p.lastSeq + 1, SeenEpoch: c.epoch},
					func(r *actors.Reply) {
						if r.Code != actors.ReplyOK {
							c.resyncing = false
						}
					}, func() { c.resyncing = false })
			}
			return
		}
		p.applyEvents(f)
		if m.Requested {
			c.resyncing = false
		}
	case *protocol.ServerIntentResult:
		p.onResult(f)
	case *protocol.ServerClock:
		if f.EventSeq > p.lastSeq && !c.resyncing {
			c.resyncing = true
			p.call(&actors.ResyncSeat{Seat: p.seat, SessionID: c.id, FromSeq: p.lastSeq + 1, SeenEpoch: c.epoch},
				func(r *actors.Reply) {
					if r.Code != actors.ReplyOK {
						c.resyncing = false
					}
				}, func() { c.resyncing = false })
		}
	}
}

// applyEvents folds a batch that continues the player's stream and keeps
// each event as seen; an event seen before must be seen the same again.
func (p *player) applyEvents(f *protocol.ServerEvents) {
	w := p.w
	next := 0
	for seq := f.FromSeq; seq <= f.ToSeq; seq++ {
		var ev protocol.Event
		if next < len(f.Events) && f.Events[next].Seq == seq {
			ev = f.Events[next].Event
			next++
		}
		var enc []byte
		if ev != nil {
			var err error
			if enc, err = protocol.AppendEvent(nil, ev); err != nil {
				w.fail("seat %d: encode event %d: %v", p.seat, seq, err)
				return
			}
		}
		if old, ok := p.seen[seq]; ok && !bytes.Equal(old, enc) {
			w.fail("seat %d saw two different events at seq %d", p.seat, seq)
			return
		}
		p.seen[seq] = enc
		if seq <= p.lastSeq {
			continue
		}
		switch e := ev.(type) {
		case *protocol.GameStartedEvent:
			p.fold.next = e.FirstPlayer
		case *protocol.TurnStartedEvent:
			p.fold.turn, p.fold.next = e.TurnNumber, e.Player
		case *protocol.GameFinishedEvent:
			p.fold.finished, p.fold.winner, p.fold.reason = true, e.Winner, int(e.Reason)
		}
		p.lastSeq = seq
	}
	if next != len(f.Events) {
		w.fail("seat %d: batch %d..%d holds events out of its range or order", p.seat, f.FromSeq, f.ToSeq)
	}
}

// onResult checks an intent's result: an accepted intent must already be
// durable, and every answer to one id must agree.
func (p *player) onResult(r *protocol.ServerIntentResult) {
	w := p.w
	if p.pending != nil && p.pending.id == r.IntentID {
		p.pending = nil
	}
	if !r.Accepted {
		if seq, ok := p.accepted[r.IntentID]; ok {
			w.fail("seat %d: intent %q accepted at seq %d, then answered rejected (code %d)", p.seat, r.IntentID, seq, r.Code)
		}
		return
	}
	if _, ok := w.durable[intentKey{p.seat, r.IntentID}]; !ok {
		w.fail("seat %d: intent %q acknowledged before it was durable", p.seat, r.IntentID)
		return
	}
	if seq, ok := p.accepted[r.IntentID]; ok && seq != r.EventSeq {
		w.fail("seat %d: intent %q accepted at seq %d, then at %d", p.seat, r.IntentID, seq, r.EventSeq)
		return
	}
	p.accepted[r.IntentID] = r.EventSeq
}
