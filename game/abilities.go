package game

import (
	"strconv"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// resolveActivation resolves one queued AUTO activation (docs/rules.md §7.2): fizzle,
// no target, unpayable, the optional-ability decision, then cost and effect.
func (e *Engine) resolveActivation(a activation) {
	p := int(e.cards[a.source].owner())
	if !e.inAbilityZone(p, a) {
		e.resolved(p, a, protocol.OutcomeFizzled)
		return
	}
	ab := e.abOf(a.source)
	if ab.optional {
		if a.key == protocol.AbilityHitRetire && e.rearGuardCount(1-p) == 0 {
			e.resolved(p, a, protocol.OutcomeNoTarget)
			return
		}
		if !e.canPay(p, ab) {
			e.resolved(p, a, protocol.OutcomeUnpayable)
			return
		}
		e.pend = pending{kind: pendAbility, player: uint8(p), act: a}
		return
	}
	e.payCost(p, ab)
	e.chooseAndApply(p, a)
}

// inAbilityZone reports whether the source is still where its ability works.
func (e *Engine) inAbilityZone(p int, a activation) bool {
	switch a.key {
	case protocol.AbilityRiddenUpon:
		return indexOf(e.pl[p].soul, a.source) >= 0
	case protocol.AbilityCallModes, protocol.AbilityAttackPower, protocol.AbilityBoostBonus:
		s := e.slotOf(p, a.source)
		return s >= 0
	default:
		return e.pl[p].vc == a.source
	}
}

// canPay reports whether p can pay the ability's counter-blast and soul-blast.
func (e *Engine) canPay(p int, ab *abilityData) bool {
	return e.faceUpCount(p) >= ab.cb && len(e.pl[p].soul) >= ab.sb
}

// payCost pays the automatic parts of a cost (CB, SB), oldest cards first (D10).
func (e *Engine) payCost(p int, ab *abilityData) {
	if ab.cb > 0 {
		e.counterBlast(p, ab.cb)
	}
	if ab.sb > 0 {
		e.soulBlast(p, ab.sb)
	}
}

// chooseAndApply lists the ability's modes or targets, raises a Choice
// decision when there are ≥2 (D8), and otherwise applies the effect.
func (e *Engine) chooseAndApply(p int, a activation) {
	var buf [16]int16
	opts := buf[:0]
	kind := protocol.ChoiceTarget
	switch a.key {
	case protocol.AbilityRideSearch:
		kind = protocol.ChoiceSearchCard
		opts = e.searchCandidates(p, e.abOf(a.source).grade, opts)
		if len(opts) == 0 {
			e.emit(&protocol.SearchFailedViewEvent{Player: p, Query: searchQuery(e.abOf(a.source).grade)})
			e.shuffleDeck(p)
			e.resolved(p, a, protocol.OutcomeResolved)
			return
		}
	case protocol.AbilityCallModes:
		kind = protocol.ChoiceMode
		opts = append(opts, 0, 1)
		if e.faceDownCount(p) > 0 {
			opts = append(opts, 2)
		}
	case protocol.AbilityHitRetire:
		for s, u := range e.pl[1-p].rc {
			if u != 0 {
				opts = append(opts, int16(s))
			}
		}
		if len(opts) == 0 {
			e.resolved(p, a, protocol.OutcomeNoTarget)
			return
		}
	case protocol.AbilityActDiscardPower:
		for _, s := range frontSlots {
			if e.unitAt(p, s) != 0 {
				opts = append(opts, int16(s))
			}
		}
	default:
		e.applyEffect(p, a, 0)
		return
	}
	if len(opts) >= 2 {
		e.pend = pending{kind: pendChoice, player: uint8(p), act: a, choice: kind, options: append([]int16(nil), opts...)}
		return
	}
	e.applyEffect(p, a, int(opts[0]))
}

// searchCandidates appends the distinct printings of grade in p's deck, in id order.
func (e *Engine) searchCandidates(p, grade int, dst []int16) []int16 {
	var seen [256]bool
	for _, id := range e.pl[p].deck {
		if e.grade(id) == grade {
			seen[e.cards[id].pr] = true
		}
	}
	for i := range printings {
		if seen[i] {
			dst = append(dst, int16(i))
		}
	}
	return dst
}

func searchQuery(grade int) string { return "grade=" + strconv.Itoa(grade) }

// shuffleDeck shuffles p's deck with the match RNG and says so.
func (e *Engine) shuffleDeck(p int) {
	shuffle(&e.rng, e.pl[p].deck)
	e.emit(&protocol.DeckShuffledEvent{Player: p})
}

// applyEffect applies an ability's effect with the chosen option (a mode, a
// slot or a printing index) and emits AbilityResolved.
func (e *Engine) applyEffect(p int, a activation, opt int) {
	ab := e.abOf(a.source)
	ev := &protocol.AbilityResolvedEvent{Player: p, Source: e.ref(a.source), AbilityKey: a.key, Outcome: protocol.OutcomeResolved}
	switch a.key {
	case protocol.AbilityRiddenUpon:
		if ab.ridden == catalog.RiddenDraw1 {
			e.draw(p, 1)
		} else {
			e.soulCharge(p, 1)
		}
	case protocol.AbilityRideSearch:
		pl := &e.pl[p]
		for i, id := range pl.deck {
			if int(e.cards[id].pr) == opt {
				pl.deck = removeAt(pl.deck, i)
				pl.hand = append(pl.hand, id)
				e.emit(&protocol.CardSearchedViewEvent{Player: p, Card: e.ref(id), Query: searchQuery(ab.grade)})
				ev.AddedToHand = 1
				break
			}
		}
		e.shuffleDeck(p)
	case protocol.AbilityCallModes:
		switch opt {
		case 0:
			e.cards[a.source].powTurn += callModesPower
		case 1:
			e.soulCharge(p, 1)
		case 2:
			e.counterCharge(p, 1)
		}
		ev.Mode = &opt
	case protocol.AbilityAttackPower:
		e.cards[a.source].powBattle += int32(ab.power)
	case protocol.AbilityBoostBonus:
		if s := e.slotOf(p, a.target); s != slotNone && e.battle.open && e.battle.attacker == a.target {
			e.cards[a.target].powBattle += int32(ab.power)
			ev.Target = &s
		}
	case protocol.AbilityHitRetire:
		e.retire(1-p, opt, protocol.RetireEffect)
		ev.Target = &opt
	case protocol.AbilityHitDraw:
		e.draw(p, 1)
	case protocol.AbilityActDiscardPower:
		if u := e.unitAt(p, opt); u != 0 {
			e.cards[u].powTurn += int32(ab.power)
		}
		ev.Target = &opt
	case protocol.AbilityActRally:
		for _, s := range frontSlots[1:] {
			if u := e.unitAt(p, s); u != 0 {
				e.cards[u].powTurn += int32(ab.power)
			}
		}
	}
	e.emit(ev)
}

// resolved emits an AbilityResolved without an effect (fizzled, declined, ...).
func (e *Engine) resolved(p int, a activation, outcome protocol.AbilityOutcome) {
	e.emit(&protocol.AbilityResolvedEvent{Player: p, Source: e.ref(a.source), AbilityKey: a.key, Outcome: outcome})
}
