package game

import "github.com/matchgrain/matchgrain/protocol"

// startCheck reveals the top card of p's deck into the trigger zone (docs/rules.md §6)
// and resolves its trigger, raising a Trigger decision when ≥2 pairs exist.
func (e *Engine) startCheck(kind uint8, p, index, total int) {
	pl := &e.pl[p]
	id := pl.deck[0]
	pl.deck = removeAt(pl.deck, 0)
	pl.trig = id
	e.check = checkState{kind: kind, owner: uint8(p)}
	t := e.prOf(id).Trigger
	if kind == checkDrive {
		e.emit(&protocol.DriveCheckEvent{Player: p, Card: e.ref(id), Trigger: t, Index: index, Total: total})
	} else {
		e.emit(&protocol.DamageCheckEvent{Player: p, Card: e.ref(id), Trigger: t, Index: index, Total: total})
	}
	switch t {
	case protocol.TriggerNone:
	case protocol.TriggerFront:
		for _, s := range frontSlots {
			if u := e.unitAt(p, s); u != 0 {
				e.cards[u].powTurn += triggerPower
			}
		}
		e.emit(&protocol.TriggerResolvedEvent{Player: p, Card: e.ref(id), Trigger: t, PowerTarget: slotNone, EffectTarget: protocol.EffectTargetNone})
	default:
		var pbuf, ebuf [8]int
		pts, ets := e.triggerTargets(p, pbuf[:0], ebuf[:0])
		if len(pts)*len(ets) >= 2 {
			e.pend = pending{kind: pendTrigger, player: uint8(p)}
			return
		}
		e.applyTrigger(pts[0], ets[0])
	}
	e.finishCheck()
}

// triggerTargets lists the legal power and effect targets of the trigger in
// p's trigger zone; the legal pairs are their product (docs/rules.md §6).
func (e *Engine) triggerTargets(p int, pts, ets []int) ([]int, []int) {
	for s := slotVC; s < 5; s++ {
		if e.unitAt(p, s) != 0 {
			pts = append(pts, s)
		}
	}
	switch e.prOf(e.pl[p].trig).Trigger {
	case protocol.TriggerCritical:
		ets = append(ets, pts...)
	case protocol.TriggerHeal:
		if e.healAllowed(p) {
			if e.faceDownCount(p) > 0 {
				ets = append(ets, protocol.EffectTargetFaceDownDamage)
			}
			for k := range e.faceUpCount(p) {
				ets = append(ets, k)
			}
		} else {
			ets = append(ets, protocol.EffectTargetNone)
		}
	default:
		ets = append(ets, protocol.EffectTargetNone)
	}
	return pts, ets
}

// healAllowed is the heal condition: own damage ≥ 1 and ≥ the opponent's.
func (e *Engine) healAllowed(p int) bool {
	own := len(e.pl[p].damage)
	return own >= 1 && own >= len(e.pl[1-p].damage)
}

// applyTrigger applies the effect of the trigger being checked with the given targets.
func (e *Engine) applyTrigger(pt, et int) {
	p := int(e.check.owner)
	pl := &e.pl[p]
	id := pl.trig
	t := e.prOf(id).Trigger
	if u := e.unitAt(p, pt); u != 0 {
		e.cards[u].powTurn += triggerPower
	}
	ev := &protocol.TriggerResolvedEvent{Player: p, Card: e.ref(id), Trigger: t, PowerTarget: pt, EffectTarget: et}
	switch t {
	case protocol.TriggerCritical:
		if u := e.unitAt(p, et); u != 0 {
			e.cards[u].critTurn++
		}
	case protocol.TriggerHeal:
		if healed := e.heal(p, et); healed != 0 {
			r := e.ref(healed)
			ev.Healed = &r
		}
	}
	e.emit(ev)
	if t == protocol.TriggerDraw {
		e.draw(p, 1)
	}
}

// heal moves the damage card named by et (docs/rules.md §6) to the drop zone and
// returns it, or 0 when et names none.
func (e *Engine) heal(p, et int) uint8 {
	pl := &e.pl[p]
	k := -1
	up := 0
	for i, id := range pl.damage {
		faceUp := e.cards[id].faceUp()
		if (et == protocol.EffectTargetFaceDownDamage && !faceUp) || (et >= 0 && faceUp && up == et) {
			k = i
			break
		}
		if faceUp {
			up++
		}
	}
	if k < 0 {
		return 0
	}
	id := pl.damage[k]
	pl.damage = removeAt(pl.damage, k)
	e.cards[id].set(flagFaceUp, true)
	pl.drop = append(pl.drop, id)
	return id
}

// finishCheck moves the checked card out of the trigger zone: a drive check to
// hand, a damage check face up to damage.
func (e *Engine) finishCheck() {
	p := int(e.check.owner)
	pl := &e.pl[p]
	id := pl.trig
	pl.trig = 0
	b := &e.battle
	if e.check.kind == checkDrive {
		pl.hand = append(pl.hand, id)
		e.emit(&protocol.CardToHandEvent{Player: p, Card: e.ref(id), FromZone: protocol.ZoneTrigger})
		b.driveDone++
	} else {
		e.cards[id].set(flagFaceUp, true)
		pl.damage = append(pl.damage, id)
		e.emit(&protocol.DamageEvent{Player: p, Card: e.ref(id), DamageCount: len(pl.damage)})
		b.dmgDone++
	}
	e.check = checkState{}
}
