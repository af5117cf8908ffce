package game

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// table is a test-only state builder: it starts a real match (seeded, both
// players keep their hands) and then rearranges cards between zones and sets
// the flow to a chosen decision, keeping card conservation. Every command
// afterwards goes through the real Execute.
type table struct {
	t *testing.T
	e *Engine
}

// newTable starts a match S1 (player 0) vs S2 (player 1) past the mulligans.
func newTable(t *testing.T, seed uint64) *table {
	t.Helper()
	return newTableDecks(t, seed, catalog.DeckEmberwing, catalog.DeckTidewarden)
}

func newTableDecks(t *testing.T, seed uint64, d0, d1 catalog.DeckID) *table {
	t.Helper()
	a, err := catalog.DeckList(d0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.DeckList(d1)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := New(seed, [2][]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	tb := &table{t: t, e: e}
	tb.do(e.Decider(), protocol.FinishMulligan{})
	tb.do(e.Decider(), protocol.FinishMulligan{})
	return tb
}

// pr is the catalog index of a printing id.
func (tb *table) pr(id string) uint8 {
	tb.t.Helper()
	pr, ok := lookupPrinting(id)
	if !ok {
		tb.t.Fatalf("unknown printing %s", id)
	}
	return pr
}

// take removes a card of printing id owned by p from the deck, the hand or
// the drop zone (in that order) and returns it, reset.
func (tb *table) take(p int, id string) uint8 {
	tb.t.Helper()
	pr := tb.pr(id)
	pl := &tb.e.pl[p]
	for _, z := range []*[]uint8{&pl.deck, &pl.hand, &pl.drop} {
		for i, c := range *z {
			if tb.e.cards[c].pr == pr {
				*z = removeAt(*z, i)
				tb.e.resetUnit(c)
				return c
			}
		}
	}
	tb.t.Fatalf("player %d has no spare %s", p, id)
	return 0
}

// stash puts card c at the bottom of its owner's deck.
func (tb *table) stash(c uint8) {
	if c == 0 {
		return
	}
	tb.e.resetUnit(c)
	p := tb.e.cards[c].owner()
	tb.e.pl[p].deck = append(tb.e.pl[p].deck, c)
}

// hand makes p's hand exactly the given printings.
func (tb *table) hand(p int, ids ...string) {
	tb.t.Helper()
	pl := &tb.e.pl[p]
	old := slices.Clone(pl.hand)
	pl.hand = pl.hand[:0]
	for _, c := range old {
		tb.stash(c)
	}
	for _, id := range ids {
		pl.hand = append(pl.hand, tb.take(p, id))
	}
}

// vanguard puts a card of printing id on p's VC; the old vanguard goes to the deck.
func (tb *table) vanguard(p int, id string) uint8 {
	tb.t.Helper()
	c := tb.take(p, id)
	tb.stash(tb.e.pl[p].vc)
	tb.e.pl[p].vc = c
	return c
}

// rear puts a card of printing id on p's circle slot ("" empties it).
func (tb *table) rear(p, slot int, id string) uint8 {
	tb.t.Helper()
	tb.stash(tb.e.pl[p].rc[slot])
	tb.e.pl[p].rc[slot] = 0
	if id == "" {
		return 0
	}
	c := tb.take(p, id)
	tb.e.pl[p].rc[slot] = c
	return c
}

// damage gives p damage cards: printing ids, face up unless prefixed by "v".
func (tb *table) damage(p int, ids ...string) {
	tb.t.Helper()
	pl := &tb.e.pl[p]
	old := slices.Clone(pl.damage)
	pl.damage = pl.damage[:0]
	for _, c := range old {
		tb.stash(c)
	}
	for _, id := range ids {
		up := true
		if id[0] == 'v' {
			up, id = false, id[1:]
		}
		c := tb.take(p, id)
		tb.e.cards[c].set(flagFaceUp, up)
		pl.damage = append(pl.damage, c)
	}
}

// soul makes p's soul exactly the given printings.
func (tb *table) soul(p int, ids ...string) {
	tb.t.Helper()
	pl := &tb.e.pl[p]
	old := slices.Clone(pl.soul)
	pl.soul = pl.soul[:0]
	for _, c := range old {
		tb.stash(c)
	}
	for _, id := range ids {
		pl.soul = append(pl.soul, tb.take(p, id))
	}
}

// deckTop puts cards of the given printings on top of p's deck, in order.
func (tb *table) deckTop(p int, ids ...string) {
	tb.t.Helper()
	var top []uint8
	for _, id := range ids {
		top = append(top, tb.take(p, id))
	}
	pl := &tb.e.pl[p]
	pl.deck = append(top, pl.deck...)
	// Keep the zone's own backing array: copy back into a capped slice.
	d := make([]uint8, len(pl.deck), catalog.DeckSize)
	copy(d, pl.deck)
	pl.deck = d
}

// deckSize trims p's deck to n cards, moving the rest to the drop zone.
func (tb *table) deckSize(p, n int) {
	pl := &tb.e.pl[p]
	for len(pl.deck) > n {
		c := pl.deck[len(pl.deck)-1]
		pl.deck = pl.deck[:len(pl.deck)-1]
		pl.drop = append(pl.drop, c)
	}
}

// at sets the flow: player p's turn (turn number 3 unless set), waiting at st.
func (tb *table) at(p int, st stage) {
	tb.t.Helper()
	e := tb.e
	e.tp = uint8(p)
	if e.turn < 3 {
		e.turn = 3
	}
	e.pend = pending{}
	e.battle = battle{}
	e.stage = st
	switch st {
	case stRideWait:
		e.phase, e.step = protocol.PhaseRide, protocol.StepNone
	case stMainWait:
		e.phase, e.step = protocol.PhaseMain, protocol.StepNone
	case stAttackWait:
		e.phase, e.step = protocol.PhaseBattle, protocol.StepAttack
	default:
		tb.t.Fatalf("at: stage %d is not a phase decision", st)
	}
	tb.valid()
}

func (tb *table) valid() {
	tb.t.Helper()
	if err := tb.e.validate(); err != nil {
		tb.t.Fatalf("built state is invalid: %v", err)
	}
}

// do executes an intent that must be accepted and returns its events.
func (tb *table) do(p int, in protocol.Intent) []protocol.Event {
	tb.t.Helper()
	envs, err := tb.e.Execute(p, in)
	if err != nil {
		tb.t.Fatalf("%s by p%d: %v (legal: %s)", formatIntent(in), p, err, formatIntents(tb.e.LegalCommands(p)))
	}
	tb.valid()
	if err := batchShape(envs); err != nil {
		tb.t.Fatalf("%s by p%d: %v", formatIntent(in), p, err)
	}
	return withoutDecisions(envEvents(envs))
}

// batchShape checks the event-complete invariant of one accepted command's
// batch: it is not empty and ends with a Decision, or with a Decision of
// nobody and GameFinished.
func batchShape(envs []protocol.EventEnvelope) error {
	n := len(envs)
	if n == 0 {
		return errors.New("an accepted command appended no event")
	}
	if gf, ok := envs[n-1].Event.(*protocol.GameFinishedEvent); ok {
		if n < 2 {
			return fmt.Errorf("GameFinished (%d) without a Decision before it", gf.Winner)
		}
		if d, ok := envs[n-2].Event.(*protocol.DecisionEvent); !ok || d.Player != -1 {
			return fmt.Errorf("GameFinished after %s, want a Decision of nobody", formatEvent(envs[n-2].Event))
		}
		n--
	} else if d, ok := envs[n-1].Event.(*protocol.DecisionEvent); !ok || d.Player < 0 {
		return fmt.Errorf("the batch ends with %s, want a Decision", formatEvent(envs[n-1].Event))
	}
	for _, env := range envs[:n-1] {
		if env.Event.EventKind() == protocol.EventDecision {
			return fmt.Errorf("a Decision at seq %d inside the batch", env.Seq)
		}
	}
	return nil
}

// withoutDecisions drops the Decision events, for assertions about the rules.
func withoutDecisions(evs []protocol.Event) []protocol.Event {
	out := evs[:0:0]
	for _, ev := range evs {
		if ev.EventKind() != protocol.EventDecision {
			out = append(out, ev)
		}
	}
	return out
}

// reject executes an intent that must be refused with want and change nothing.
func (tb *table) reject(p int, in protocol.Intent, want error) {
	tb.t.Helper()
	before := tb.e.StateHash()
	envs, err := tb.e.Execute(p, in)
	if err == nil || !errors.Is(err, want) {
		tb.t.Fatalf("%s by p%d: got %v (%d events), want %v", formatIntent(in), p, err, len(envs), want)
	}
	if len(envs) != 0 || tb.e.StateHash() != before {
		tb.t.Fatalf("%s by p%d: rejected but changed the state", formatIntent(in), p)
	}
}

// legal reports whether in is among p's legal commands.
func (tb *table) legal(p int, in protocol.Intent) bool {
	return inList(in, tb.e.LegalCommands(p))
}

// script renders events one per line, for readable assertions.
func script(evs []protocol.Event) string {
	s := ""
	for _, ev := range evs {
		s += formatEvent(ev) + "\n"
	}
	return s
}

// kinds lists the event kinds, for order assertions.
func kinds(evs []protocol.Event) []protocol.EventKind {
	out := make([]protocol.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventKind()
	}
	return out
}

// find returns the events of type T.
func find[T protocol.Event](evs []protocol.Event) []T {
	var out []T
	for _, ev := range evs {
		if v, ok := ev.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// one returns the single event of type T.
func one[T protocol.Event](t *testing.T, evs []protocol.Event) T {
	t.Helper()
	l := find[T](evs)
	if len(l) != 1 {
		var zero T
		t.Fatalf("want one %T, got %d in:\n%s", zero, len(l), script(evs))
	}
	return l[0]
}

func (tb *table) String() string {
	e := tb.e
	return fmt.Sprintf("turn %d p%d stage %d pend %d", e.turn, e.tp, e.stage, e.pend.kind)
}
