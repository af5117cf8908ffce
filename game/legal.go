package game

import "github.com/matchgrain/matchgrain/protocol"

// LegalCommands lists what player may send now, in the canonical order of
// docs/rules.md §8 (by intent key, then fields ascending, nil first). The decider's
// list ends with Concede; any other player gets [Concede]; a finished match
// gives an empty list. Concede is listed because the server accepts it from
// either player at any time, but Execute refuses it: the server calls Finish.
func (e *Engine) LegalCommands(player int) []protocol.Intent {
	if e.finished || (player != 0 && player != 1) {
		return []protocol.Intent{}
	}
	if player != e.Decider() {
		return []protocol.Intent{protocol.Concede{}}
	}
	l := lister{e: e, p: player, out: make([]protocol.Intent, 0, 16)}
	l.all()
	return append(l.out, protocol.Concede{})
}

// lister enumerates candidate commands through the typed checks of
// checkIntent; only accepted candidates are boxed into intents.
type lister struct {
	e   *Engine
	p   int
	out []protocol.Intent
}

func (l *lister) all() {
	e, p := l.e, l.p
	switch e.pend.kind {
	case pendTrigger:
		var pbuf, ebuf [8]int
		pts, ets := e.triggerTargets(p, pbuf[:0], ebuf[:0])
		for _, pt := range pts {
			for _, et := range ets {
				l.out = append(l.out, protocol.ResolveTrigger{PowerTarget: pt, EffectTarget: et})
			}
		}
		return
	case pendOrder:
		for i := range e.queue[p] {
			l.out = append(l.out, protocol.SelectTrigger{Index: i})
		}
		return
	case pendAbility:
		l.out = append(l.out, protocol.ResolveAbility{Accept: false}, protocol.ResolveAbility{Accept: true})
		return
	case pendChoice:
		for i := range e.pend.options {
			l.out = append(l.out, protocol.Choose{Index: i})
		}
		return
	}
	var buf [32]uint8
	hand := e.handPrintings(p, buf[:0])
	switch e.stage {
	case stMulliganWait:
		l.mulligans(len(e.pl[p].hand))
		l.out = append(l.out, protocol.FinishMulligan{})
	case stRideWait:
		for _, pr := range hand {
			if e.checkRide(p, pr).ok() {
				l.out = append(l.out, protocol.Ride{PrintingID: printings[pr].ID})
			}
		}
		l.out = append(l.out, protocol.SkipRide{})
	case stMainWait:
		for _, pr := range hand {
			for s := range 5 {
				if e.checkCall(p, pr, s).ok() {
					l.out = append(l.out, protocol.Call{PrintingID: printings[pr].ID, Slot: s})
				}
			}
		}
		for _, m := range movePairs {
			if e.checkMove(p, m[0], m[1]).ok() {
				l.out = append(l.out, protocol.Move{FromSlot: m[0], ToSlot: m[1]})
			}
		}
		if e.checkEnterBattle().ok() {
			l.out = append(l.out, protocol.EnterBattle{})
		}
		l.activations(hand)
		l.out = append(l.out, protocol.EndTurn{})
	case stAttackWait:
		for _, a := range frontSlots {
			for _, t := range frontSlots {
				if e.checkAttack(p, a, t, slotNone).ok() {
					l.out = append(l.out, protocol.Attack{AttackerSlot: a, TargetSlot: t})
				}
				if b := boosterSlotOf(a); e.checkAttack(p, a, t, b).ok() {
					l.out = append(l.out, protocol.Attack{AttackerSlot: a, TargetSlot: t, BoosterSlot: protocol.IntPtr(b)})
				}
			}
		}
		l.out = append(l.out, protocol.EndTurn{})
	case stGuardWait:
		for _, pr := range hand {
			if e.checkGuard(p, pr, noDiscard).ok() {
				l.out = append(l.out, protocol.Guard{PrintingID: printings[pr].ID})
			}
			if printings[pr].Sentinel {
				for _, dr := range hand {
					if e.checkGuard(p, pr, int(dr)).ok() {
						l.out = append(l.out, protocol.Guard{PrintingID: printings[pr].ID, DiscardPrintingID: protocol.StringPtr(printings[dr].ID)})
					}
				}
			}
		}
		for _, s := range []int{protocol.SlotFrontLeft, protocol.SlotFrontRight} {
			if e.checkIntercept(p, s).ok() {
				l.out = append(l.out, protocol.Intercept{Slot: s})
			}
		}
		l.out = append(l.out, protocol.PassGuard{})
	}
}

// mulligans appends every non-empty subset of at most 5 of n hand indexes,
// as ascending lists in lexicographic order ([0], [0 1], [0 1 2], ...).
func (l *lister) mulligans(n int) {
	var cur [handSize]int
	var rec func(depth, from int)
	rec = func(depth, from int) {
		for i := from; i < n; i++ {
			cur[depth] = i
			l.out = append(l.out, protocol.Mulligan{HandIndexes: append([]int(nil), cur[:depth+1]...)})
			if depth+1 < handSize {
				rec(depth+1, i+1)
			}
		}
	}
	rec(0, 0)
}

// activations appends the ACT abilities p can start, by instance id then discard.
func (l *lister) activations(hand []uint8) {
	e, p := l.e, l.p
	var units [6]uint8
	n := 0
	for s := slotVC; s < 5; s++ {
		if u := e.unitAt(p, s); u != 0 {
			switch e.abOf(u).key {
			case protocol.AbilityActDiscardPower, protocol.AbilityActRally:
				units[n] = u
				n++
			}
		}
	}
	sortIDs(units[:n])
	for _, u := range units[:n] {
		if e.checkActivate(p, int(u), noDiscard).ok() {
			l.out = append(l.out, protocol.ActivateAbility{InstanceID: int(u)})
		}
		for _, dr := range hand {
			if e.checkActivate(p, int(u), int(dr)).ok() {
				l.out = append(l.out, protocol.ActivateAbility{InstanceID: int(u), DiscardPrintingID: protocol.StringPtr(printings[dr].ID)})
			}
		}
	}
}

// sortIDs is an insertion sort for the few units on the field.
func sortIDs(s []uint8) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
