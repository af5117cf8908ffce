package game

import (
	"fmt"

	"github.com/matchgrain/matchgrain/protocol"
)

// zoneModel is a "dumb reference" of where every card is, rebuilt only from
// the full event stream (as the etcd-raft tests compare against a simple
// model). After every command it must agree with the engine's zones, which
// proves that every zone change has an event; and since it knows each card's
// zone before and after each event, it decides whether an event shown to the
// opponent may name a card (docs/rules.md §14.7).
type zoneModel struct {
	zone    [maxCards + 1]mzone
	slot    [maxCards + 1]int8 // rear-guard circle, for mRC
	owner   [maxCards + 1]uint8
	printID [maxCards + 1]string
	vc      [2]uint8
	rc      [2][5]uint8
}

type mzone uint8

const (
	mDeck mzone = iota
	mHand
	mVCDown // the starter before stand-up
	mVC
	mRC
	mGC
	mSoul
	mDrop
	mDamageUp
	mDamageDown
	mTrigger
)

var mzoneNames = [...]string{"deck", "hand", "vc(face-down)", "vc", "rc", "gc", "soul", "drop", "damage(up)", "damage(down)", "trigger"}

func (z mzone) String() string {
	if int(z) < len(mzoneNames) {
		return mzoneNames[z]
	}
	return fmt.Sprintf("zone(%d)", z)
}

// public reports whether the opponent may know which card is in zone z.
func (z mzone) public() bool {
	switch z {
	case mDeck, mHand, mVCDown, mDamageDown:
		return false
	}
	return true
}

// newZoneModel starts where New starts before its first event: every card
// in its owner's deck except the starters, face down on VC.
func newZoneModel(e *Engine) *zoneModel {
	m := &zoneModel{}
	for id := 1; id <= maxCards; id++ {
		c := &e.cards[id]
		m.owner[id] = c.owner()
		m.printID[id] = printings[c.pr].ID
		if printings[c.pr].Starter {
			m.zone[id] = mVCDown
			m.vc[c.owner()] = uint8(id)
		}
	}
	return m
}

// move moves a card from zone from to zone to, checking where it was.
func (m *zoneModel) move(r protocol.CardRef, from, to mzone) error {
	id := r.InstanceID
	if id < 1 || id > maxCards {
		return fmt.Errorf("card ref %v has no such instance", r)
	}
	if m.printID[id] != r.PrintingID {
		return fmt.Errorf("card ref %v: instance %d is %s", r, id, m.printID[id])
	}
	if m.zone[id] != from {
		return fmt.Errorf("card %d expected in %v, model has it in %v", id, from, m.zone[id])
	}
	p := m.owner[id]
	if from == mRC {
		m.rc[p][m.slot[id]] = 0
	}
	if from == mVC || from == mVCDown {
		m.vc[p] = 0
	}
	m.zone[id] = to
	if to == mVC || to == mVCDown {
		m.vc[p] = uint8(id)
	}
	return nil
}

func (m *zoneModel) toRC(r protocol.CardRef, from mzone, slot int) error {
	if slot < 0 || slot > 4 {
		return fmt.Errorf("rear-guard slot %d", slot)
	}
	if err := m.move(r, from, mRC); err != nil {
		return err
	}
	p := m.owner[r.InstanceID]
	if m.rc[p][slot] != 0 {
		return fmt.Errorf("card %d called onto occupied circle %d", r.InstanceID, slot)
	}
	m.rc[p][slot] = uint8(r.InstanceID)
	m.slot[r.InstanceID] = int8(slot)
	return nil
}

// refs returns every card an event names, for the hidden-information scan.
func eventRefs(ev protocol.Event) []protocol.CardRef {
	switch v := ev.(type) {
	case *protocol.CardsDrawnEvent:
		return v.Cards
	case *protocol.ReturnedToDeckEvent:
		return v.Cards
	case *protocol.StandUpEvent:
		return v.Vanguards[:]
	case *protocol.RideEvent:
		return []protocol.CardRef{v.Card, v.Previous}
	case *protocol.SoulEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.CallEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.MoveEvent:
		if v.Swapped != nil {
			return []protocol.CardRef{v.Card, *v.Swapped}
		}
		return []protocol.CardRef{v.Card}
	case *protocol.AttackEvent:
		return []protocol.CardRef{v.Attacker, v.Target}
	case *protocol.BoostEvent:
		return []protocol.CardRef{v.Booster}
	case *protocol.GuardEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.DriveCheckEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.DamageCheckEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.TriggerResolvedEvent:
		if v.Healed != nil {
			return []protocol.CardRef{v.Card, *v.Healed}
		}
		return []protocol.CardRef{v.Card}
	case *protocol.DamageEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.RetireEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.DiscardEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.CardToHandEvent:
		return []protocol.CardRef{v.Card}
	case *protocol.DamageFlippedEvent:
		return v.Cards
	case *protocol.AbilityTriggeredEvent:
		return []protocol.CardRef{v.Source}
	case *protocol.AbilityResolvedEvent:
		return []protocol.CardRef{v.Source}
	case *protocol.CardSearchedViewEvent:
		return []protocol.CardRef{v.Card}
	}
	return nil
}

// apply updates the model with one full (unprojected) event.
func (m *zoneModel) apply(ev protocol.Event) error {
	switch v := ev.(type) {
	case *protocol.CardsDrawnEvent:
		if v.Count != len(v.Cards) {
			return fmt.Errorf("CardsDrawn count %d with %d cards", v.Count, len(v.Cards))
		}
		for _, c := range v.Cards {
			if err := m.move(c, mDeck, mHand); err != nil {
				return err
			}
		}
	case *protocol.ReturnedToDeckEvent:
		if v.Count != len(v.Cards) {
			return fmt.Errorf("ReturnedToDeck count %d with %d cards", v.Count, len(v.Cards))
		}
		for _, c := range v.Cards {
			if err := m.move(c, mHand, mDeck); err != nil {
				return err
			}
		}
	case *protocol.StandUpEvent:
		for _, c := range v.Vanguards {
			if err := m.move(c, mVCDown, mVC); err != nil {
				return err
			}
		}
	case *protocol.RideEvent:
		if err := m.move(v.Previous, mVC, mSoul); err != nil {
			return err
		}
		return m.move(v.Card, mHand, mVC)
	case *protocol.SoulEvent:
		switch {
		case v.Op == protocol.SoulIn && v.Cause == protocol.SoulCauseRide:
			if m.zone[v.Card.InstanceID] != mSoul {
				return fmt.Errorf("Soul(ride) card %d is not in the soul", v.Card.InstanceID)
			}
		case v.Op == protocol.SoulIn && v.Cause == protocol.SoulCauseCharge:
			return m.move(v.Card, mDeck, mSoul)
		case v.Op == protocol.SoulOut && v.Cause == protocol.SoulCauseBlast:
			return m.move(v.Card, mSoul, mDrop)
		default:
			return fmt.Errorf("Soul event op %d cause %d", v.Op, v.Cause)
		}
	case *protocol.CallEvent:
		return m.toRC(v.Card, mHand, v.Slot)
	case *protocol.MoveEvent:
		p := m.owner[v.Card.InstanceID]
		if m.rc[p][v.FromSlot] != uint8(v.Card.InstanceID) {
			return fmt.Errorf("Move: card %d is not on circle %d", v.Card.InstanceID, v.FromSlot)
		}
		if v.Swapped != nil {
			if m.rc[p][v.ToSlot] != uint8(v.Swapped.InstanceID) {
				return fmt.Errorf("Move: swapped card %d is not on circle %d", v.Swapped.InstanceID, v.ToSlot)
			}
			m.slot[v.Swapped.InstanceID] = int8(v.FromSlot)
		} else if m.rc[p][v.ToSlot] != 0 {
			return fmt.Errorf("Move onto occupied circle %d without a swap", v.ToSlot)
		}
		m.rc[p][v.FromSlot], m.rc[p][v.ToSlot] = m.rc[p][v.ToSlot], m.rc[p][v.FromSlot]
		m.slot[v.Card.InstanceID] = int8(v.ToSlot)
	case *protocol.GuardEvent:
		if v.FromZone == protocol.ZoneRC {
			return m.move(v.Card, mRC, mGC)
		}
		return m.move(v.Card, mHand, mGC)
	case *protocol.DriveCheckEvent:
		return m.move(v.Card, mDeck, mTrigger)
	case *protocol.DamageCheckEvent:
		return m.move(v.Card, mDeck, mTrigger)
	case *protocol.TriggerResolvedEvent:
		if v.Healed != nil {
			from := m.zone[v.Healed.InstanceID]
			if from != mDamageUp && from != mDamageDown {
				return fmt.Errorf("healed card %d is in %v", v.Healed.InstanceID, from)
			}
			return m.move(*v.Healed, from, mDrop)
		}
	case *protocol.DamageEvent:
		return m.move(v.Card, mTrigger, mDamageUp)
	case *protocol.RetireEvent:
		from := mRC
		if v.FromZone == protocol.ZoneGC {
			from = mGC
		}
		return m.move(v.Card, from, mDrop)
	case *protocol.DiscardEvent:
		return m.move(v.Card, mHand, mDrop)
	case *protocol.CardToHandEvent:
		return m.move(v.Card, mTrigger, mHand)
	case *protocol.DamageFlippedEvent:
		from, to := mDamageUp, mDamageDown
		if v.FaceUp {
			from, to = to, from
		}
		for _, c := range v.Cards {
			if err := m.move(c, from, to); err != nil {
				return err
			}
		}
	case *protocol.CardSearchedViewEvent:
		return m.move(v.Card, mDeck, mHand)
	}
	return nil
}

// actualZones is where the engine says every card is.
func (e *Engine) actualZones() (z [maxCards + 1]mzone, slot [maxCards + 1]int8) {
	for i := range z {
		z[i] = 255
	}
	for p := range e.pl {
		pl := &e.pl[p]
		for _, zl := range [...]struct {
			ids []uint8
			z   mzone
		}{{pl.deck, mDeck}, {pl.hand, mHand}, {pl.soul, mSoul}, {pl.gc, mGC}, {pl.drop, mDrop}} {
			for _, id := range zl.ids {
				z[id] = zl.z
			}
		}
		for _, id := range pl.damage {
			z[id] = mDamageDown
			if e.cards[id].faceUp() {
				z[id] = mDamageUp
			}
		}
		z[pl.vc] = mVCDown
		if e.cards[pl.vc].faceUp() {
			z[pl.vc] = mVC
		}
		for s, id := range pl.rc {
			if id != 0 {
				z[id], slot[id] = mRC, int8(s)
			}
		}
		if pl.trig != 0 {
			z[pl.trig] = mTrigger
		}
	}
	return z, slot
}

// agrees checks the model against the engine's zones.
func (m *zoneModel) agrees(e *Engine) error {
	zs, ss := e.actualZones()
	for id := 1; id <= maxCards; id++ {
		z, s := zs[id], ss[id]
		if z != m.zone[id] || (z == mRC && s != m.slot[id]) {
			return fmt.Errorf("card %d (%s): engine has %v/%d, events say %v/%d", id, m.printID[id], z, s, m.zone[id], m.slot[id])
		}
	}
	return nil
}
