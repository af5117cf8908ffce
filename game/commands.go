package game

import (
	"fmt"
	"slices"

	"github.com/matchgrain/matchgrain/protocol"
)

// valueIntent returns the value form of an intent given as a pointer
// (*protocol.Call → protocol.Call); a nil pointer becomes nil.
func valueIntent(in protocol.Intent) protocol.Intent {
	switch v := in.(type) {
	case *protocol.Mulligan:
		if v != nil {
			return *v
		}
	case *protocol.FinishMulligan:
		if v != nil {
			return *v
		}
	case *protocol.Ride:
		if v != nil {
			return *v
		}
	case *protocol.SkipRide:
		if v != nil {
			return *v
		}
	case *protocol.Call:
		if v != nil {
			return *v
		}
	case *protocol.Move:
		if v != nil {
			return *v
		}
	case *protocol.EnterBattle:
		if v != nil {
			return *v
		}
	case *protocol.Attack:
		if v != nil {
			return *v
		}
	case *protocol.Guard:
		if v != nil {
			return *v
		}
	case *protocol.Intercept:
		if v != nil {
			return *v
		}
	case *protocol.PassGuard:
		if v != nil {
			return *v
		}
	case *protocol.ResolveTrigger:
		if v != nil {
			return *v
		}
	case *protocol.SelectTrigger:
		if v != nil {
			return *v
		}
	case *protocol.ResolveAbility:
		if v != nil {
			return *v
		}
	case *protocol.Choose:
		if v != nil {
			return *v
		}
	case *protocol.ActivateAbility:
		if v != nil {
			return *v
		}
	case *protocol.EndTurn:
		if v != nil {
			return *v
		}
	case *protocol.Concede:
		if v != nil {
			return *v
		}
	default:
		return in
	}
	return nil
}

// why is the reason a command is not legal, formatted only when a rejection
// is returned: LegalCommands runs the same checks over every candidate and
// must not allocate for the ones it drops. The zero why means legal.
type why struct {
	format string
	n      int
	args   [2]int
}

func because(format string, args ...int) why {
	w := why{format: format, n: len(args)}
	copy(w.args[:], args)
	return w
}

func (w why) ok() bool { return w.format == "" }

// String formats the reason.
func (w why) String() string {
	switch w.n {
	case 0:
		return w.format
	case 1:
		return fmt.Sprintf(w.format, w.args[0])
	}
	return fmt.Sprintf(w.format, w.args[0], w.args[1])
}

var (
	allowed        = why{}
	whyPending     = because("a pending decision must be answered first")
	whyWrongStep   = because("not legal in this phase or step")
	whyNoCard      = because("no such printing in hand")
	whyNoDiscard   = because("no such discard printing in hand")
	whyFirstTurn   = because("the first player has no battle phase on turn 1")
	whyNoOrder     = because("no order decision is open")
	whyNoAbility   = because("no ability decision is open")
	whyNoChoice    = because("no choice is open")
	whyMoved       = because("the unit has moved this turn")
	whySwapMoved   = because("the unit to swap with has moved this turn")
	whyNotSentinel = because("only a sentinel takes a discard")
	whyClan        = because("the discard must be of the sentinel's clan")
	whyIsTarget    = because("the attacked unit cannot intercept")
	whyNoTrigger   = because("no trigger decision is open")
	whyVCOnly      = because("this ability works only on the vanguard circle")
	whyNoACT       = because("the unit has no ACT ability")
	whyUsed        = because("the ability was used this turn")
	whyNeedDiscard = because("the cost needs a discard")
	whyHasDiscard  = because("the cost has no discard")
	whyUnpayable   = because("the cost cannot be paid")
)

// atStage reports whether a phase command may be given at stage st.
func (e *Engine) atStage(st stage) why {
	switch {
	case e.pend.kind != pendNone:
		return whyPending
	case e.stage != st:
		return whyWrongStep
	}
	return allowed
}

// checkIntent is the legality test of every command (docs/rules.md §8) for p, the
// decider. LegalCommands enumerates candidates through the same checks, so
// the two cannot disagree.
func (e *Engine) checkIntent(p int, in protocol.Intent) why {
	switch v := in.(type) {
	case protocol.Mulligan:
		return e.checkMulligan(p, v.HandIndexes)
	case protocol.FinishMulligan:
		return e.atStage(stMulliganWait)
	case protocol.Ride:
		pr, ok := lookupPrinting(v.PrintingID)
		if !ok {
			return whyNoCard
		}
		return e.checkRide(p, pr)
	case protocol.SkipRide:
		return e.atStage(stRideWait)
	case protocol.Call:
		pr, ok := lookupPrinting(v.PrintingID)
		if !ok {
			return whyNoCard
		}
		return e.checkCall(p, pr, v.Slot)
	case protocol.Move:
		return e.checkMove(p, v.FromSlot, v.ToSlot)
	case protocol.EnterBattle:
		return e.checkEnterBattle()
	case protocol.Attack:
		b := slotNone
		if v.BoosterSlot != nil {
			b = *v.BoosterSlot
			if b == slotNone {
				return because("circle %d cannot boost", b)
			}
		}
		return e.checkAttack(p, v.AttackerSlot, v.TargetSlot, b)
	case protocol.Guard:
		pr, ok := lookupPrinting(v.PrintingID)
		if !ok {
			return whyNoCard
		}
		dr, ok := discardIndex(v.DiscardPrintingID)
		if !ok {
			return whyNoDiscard
		}
		return e.checkGuard(p, pr, dr)
	case protocol.Intercept:
		return e.checkIntercept(p, v.Slot)
	case protocol.PassGuard:
		return e.atStage(stGuardWait)
	case protocol.ResolveTrigger:
		return e.checkResolveTrigger(p, v.PowerTarget, v.EffectTarget)
	case protocol.SelectTrigger:
		if e.pend.kind != pendOrder {
			return whyNoOrder
		}
		if v.Index < 0 || v.Index >= len(e.queue[p]) {
			return because("index %d outside 0..%d", v.Index, len(e.queue[p])-1)
		}
	case protocol.ResolveAbility:
		if e.pend.kind != pendAbility {
			return whyNoAbility
		}
	case protocol.Choose:
		if e.pend.kind != pendChoice {
			return whyNoChoice
		}
		if v.Index < 0 || v.Index >= len(e.pend.options) {
			return because("index %d outside 0..%d", v.Index, len(e.pend.options)-1)
		}
	case protocol.ActivateAbility:
		dr, ok := discardIndex(v.DiscardPrintingID)
		if !ok {
			return whyNoDiscard
		}
		return e.checkActivate(p, v.InstanceID, dr)
	case protocol.EndTurn:
		return e.checkEndTurn()
	default:
		return because("intent kind %d is not a command", int(in.IntentKind()))
	}
	return allowed
}

// noDiscard is "no discard printing" for the checks taking a printing index.
const noDiscard = -1

// discardIndex is the printing index of a command's optional discard
// (noDiscard without one); false if it names no printing.
func discardIndex(id *string) (int, bool) {
	if id == nil {
		return noDiscard, true
	}
	d, ok := lookupPrinting(*id)
	return int(d), ok
}

func (e *Engine) checkMulligan(p int, idx []int) why {
	if w := e.atStage(stMulliganWait); !w.ok() {
		return w
	}
	n := len(e.pl[p].hand)
	if len(idx) < 1 || len(idx) > min(handSize, n) {
		return because("mulligan takes 1..%d hand indexes, got %d", min(handSize, n), len(idx))
	}
	var seen uint64
	for _, i := range idx {
		if i < 0 || i >= n || i >= 64 {
			return because("hand index %d outside 0..%d", i, n-1)
		}
		if seen&(1<<i) != 0 {
			return because("hand index %d repeated", i)
		}
		seen |= 1 << i
	}
	return allowed
}

func (e *Engine) checkRide(p int, pr uint8) why {
	if w := e.atStage(stRideWait); !w.ok() {
		return w
	}
	if e.handIndex(p, pr) < 0 {
		return whyNoCard
	}
	if g, vg := printings[pr].Grade, e.vgGrade(p); g != vg && g != vg+1 {
		return because("cannot ride grade %d onto grade %d", g, vg)
	}
	return allowed
}

func (e *Engine) checkCall(p int, pr uint8, slot int) why {
	if w := e.atStage(stMainWait); !w.ok() {
		return w
	}
	if slot < 0 || slot > 4 {
		return because("slot %d is not a rear-guard circle", slot)
	}
	if e.handIndex(p, pr) < 0 {
		return whyNoCard
	}
	if g, vg := printings[pr].Grade, e.vgGrade(p); g > vg {
		return because("cannot call grade %d with a grade %d vanguard", g, vg)
	}
	return allowed
}

// movePairs are the legal (from, to) moves within a column, in canonical order.
var movePairs = [4][2]int{{0, 3}, {2, 4}, {3, 0}, {4, 2}}

func (e *Engine) checkMove(p, from, to int) why {
	if w := e.atStage(stMainWait); !w.ok() {
		return w
	}
	if !slices.Contains(movePairs[:], [2]int{from, to}) {
		return because("cannot move from %d to %d", from, to)
	}
	u := e.pl[p].rc[from]
	if u == 0 {
		return because("no unit on circle %d", from)
	}
	if e.cards[u].moved() {
		return whyMoved
	}
	if w := e.pl[p].rc[to]; w != 0 && e.cards[w].moved() {
		return whySwapMoved
	}
	return allowed
}

func (e *Engine) checkEnterBattle() why {
	if w := e.atStage(stMainWait); !w.ok() {
		return w
	}
	if e.turn == 1 {
		return whyFirstTurn
	}
	return allowed
}

func (e *Engine) checkEndTurn() why {
	if w := e.atStage(stMainWait); !w.ok() && !e.atStage(stAttackWait).ok() {
		return w
	}
	return allowed
}

func isFrontSlot(s int) bool {
	return s == slotVC || s == protocol.SlotFrontLeft || s == protocol.SlotFrontRight
}

// checkAttack checks Attack(a, t, b); b is slotNone for no boost.
func (e *Engine) checkAttack(p, a, t, b int) why {
	if w := e.atStage(stAttackWait); !w.ok() {
		return w
	}
	if !isFrontSlot(a) || !isFrontSlot(t) {
		return because("attacker %d and target %d must be front-row circles", a, t)
	}
	u := e.unitAt(p, a)
	if u == 0 || e.cards[u].rested() {
		return because("no standing unit on circle %d", a)
	}
	if e.unitAt(1-p, t) == 0 {
		return because("no opponent unit on circle %d", t)
	}
	if b != slotNone {
		if b != boosterSlotOf(a) {
			return because("circle %d cannot boost circle %d", b, a)
		}
		w := e.unitAt(p, b)
		if w == 0 || e.cards[w].rested() || e.grade(w) > 1 {
			return because("no standing grade 0-1 unit on circle %d", b)
		}
	}
	return allowed
}

// checkGuard checks Guard(pr, dr); dr is noDiscard or a printing index.
func (e *Engine) checkGuard(p int, pr uint8, dr int) why {
	if w := e.atStage(stGuardWait); !w.ok() {
		return w
	}
	if e.handIndex(p, pr) < 0 {
		return whyNoCard
	}
	if dr == noDiscard {
		return allowed
	}
	if !printings[pr].Sentinel {
		return whyNotSentinel
	}
	need := 1
	if dr == int(pr) {
		need = 2
	}
	if e.handCount(p, uint8(dr)) < need {
		return whyNoDiscard
	}
	if printings[dr].Clan != printings[pr].Clan {
		return whyClan
	}
	return allowed
}

func (e *Engine) checkIntercept(p, slot int) why {
	if w := e.atStage(stGuardWait); !w.ok() {
		return w
	}
	if slot != protocol.SlotFrontLeft && slot != protocol.SlotFrontRight {
		return because("slot %d is not a front-row rear-guard circle", slot)
	}
	u := e.pl[p].rc[slot]
	if u == 0 || e.grade(u) != 2 {
		return because("no grade 2 unit on circle %d", slot)
	}
	if int(e.battle.targetSlot) == slot {
		return whyIsTarget
	}
	return allowed
}

func (e *Engine) checkResolveTrigger(p, pt, et int) why {
	if e.pend.kind != pendTrigger {
		return whyNoTrigger
	}
	var pbuf, ebuf [8]int
	pts, ets := e.triggerTargets(p, pbuf[:0], ebuf[:0])
	if !slices.Contains(pts, pt) || !slices.Contains(ets, et) {
		return because("(%d, %d) is not a legal target pair", pt, et)
	}
	return allowed
}

// checkActivate checks ActivateAbility(instance, dr); dr is noDiscard or a printing index.
func (e *Engine) checkActivate(p, instance, dr int) why {
	if w := e.atStage(stMainWait); !w.ok() {
		return w
	}
	if instance < 1 || instance > maxCards {
		return because("no card %d", instance)
	}
	id := uint8(instance)
	s := e.slotOf(p, id)
	if s == slotNone {
		return because("card %d is not your unit", instance)
	}
	ab := e.abOf(id)
	switch ab.key {
	case protocol.AbilityActDiscardPower:
	case protocol.AbilityActRally:
		if s != slotVC {
			return whyVCOnly
		}
	default:
		return whyNoACT
	}
	if e.cards[id].actUsed() {
		return whyUsed
	}
	if ab.discard != (dr != noDiscard) {
		if ab.discard {
			return whyNeedDiscard
		}
		return whyHasDiscard
	}
	if dr != noDiscard && e.handIndex(p, uint8(dr)) < 0 {
		return whyNoDiscard
	}
	if !e.canPay(p, ab) {
		return whyUnpayable
	}
	return allowed
}

// apply carries out a command that checkIntent accepted.
func (e *Engine) apply(p int, in protocol.Intent) {
	switch v := in.(type) {
	case protocol.Mulligan:
		e.doMulligan(p, v.HandIndexes)
	case protocol.FinishMulligan:
		e.mulliganDone(p)
	case protocol.Ride:
		e.doRide(p, v.PrintingID)
	case protocol.SkipRide:
		e.stage = stMainPhase
	case protocol.Call:
		e.doCall(p, v.PrintingID, v.Slot)
	case protocol.Move:
		e.doMove(p, v.FromSlot, v.ToSlot)
	case protocol.EnterBattle:
		e.stage = stBattleStart
	case protocol.Attack:
		e.doAttack(p, v.AttackerSlot, v.TargetSlot, v.BoosterSlot)
	case protocol.Guard:
		e.doGuard(p, v.PrintingID, v.DiscardPrintingID)
	case protocol.Intercept:
		e.doIntercept(p, v.Slot)
	case protocol.PassGuard:
		if e.battle.attackerSlot == slotVC {
			e.stage = stDriveStep
		} else {
			e.stage = stDamageStep
		}
	case protocol.ResolveTrigger:
		e.pend = pending{}
		e.applyTrigger(v.PowerTarget, v.EffectTarget)
		e.finishCheck()
	case protocol.SelectTrigger:
		q := e.queue[p]
		a := q[v.Index]
		e.queue[p] = append(q[:v.Index], q[v.Index+1:]...)
		e.pend = pending{}
		e.resolveActivation(a)
	case protocol.ResolveAbility:
		a := e.pend.act
		e.pend = pending{}
		if !v.Accept {
			e.resolved(p, a, protocol.OutcomeDeclined)
			return
		}
		e.payCost(p, e.abOf(a.source))
		e.chooseAndApply(p, a)
	case protocol.Choose:
		a, opt := e.pend.act, int(e.pend.options[v.Index])
		e.pend = pending{}
		e.applyEffect(p, a, opt)
	case protocol.ActivateAbility:
		e.doActivate(p, uint8(v.InstanceID), v.DiscardPrintingID)
	case protocol.EndTurn:
		e.battle = battle{}
		e.endTurn()
	}
}

func (e *Engine) doMulligan(p int, idx []int) {
	pl := &e.pl[p]
	sorted := slices.Clone(idx)
	slices.Sort(sorted)
	cards := make([]protocol.CardRef, len(sorted))
	for k, i := range sorted {
		id := pl.hand[i]
		cards[k] = e.ref(id)
		pl.deck = append(pl.deck, id)
	}
	for k := len(sorted) - 1; k >= 0; k-- {
		pl.hand = removeAt(pl.hand, sorted[k])
	}
	e.emit(&protocol.ReturnedToDeckEvent{Player: p, Count: len(cards), Cards: cards, ToBottom: true})
	e.draw(p, len(cards))
	e.shuffleDeck(p)
	e.mulliganDone(p)
}

func (e *Engine) mulliganDone(p int) {
	e.mullDone[p] = true
	if e.mullDone[0] && e.mullDone[1] {
		e.standUp()
	}
}

func (e *Engine) doRide(p int, pid string) {
	pl := &e.pl[p]
	pr, _ := lookupPrinting(pid)
	i := e.handIndex(p, pr)
	id, old := pl.hand[i], pl.vc
	pl.hand = removeAt(pl.hand, i)
	e.resetUnit(id)
	pl.vc = id
	e.resetUnit(old)
	pl.soul = append(pl.soul, old)
	e.emit(&protocol.RideEvent{Player: p, Card: e.ref(id), Previous: e.ref(old)})
	e.emit(&protocol.SoulEvent{Player: p, Card: e.ref(old), Op: protocol.SoulIn, Cause: protocol.SoulCauseRide})
	if e.abOf(old).key == protocol.AbilityRiddenUpon {
		e.queueAbility(activation{source: old, key: protocol.AbilityRiddenUpon})
	}
	if e.abOf(id).key == protocol.AbilityRideSearch {
		e.queueAbility(activation{source: id, key: protocol.AbilityRideSearch})
	}
	e.stage = stMainPhase
}

func (e *Engine) doCall(p int, pid string, slot int) {
	pl := &e.pl[p]
	pr, _ := lookupPrinting(pid)
	i := e.handIndex(p, pr)
	id := pl.hand[i]
	if pl.rc[slot] != 0 {
		e.retire(p, slot, protocol.RetireCall)
	}
	pl.hand = removeAt(pl.hand, i)
	e.resetUnit(id)
	pl.rc[slot] = id
	e.emit(&protocol.CallEvent{Player: p, Card: e.ref(id), Slot: slot})
	if e.abOf(id).key == protocol.AbilityCallModes {
		e.queueAbility(activation{source: id, key: protocol.AbilityCallModes})
	}
}

func (e *Engine) doMove(p, from, to int) {
	pl := &e.pl[p]
	u, w := pl.rc[from], pl.rc[to]
	pl.rc[from], pl.rc[to] = w, u
	e.cards[u].set(flagMoved, true)
	ev := &protocol.MoveEvent{Player: p, Card: e.ref(u), FromSlot: from, ToSlot: to}
	if w != 0 {
		e.cards[w].set(flagMoved, true)
		r := e.ref(w)
		ev.Swapped = &r
	}
	e.emit(ev)
}

func (e *Engine) doAttack(p, a, t int, bs *int) {
	opp := 1 - p
	u, tgt := e.unitAt(p, a), e.unitAt(opp, t)
	e.cards[u].set(flagRested, true)
	e.battle = battle{open: true, attackerSlot: int8(a), targetSlot: int8(t), boosterSlot: slotNone, attacker: u, target: tgt}
	if a == slotVC {
		e.battle.driveTotal = 1
		if e.grade(u) == 3 {
			e.battle.driveTotal = 2
		}
	}
	e.emit(&protocol.AttackEvent{Player: p, Attacker: e.ref(u), AttackerSlot: a, Target: e.ref(tgt), TargetSlot: t})
	var booster uint8
	if bs != nil {
		booster = e.unitAt(p, *bs)
		e.cards[booster].set(flagRested, true)
		e.battle.boosterSlot, e.battle.booster = int8(*bs), booster
		e.emit(&protocol.BoostEvent{Player: p, Booster: e.ref(booster), BoosterSlot: *bs})
	}
	if a != slotVC && e.abOf(u).key == protocol.AbilityAttackPower {
		e.queueAbility(activation{source: u, key: protocol.AbilityAttackPower})
	}
	if booster != 0 && e.abOf(booster).key == protocol.AbilityBoostBonus {
		e.queueAbility(activation{source: booster, key: protocol.AbilityBoostBonus, target: u})
	}
	e.stage = stGuardStep
}

func (e *Engine) doGuard(p int, pid string, d *string) {
	pl := &e.pl[p]
	pr, _ := lookupPrinting(pid)
	i := e.handIndex(p, pr)
	id := pl.hand[i]
	pl.hand = removeAt(pl.hand, i)
	pl.gc = append(pl.gc, id)
	e.emit(&protocol.GuardEvent{Player: p, Card: e.ref(id), FromZone: protocol.ZoneHand, FromSlot: slotNone,
		Shield: printings[pr].Shield, Perfect: d != nil})
	if d == nil {
		return
	}
	src := e.ref(id)
	e.emit(&protocol.AbilityTriggeredEvent{Player: p, Source: src, AbilityKey: protocol.AbilitySentinel})
	dr, _ := lookupPrinting(*d)
	e.discard(p, dr)
	e.battle.perfect = true
	e.emit(&protocol.AbilityResolvedEvent{Player: p, Source: src, AbilityKey: protocol.AbilitySentinel, Outcome: protocol.OutcomeResolved})
}

func (e *Engine) doIntercept(p, slot int) {
	pl := &e.pl[p]
	id := pl.rc[slot]
	pl.rc[slot] = 0
	e.resetUnit(id)
	pl.gc = append(pl.gc, id)
	e.emit(&protocol.GuardEvent{Player: p, Card: e.ref(id), FromZone: protocol.ZoneRC, FromSlot: slot, Shield: e.prOf(id).Shield})
}

func (e *Engine) doActivate(p int, id uint8, d *string) {
	ab := e.abOf(id)
	e.cards[id].set(flagActUsed, true)
	a := activation{source: id, key: ab.key}
	e.emit(&protocol.AbilityTriggeredEvent{Player: p, Source: e.ref(id), AbilityKey: ab.key})
	if d != nil {
		dr, _ := lookupPrinting(*d)
		e.discard(p, dr)
	}
	e.payCost(p, ab)
	e.chooseAndApply(p, a)
}
