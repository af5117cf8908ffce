package client

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// viewState is the whole MatchView of one seat kept from events alone
// (docs/protocol.md §13): zones and counts from the
// movement events, phase and turn from TurnStarted and PhaseStarted, and
// everything the rules derive (decider, pending decision, legal intents,
// trigger, battle, unit power, critical and rest state) from the Decision
// that ends every batch. Card stats come from the catalog (catalog.Printings).
type viewState struct {
	v protocol.MatchView
	// damage is each player's damage zone in order with face states; the
	// view shows only the face-up cards and a count of the others.
	damage [2][]damageCard
}

type damageCard struct {
	ref    protocol.CardRef
	faceUp bool
	// guessed: the card's place in the zone is not known. A snapshot gives
	// face-down damage only as a count, so a Board started from one puts
	// those cards first; one of them flipped face up later may really sit
	// after face-up cards, so the order of FaceUpDamage is a guess then.
	guessed bool
}

// newViewState is the view of seat before the first event.
func newViewState(seat int) viewState {
	s := viewState{}
	s.v.You = seat
	s.v.Winner = protocol.NoWinner
	s.v.ActivePlayer = -1
	for p := range s.v.Players {
		s.v.Players[p].Index = p
	}
	return s
}

// viewStateFrom starts from a snapshot.
func viewStateFrom(v *protocol.MatchView) viewState {
	s := viewState{v: cloneView(v)}
	for p := range s.v.Players {
		pv := &s.v.Players[p]
		// The damage order of face-down cards is not in a snapshot: put them
		// first, which is where counter-blasts (oldest first) leave them in
		// the usual case; a later DamageFlipped names its cards anyway.
		for range pv.FaceDownDamage {
			s.damage[p] = append(s.damage[p], damageCard{guessed: true})
		}
		for _, c := range pv.FaceUpDamage {
			s.damage[p] = append(s.damage[p], damageCard{ref: protocol.CardRef{InstanceID: c.InstanceID, PrintingID: c.PrintingID}, faceUp: true})
		}
	}
	return s
}

// cloneView deep-copies the parts of a view the state mutates.
func cloneView(v *protocol.MatchView) protocol.MatchView {
	c := *v
	for p := range c.Players {
		pv := &c.Players[p]
		pv.Hand = slices.Clone(pv.Hand)
		pv.Guardian = slices.Clone(pv.Guardian)
		pv.Soul = slices.Clone(pv.Soul)
		pv.Drop = slices.Clone(pv.Drop)
		pv.FaceUpDamage = slices.Clone(pv.FaceUpDamage)
		pv.Vanguard = clonePtr(pv.Vanguard)
		pv.Trigger = clonePtr(pv.Trigger)
		for i := range pv.RearGuards {
			pv.RearGuards[i] = clonePtr(pv.RearGuards[i])
		}
	}
	c.LegalIntents = slices.Clone(c.LegalIntents)
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// cardView is a face-up card outside the circles, as the catalog prints it.
func cardView(r protocol.CardRef) protocol.CardView {
	c := protocol.CardView{InstanceID: r.InstanceID, PrintingID: r.PrintingID, FaceUp: true}
	if pr, ok := catalog.LookupPrinting(r.PrintingID); ok {
		c.BasePower, c.Power, c.BaseCritical, c.Critical = pr.Power, pr.Power, pr.Critical, pr.Critical
	}
	return c
}

func cardPtr(r protocol.CardRef) *protocol.CardView {
	c := cardView(r)
	return &c
}

// remove deletes the card with instance id from cs (no-op when absent).
func remove(cs []protocol.CardView, id int) []protocol.CardView {
	for i := range cs {
		if cs[i].InstanceID == id {
			return append(cs[:i], cs[i+1:]...)
		}
	}
	return cs
}

func (s *viewState) player(p int) *protocol.PlayerView {
	if p != 0 && p != 1 {
		return nil
	}
	return &s.v.Players[p]
}

func (s *viewState) own(p int) bool { return p == s.v.You }

// fromHand takes a card out of p's hand (the count always; the card itself
// only from the viewer's own hand).
func (s *viewState) fromHand(p int, r protocol.CardRef) {
	pv := s.player(p)
	pv.HandCount--
	if s.own(p) {
		pv.Hand = remove(pv.Hand, r.InstanceID)
	}
}

func (s *viewState) toHand(p int, r protocol.CardRef) {
	pv := s.player(p)
	pv.HandCount++
	if s.own(p) {
		pv.Hand = append(pv.Hand, cardView(r))
	}
}

func (s *viewState) syncDamage(p int) {
	pv := s.player(p)
	pv.FaceDownDamage = 0
	pv.FaceUpDamage = pv.FaceUpDamage[:0]
	for _, d := range s.damage[p] {
		if d.faceUp {
			pv.FaceUpDamage = append(pv.FaceUpDamage, cardView(d.ref))
		} else {
			pv.FaceDownDamage++
		}
	}
}

// apply applies one event (already projected for this seat).
func (s *viewState) apply(e protocol.EventEnvelope) {
	if e.Seq > s.v.EventSeq {
		s.v.EventSeq = e.Seq
	}
	switch ev := e.Event.(type) {
	case *protocol.GameStartedEvent:
		s.v.Phase, s.v.Step, s.v.TurnNumber = protocol.PhaseSetup, protocol.StepNone, 0
		for p := range s.v.Players {
			pv := &s.v.Players[p]
			pv.DeckCount = ev.DeckSize[p]
			// The face-down starter: its owner learns it from the Decision's units.
			pv.Vanguard = &protocol.CardView{}
		}
	case *protocol.TurnStartedEvent:
		s.v.TurnNumber = ev.TurnNumber
	case *protocol.PhaseStartedEvent:
		s.v.Phase, s.v.Step = ev.Phase, ev.Step
	case *protocol.CardsDrawnEvent:
		if pv := s.player(ev.Player); pv != nil {
			pv.DeckCount -= ev.Count
			pv.HandCount += ev.Count
			if s.own(ev.Player) {
				for _, c := range ev.Cards {
					pv.Hand = append(pv.Hand, cardView(c))
				}
			}
		}
	case *protocol.ReturnedToDeckEvent:
		if pv := s.player(ev.Player); pv != nil {
			pv.DeckCount += ev.Count
			pv.HandCount -= ev.Count
			if s.own(ev.Player) {
				for _, c := range ev.Cards {
					pv.Hand = remove(pv.Hand, c.InstanceID)
				}
			}
		}
	case *protocol.StandUpEvent:
		for p, c := range ev.Vanguards {
			s.v.Players[p].Vanguard = cardPtr(c)
		}
	case *protocol.RideEvent:
		if pv := s.player(ev.Player); pv != nil {
			s.fromHand(ev.Player, ev.Card)
			pv.Vanguard = cardPtr(ev.Card)
		}
	case *protocol.SoulEvent:
		if pv := s.player(ev.Player); pv != nil {
			switch {
			case ev.Op == protocol.SoulOut:
				pv.Soul = remove(pv.Soul, ev.Card.InstanceID)
				pv.Drop = append(pv.Drop, cardView(ev.Card))
			case ev.Cause == protocol.SoulCauseCharge:
				pv.DeckCount--
				pv.Soul = append(pv.Soul, cardView(ev.Card))
			default: // the ridden-upon vanguard
				pv.Soul = append(pv.Soul, cardView(ev.Card))
			}
		}
	case *protocol.CallEvent:
		if pv := s.player(ev.Player); pv != nil && validSlot(ev.Slot) {
			s.fromHand(ev.Player, ev.Card)
			pv.RearGuards[ev.Slot] = cardPtr(ev.Card)
		}
	case *protocol.MoveEvent:
		if pv := s.player(ev.Player); pv != nil && validSlot(ev.FromSlot) && validSlot(ev.ToSlot) {
			pv.RearGuards[ev.FromSlot], pv.RearGuards[ev.ToSlot] = pv.RearGuards[ev.ToSlot], pv.RearGuards[ev.FromSlot]
		}
	case *protocol.GuardEvent:
		if pv := s.player(ev.Player); pv != nil {
			if ev.FromZone == protocol.ZoneRC && validSlot(ev.FromSlot) {
				pv.RearGuards[ev.FromSlot] = nil
			} else {
				s.fromHand(ev.Player, ev.Card)
			}
			pv.Guardian = append(pv.Guardian, cardView(ev.Card))
		}
	case *protocol.DriveCheckEvent:
		s.check(ev.Player, ev.Card)
	case *protocol.DamageCheckEvent:
		s.check(ev.Player, ev.Card)
	case *protocol.TriggerResolvedEvent:
		if pv := s.player(ev.Player); pv != nil && ev.Healed != nil {
			for i, d := range s.damage[ev.Player] {
				if d.ref.InstanceID == ev.Healed.InstanceID || (d.ref.InstanceID == 0 && !d.faceUp && ev.EffectTarget == protocol.EffectTargetFaceDownDamage) {
					s.damage[ev.Player] = append(s.damage[ev.Player][:i], s.damage[ev.Player][i+1:]...)
					break
				}
			}
			pv.Drop = append(pv.Drop, cardView(*ev.Healed))
			s.syncDamage(ev.Player)
		}
	case *protocol.DamageEvent:
		if pv := s.player(ev.Player); pv != nil {
			if pv.Trigger != nil && pv.Trigger.InstanceID == ev.Card.InstanceID {
				pv.Trigger = nil
			}
			s.damage[ev.Player] = append(s.damage[ev.Player], damageCard{ref: ev.Card, faceUp: true})
			s.syncDamage(ev.Player)
		}
	case *protocol.RetireEvent:
		if pv := s.player(ev.Player); pv != nil {
			switch ev.FromZone {
			case protocol.ZoneRC:
				if validSlot(ev.FromSlot) {
					pv.RearGuards[ev.FromSlot] = nil
				}
			case protocol.ZoneGC:
				pv.Guardian = remove(pv.Guardian, ev.Card.InstanceID)
			}
			pv.Drop = append(pv.Drop, cardView(ev.Card))
		}
	case *protocol.DiscardEvent:
		if pv := s.player(ev.Player); pv != nil {
			s.fromHand(ev.Player, ev.Card)
			pv.Drop = append(pv.Drop, cardView(ev.Card))
		}
	case *protocol.CardToHandEvent:
		if pv := s.player(ev.Player); pv != nil {
			if ev.FromZone == protocol.ZoneTrigger && pv.Trigger != nil && pv.Trigger.InstanceID == ev.Card.InstanceID {
				pv.Trigger = nil
			}
			s.toHand(ev.Player, ev.Card)
		}
	case *protocol.DamageFlippedEvent:
		if s.player(ev.Player) != nil {
			for _, c := range ev.Cards {
				s.flip(ev.Player, c, ev.FaceUp)
			}
			s.syncDamage(ev.Player)
		}
	case *protocol.AbilityResolvedEvent:
		if pv := s.player(ev.Player); pv != nil && !s.own(ev.Player) && ev.AddedToHand > 0 {
			// The owner learns the card from CardSearchedView; the opponent the count.
			pv.DeckCount -= ev.AddedToHand
			pv.HandCount += ev.AddedToHand
		}
	case *protocol.CardSearchedViewEvent:
		if pv := s.player(ev.Player); pv != nil && s.own(ev.Player) {
			pv.DeckCount--
			s.toHand(ev.Player, ev.Card)
		}
	case *protocol.GameFinishedEvent:
		reason := ev.Reason
		s.v.IsFinished, s.v.Winner, s.v.FinishReason = true, ev.Winner, &reason
		s.v.Phase, s.v.Step = protocol.PhaseFinished, protocol.StepNone
		s.v.ActivePlayer = -1
		s.v.Battle, s.v.Trigger, s.v.Choice, s.v.Ability, s.v.Order = nil, nil, nil, nil, nil
		s.v.OpponentChoosing = false
		s.v.LegalIntents = nil
		for p := range s.v.Players {
			s.v.Players[p].IsDefeated = ev.Winner != p
		}
	case *protocol.DecisionEvent:
		s.decision(ev)
	}
}

// check moves the top card of p's deck to the trigger zone.
func (s *viewState) check(p int, r protocol.CardRef) {
	if pv := s.player(p); pv != nil {
		pv.DeckCount--
		pv.Trigger = cardPtr(r)
	}
}

// flip turns one damage card: by identity when known, else the oldest card
// of the other face state whose identity a snapshot did not give.
func (s *viewState) flip(p int, r protocol.CardRef, up bool) {
	dmg := s.damage[p]
	for i := range dmg {
		if dmg[i].ref.InstanceID == r.InstanceID {
			dmg[i].faceUp = up
			return
		}
	}
	for i := range dmg {
		if dmg[i].ref.InstanceID == 0 && dmg[i].faceUp != up {
			dmg[i] = damageCard{ref: r, faceUp: up, guessed: dmg[i].guessed}
			return
		}
	}
}

// decision applies the Decision that ends a batch.
func (s *viewState) decision(d *protocol.DecisionEvent) {
	v := &s.v
	v.ActivePlayer = d.Player
	v.Battle, v.Trigger = clonePtr(d.Battle), clonePtr(d.Trigger)
	v.Choice, v.Ability, v.Order = clonePtr(d.Choice), clonePtr(d.Ability), clonePtr(d.Order)
	v.OpponentChoosing = d.Pending && d.Player >= 0 && d.Player == 1-v.You
	switch {
	case d.Player < 0, v.You == protocol.SeatSpectator:
		// The match ended, or this is a spectator's view: nothing to send
		// (docs/protocol.md §14.4).
		v.LegalIntents = nil
	case d.Player == v.You:
		v.LegalIntents = slices.Clone(d.LegalIntents)
	default:
		// The other seat decides: this seat may only concede.
		v.LegalIntents = []protocol.Intent{protocol.Concede{}}
	}
	// Every unit not listed stands face up at printed power and critical.
	for p := range v.Players {
		pv := &v.Players[p]
		for _, c := range append([]*protocol.CardView{pv.Vanguard}, pv.RearGuards[:]...) {
			if c == nil || c.InstanceID == 0 {
				continue
			}
			c.Rested, c.FaceUp, c.Power, c.Critical = false, true, c.BasePower, c.BaseCritical
		}
	}
	for _, u := range d.Units {
		pv := s.player(u.Player)
		if pv == nil {
			continue
		}
		var c **protocol.CardView
		switch {
		case u.Slot == protocol.SlotVanguard:
			c = &pv.Vanguard
		case validSlot(u.Slot):
			c = &pv.RearGuards[u.Slot]
		default:
			continue
		}
		if *c == nil || (*c).InstanceID != u.Card.InstanceID {
			*c = cardPtr(u.Card) // the owner's face-down starter, or a repair
		}
		(*c).Rested, (*c).FaceUp, (*c).Power, (*c).Critical = u.Rested, u.FaceUp, u.Power, u.Critical
	}
}

// damageOrderGuessed reports whether the order of p's FaceUpDamage is a
// guess: some face-up card's place came from a snapshot's face-down count.
func (s *viewState) damageOrderGuessed(p int) bool {
	for _, d := range s.damage[p] {
		if d.faceUp && d.guessed {
			return true
		}
	}
	return false
}

// diff lists where the kept view differs from a snapshot of the same seq,
// ignoring the clock (it moves with time) and the names (no event carries
// them). Where the order of a player's face-up damage is a guess
// (damageOrderGuessed), the cards are compared and their order is not.
func (s *viewState) diff(server *protocol.MatchView) []string {
	a, b := cloneView(&s.v), cloneView(server)
	a.Clock, b.Clock = protocol.ClockView{}, protocol.ClockView{}
	a.MatchID, b.MatchID = "", ""
	for p := range a.Players {
		a.Players[p].Name, b.Players[p].Name = "", ""
		if s.damageOrderGuessed(p) {
			byID := func(x, y protocol.CardView) int { return x.InstanceID - y.InstanceID }
			slices.SortFunc(a.Players[p].FaceUpDamage, byID)
			slices.SortFunc(b.Players[p].FaceUpDamage, byID)
		}
	}
	var out []string
	diffValue("view", reflect.ValueOf(a), reflect.ValueOf(b), &out)
	return out
}

// diffValue walks two values of one type, treating nil and empty lists as
// equal, and appends a line per differing leaf (at most 16).
func diffValue(path string, a, b reflect.Value, out *[]string) {
	if len(*out) >= 16 {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: local %s, server %s", path, show(a), show(b)))
			}
			return
		}
		diffValue(path, a.Elem(), b.Elem(), out)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() || a.Elem().Type() != b.Elem().Type() {
			if !(a.IsNil() && b.IsNil()) {
				*out = append(*out, fmt.Sprintf("%s: local %v, server %v", path, a, b))
			}
			return
		}
		diffValue(path, a.Elem(), b.Elem(), out)
	case reflect.Struct:
		for i := range a.NumField() {
			diffValue(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i), out)
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			*out = append(*out, fmt.Sprintf("%s: local %d elements %v, server %d %v", path, a.Len(), a, b.Len(), b))
			return
		}
		for i := range a.Len() {
			diffValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), out)
		}
	default:
		if !a.Equal(b) {
			*out = append(*out, fmt.Sprintf("%s: local %v, server %v", path, a, b))
		}
	}
}

func show(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return fmt.Sprintf("%+v", v.Elem())
}
