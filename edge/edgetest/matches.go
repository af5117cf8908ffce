package edgetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// Matches is an in-memory edge.Matches with a toy game, for tests of the
// edge, of clients and of bots. Towards the edge it keeps the contract of
// the real match grain: a ticket opens a seat once, the sink gets ServerHello
// then ServerEvents (resume) or a ServerSnapshot, a new attachment replaces
// the old one with DetachReplaced, intents are journaled by id (a retry gets
// duplicate=true), every batch of events goes to both seats as one
// ServerEvents, and a ServerClock follows every change of decider.
//
// The toy game: the decider's legal intents are EndTurn and Concede. EndTurn
// deals one damage to the other player; the sixth damage ends the match
// (GameFinished, reason Damage), otherwise the other player's turn starts.
// Any other intent is Illegal; the non-decider gets NotYourTurn (Concede is
// always allowed). Every method is safe for concurrent use.
type Matches struct {
	mu        sync.Mutex
	next      int
	matches   map[string]*match
	used      map[string]bool
	openErr   error
	createErr error
	resyncs   int
	hold      chan error // SetHoldIntents: where held intents report their context's end
}

// NewMatches returns an empty Matches.
func NewMatches() *Matches {
	return &Matches{matches: make(map[string]*match), used: make(map[string]bool)}
}

// DamageToWin is the damage that ends a toy match.
const DamageToWin = 6

type match struct {
	id       string
	names    [2]string
	guests   [2]bool
	named    [2]bool
	events   []protocol.EventEnvelope // events[i].Seq == i+1
	turn     int
	active   int
	damage   [2]int
	finished bool
	winner   int
	seats    [2]*Seat
	// spectators are the spectators' attachments (seat
	// protocol.SeatSpectator), in the order they came.
	spectators []*Seat
	journal    map[string]protocol.ServerIntentResult
}

func (m *match) seq() int64 { return int64(len(m.events)) }

// Seat is one attachment of a connection to a toy match.
type Seat struct {
	ms      *Matches
	m       *match
	idx     int
	sink    edge.SeatSink
	lastSeq int64
	closed  bool
	left    bool
}

// SetOpenError makes OpenSeat fail with err (nil: succeed again).
func (f *Matches) SetOpenError(err error) {
	f.mu.Lock()
	f.openErr = err
	f.mu.Unlock()
}

// SetCreateError makes CreateMatch fail with err (nil: succeed again).
func (f *Matches) SetCreateError(err error) {
	f.mu.Lock()
	f.createErr = err
	f.mu.Unlock()
}

// SetHoldIntents makes every Seat.Intent send nil to the returned channel
// (buffered, 16), wait until its context ends, send the context's error and
// fail with edge.ErrUnavailable: a test sees the call in flight, then when,
// and why, the edge gave it up. SetHoldIntents(false) lets intents through
// again.
func (f *Matches) SetHoldIntents(on bool) <-chan error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = nil
	if on {
		f.hold = make(chan error, 16)
	}
	return f.hold
}

// Resyncs counts Seat.Resync calls.
func (f *Matches) Resyncs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resyncs
}

// CreateMatch implements edge.Matches.
func (f *Matches) CreateMatch(_ context.Context, spec edge.MatchSpec) (string, error) {
	names := spec.Names
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil {
		return "", f.createErr
	}
	f.next++
	id := fmt.Sprintf("toy-%04d", f.next)
	m := &match{id: id, names: names, guests: spec.Guests, turn: 1, winner: protocol.NoWinner, journal: make(map[string]protocol.ServerIntentResult)}
	m.events = append(m.events,
		protocol.EventEnvelope{Seq: 1, Event: &protocol.GameStartedEvent{FirstPlayer: 0, DeckSize: [2]int{50, 50}}},
		protocol.EventEnvelope{Seq: 2, Event: &protocol.TurnStartedEvent{TurnNumber: 1, Player: 0}},
	)
	f.matches[id] = m
	return id, nil
}

// NameSeat implements edge.Matches: the first name of a guest seat stands.
func (f *Matches) NameSeat(_ context.Context, id string, seat int, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.matches[id]
	switch {
	case m == nil:
		return edge.ErrMatchNotFound
	case seat < 0 || seat > 1 || !m.guests[seat]:
		return fmt.Errorf("%w: seat %d of %s is not a guest seat", edge.ErrBadRequest, seat, id)
	case !m.named[seat]:
		m.names[seat], m.named[seat] = name, true
	}
	return nil
}

// Names returns the players' names of match id, as its views show them.
func (f *Matches) Names(id string) [2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.matches[id]; m != nil {
		return m.names
	}
	return [2]string{}
}

// MatchExists implements edge.Matches.
func (f *Matches) MatchExists(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.matches[id] != nil, nil
}

// Seat returns the current attachment of seat in matchID, or nil.
func (f *Matches) Seat(matchID string, seat int) *Seat {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.matches[matchID]
	switch {
	case m == nil:
	case seat == protocol.SeatSpectator && len(m.spectators) > 0:
		return m.spectators[len(m.spectators)-1] // the latest
	case seat >= 0 && seat < 2:
		return m.seats[seat]
	}
	return nil
}

// Finished reports whether matchID has ended, and its winner.
func (f *Matches) Finished(matchID string) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.matches[matchID]; m != nil {
		return m.finished, m.winner
	}
	return false, protocol.NoWinner
}

func encode(f protocol.ServerFrame) []byte {
	b, err := protocol.EncodeServerFrame(f)
	if err != nil {
		// Only this file's own frames are encoded; a failure is a bug here.
		panic(fmt.Sprintf("edgetest: encode %T: %v", f, err))
	}
	return b
}

func (m *match) decider() int {
	if m.finished {
		return -1
	}
	return m.active
}

func (m *match) clock() protocol.ClockView {
	return protocol.ClockView{DecisionPlayer: m.decider(), IsRunning: !m.finished, ServerTimeMs: time.Now().UnixMilli()}
}

func (m *match) view(seat int) protocol.MatchView {
	v := protocol.MatchView{
		MatchID: m.id, EventSeq: m.seq(), You: seat, ActivePlayer: m.active, TurnNumber: m.turn,
		Phase: protocol.PhaseMain, IsFinished: m.finished, Winner: m.winner, Clock: m.clock(),
	}
	if m.finished {
		v.Phase = protocol.PhaseFinished
	} else if seat != protocol.SeatSpectator {
		v.LegalIntents = []protocol.Intent{protocol.Concede{}}
		if seat == m.active {
			v.LegalIntents = []protocol.Intent{protocol.EndTurn{}, protocol.Concede{}}
		}
	}
	for i := range v.Players {
		v.Players[i] = protocol.PlayerView{Index: i, Name: m.names[i], FaceDownDamage: m.damage[i], DeckCount: 50,
			IsDefeated: m.finished && m.winner == 1-i}
	}
	return v
}

// OpenSeat implements edge.Matches.
func (f *Matches) OpenSeat(_ context.Context, req edge.OpenSeatRequest, sink edge.SeatSink) (edge.Seat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.openErr != nil {
		return nil, f.openErr
	}
	m := f.matches[req.MatchID]
	if m == nil {
		return nil, edge.ErrMatchNotFound
	}
	if f.used[req.TicketID] {
		return nil, edge.ErrTicketUsed
	}
	f.used[req.TicketID] = true
	s := &Seat{ms: f, m: m, idx: req.Seat, sink: sink, lastSeq: m.seq()}
	if req.Seat == protocol.SeatSpectator {
		m.spectators = append(m.spectators, s) // a spectator replaces nobody
	} else {
		if old := m.seats[req.Seat]; old != nil && !old.closed {
			old.closed = true
			old.sink.Detach(edge.DetachReplaced)
		}
		m.seats[req.Seat] = s
	}
	resumed := !m.finished && req.ResumeFromSeq > 0 && req.ResumeFromSeq <= m.seq()
	frames := [][]byte{encode(&protocol.ServerHello{
		ProtocolVersion: protocol.Version, MatchID: m.id, PlayerIndex: req.Seat,
		Resumed: resumed, EventSeq: m.seq(), ServerTimeMs: time.Now().UnixMilli(),
	})}
	if resumed {
		frames = append(frames, encode(m.eventsFrom(req.ResumeFromSeq+1)))
	} else {
		frames = append(frames, encode(&protocol.ServerSnapshot{View: m.view(req.Seat)}))
	}
	sink.Deliver(frames)
	return s, nil
}

func (m *match) eventsFrom(from int64) *protocol.ServerEvents {
	from = max(from, 1)
	f := &protocol.ServerEvents{FromSeq: from, ToSeq: m.seq()}
	if from <= m.seq() {
		f.Events = append(f.Events, m.events[from-1:]...)
	}
	return f
}

// Intent implements edge.Seat.
func (s *Seat) Intent(ctx context.Context, ci *protocol.ClientIntent) error {
	id, in := ci.IntentID, ci.Intent
	f := s.ms
	f.mu.Lock()
	if hold := f.hold; hold != nil {
		f.mu.Unlock()
		hold <- nil
		<-ctx.Done()
		hold <- ctx.Err()
		return edge.ErrUnavailable
	}
	defer f.mu.Unlock()
	if s.closed {
		return edge.ErrUnavailable
	}
	m := s.m
	if r, ok := m.journal[id]; ok {
		r.Duplicate = true
		s.sink.Deliver([][]byte{encode(&r)})
		return nil
	}
	reject := func(code protocol.IntentRejectCode, reason string) {
		r := protocol.ServerIntentResult{IntentID: id, Code: code, Reason: reason, EventSeq: m.seq()}
		m.journal[id] = r
		s.sink.Deliver([][]byte{encode(&r)})
	}
	_, concede := in.(protocol.Concede)
	_, endTurn := in.(protocol.EndTurn)
	switch {
	case s.idx == protocol.SeatSpectator:
		r := protocol.ServerIntentResult{IntentID: id, Code: protocol.RejectSpectator, Reason: "spectators cannot act", EventSeq: m.seq()}
		s.sink.Deliver([][]byte{encode(&r)})
		return nil
	case m.finished:
		reject(protocol.RejectMatchFinished, "match finished")
		return nil
	case concede:
		s.m.finish(1-s.idx, protocol.FinishConceded)
	case s.idx != m.active:
		reject(protocol.RejectNotYourTurn, "not your turn")
		return nil
	case !endTurn:
		reject(protocol.RejectIllegal, "toy game: only EndTurn and Concede")
		return nil
	default:
		other := 1 - s.idx
		m.damage[other]++
		m.append(&protocol.DamageEvent{Player: other, Card: protocol.CardRef{InstanceID: 10 + int(m.seq()), PrintingID: "TOY"}, DamageCount: m.damage[other]})
		if m.damage[other] >= DamageToWin {
			m.finish(s.idx, protocol.FinishDamage)
		} else {
			m.turn++
			m.active = other
			m.append(&protocol.TurnStartedEvent{TurnNumber: m.turn, Player: other})
		}
	}
	r := protocol.ServerIntentResult{IntentID: id, Accepted: true, EventSeq: m.seq()}
	m.journal[id] = r
	s.push(encode(&r), r.EventSeq)
	return nil
}

// push sends the result to s, and the new events and the clock to every
// attached seat: each gets one ServerEvents from its own lastSeq on.
func (s *Seat) push(result []byte, upTo int64) {
	m := s.m
	clock := encode(&protocol.ServerClock{Clock: m.clock(), EventSeq: upTo})
	for _, seat := range append(m.seats[:], m.spectators...) {
		if seat == nil || seat.closed {
			continue
		}
		batch := encode(m.eventsFrom(seat.lastSeq + 1))
		seat.lastSeq = upTo
		if seat == s {
			seat.sink.Deliver([][]byte{result, batch, clock})
		} else {
			seat.sink.Deliver([][]byte{batch, clock})
		}
	}
}

func (m *match) append(ev protocol.Event) {
	m.events = append(m.events, protocol.EventEnvelope{Seq: m.seq() + 1, Event: ev})
}

func (m *match) finish(winner int, reason protocol.FinishReason) {
	m.finished = true
	m.winner = winner
	m.append(&protocol.GameFinishedEvent{Winner: winner, Reason: reason})
}

// Resync implements edge.Seat.
func (s *Seat) Resync(_ context.Context, from int64, full bool) error {
	f := s.ms
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resyncs++
	if s.closed {
		return edge.ErrUnavailable
	}
	if full || from <= 0 {
		s.sink.Deliver([][]byte{encode(&protocol.ServerSnapshot{View: s.m.view(s.idx)})})
	} else {
		s.sink.Deliver([][]byte{encode(s.m.eventsFrom(from))})
	}
	s.lastSeq = s.m.seq()
	return nil
}

// LastSeq implements edge.Seat.
func (s *Seat) LastSeq() int64 {
	s.ms.mu.Lock()
	defer s.ms.mu.Unlock()
	return s.lastSeq
}

// Close implements edge.Seat.
func (s *Seat) Close(leave bool) {
	s.ms.mu.Lock()
	defer s.ms.mu.Unlock()
	if !s.closed {
		s.left = leave
	}
	s.closed = true
}

// Closed reports whether the edge closed (or the match replaced) this
// attachment, and whether the client left with ClientLeave.
func (s *Seat) Closed() (closed, left bool) {
	s.ms.mu.Lock()
	defer s.ms.mu.Unlock()
	return s.closed, s.left
}

// Kill marks the attachment as lost: later Intent and Resync calls fail with
// edge.ErrUnavailable, as when the grain is unreachable.
func (s *Seat) Kill() {
	s.ms.mu.Lock()
	defer s.ms.mu.Unlock()
	s.closed = true
}

// Sink returns the edge's sink of this attachment, to push arbitrary
// frames or a Detach from a test.
func (s *Seat) Sink() edge.SeatSink { return s.sink }
