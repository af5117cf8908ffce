package bots

import (
	"fmt"

	"github.com/matchgrain/matchgrain/protocol"
)

var slotNames = map[int]string{-1: "VC", 0: "back-left", 1: "back-centre", 2: "back-right", 3: "front-left", 4: "front-right"}

func slot(s int) string {
	if n, ok := slotNames[s]; ok {
		return n
	}
	return fmt.Sprintf("slot %d", s)
}

func card(c protocol.CardRef) string {
	if c.PrintingID == "" {
		return fmt.Sprintf("#%d", c.InstanceID)
	}
	return fmt.Sprintf("%s#%d", c.PrintingID, c.InstanceID)
}

var triggerNames = map[protocol.TriggerType]string{
	protocol.TriggerNone: "no trigger", protocol.TriggerCritical: "CRITICAL", protocol.TriggerDraw: "DRAW",
	protocol.TriggerFront: "FRONT", protocol.TriggerHeal: "HEAL",
}

var finishNames = map[protocol.FinishReason]string{
	protocol.FinishDamage: "damage", protocol.FinishDeckOut: "deck out", protocol.FinishConceded: "concession",
	protocol.FinishTimeout: "timeout", protocol.FinishAbsence: "absence", protocol.FinishDraw: "draw",
}

// describe renders one event as a log line; "" for events not worth a line.
func describe(e protocol.EventEnvelope) string {
	p := func(i int) string { return fmt.Sprintf("P%d", i) }
	var s string
	switch ev := e.Event.(type) {
	case *protocol.GameStartedEvent:
		s = fmt.Sprintf("game started, %s goes first", p(ev.FirstPlayer))
	case *protocol.TurnStartedEvent:
		return fmt.Sprintf("#%-4d ── turn %d: %s ──", e.Seq, ev.TurnNumber, p(ev.Player))
	case *protocol.StandUpEvent:
		s = fmt.Sprintf("stand up: %s vs %s", card(ev.Vanguards[0]), card(ev.Vanguards[1]))
	case *protocol.RideEvent:
		s = fmt.Sprintf("%s rides %s (over %s)", p(ev.Player), card(ev.Card), card(ev.Previous))
	case *protocol.CallEvent:
		s = fmt.Sprintf("%s calls %s to %s", p(ev.Player), card(ev.Card), slot(ev.Slot))
	case *protocol.MoveEvent:
		s = fmt.Sprintf("%s moves %s %s → %s", p(ev.Player), card(ev.Card), slot(ev.FromSlot), slot(ev.ToSlot))
	case *protocol.AttackEvent:
		s = fmt.Sprintf("%s attacks: %s (%s) → %s (%s)", p(ev.Player), card(ev.Attacker), slot(ev.AttackerSlot), card(ev.Target), slot(ev.TargetSlot))
	case *protocol.BoostEvent:
		s = fmt.Sprintf("%s boosts with %s", p(ev.Player), card(ev.Booster))
	case *protocol.GuardEvent:
		perfect := ""
		if ev.Perfect {
			perfect = ", PERFECT GUARD"
		}
		s = fmt.Sprintf("%s guards with %s (shield %d%s)", p(ev.Player), card(ev.Card), ev.Shield, perfect)
	case *protocol.DriveCheckEvent:
		s = fmt.Sprintf("%s drive check %d/%d: %s, %s", p(ev.Player), ev.Index, ev.Total, card(ev.Card), triggerNames[ev.Trigger])
	case *protocol.DamageCheckEvent:
		s = fmt.Sprintf("%s damage check %d/%d: %s, %s", p(ev.Player), ev.Index, ev.Total, card(ev.Card), triggerNames[ev.Trigger])
	case *protocol.TriggerResolvedEvent:
		s = fmt.Sprintf("%s %s trigger", p(ev.Player), triggerNames[ev.Trigger])
		if _, ok := slotNames[ev.PowerTarget]; ok {
			s += ": power to " + slot(ev.PowerTarget)
		}
		if ev.Healed != nil {
			s += ", heals " + card(*ev.Healed)
		}
	case *protocol.BattleResolvedEvent:
		verdict := "MISS"
		if ev.Hit {
			verdict = "HIT"
		}
		s = fmt.Sprintf("battle: %d vs %d → %s", ev.AttackerPower, ev.DefenderPower, verdict)
	case *protocol.DamageEvent:
		s = fmt.Sprintf("%s takes damage %s (now %d)", p(ev.Player), card(ev.Card), ev.DamageCount)
	case *protocol.RetireEvent:
		from := slot(ev.FromSlot)
		if ev.FromZone == protocol.ZoneGC {
			from = "the guardian circle"
		}
		s = fmt.Sprintf("%s's %s retired from %s", p(ev.Player), card(ev.Card), from)
	case *protocol.AbilityResolvedEvent:
		s = fmt.Sprintf("%s ability %d of %s: outcome %d", p(ev.Player), ev.AbilityKey, card(ev.Source), ev.Outcome)
	case *protocol.GameFinishedEvent:
		if ev.Winner == protocol.NoWinner {
			return fmt.Sprintf("#%-4d GAME OVER: draw (%s)", e.Seq, finishNames[ev.Reason])
		}
		return fmt.Sprintf("#%-4d GAME OVER: %s wins by %s", e.Seq, p(ev.Winner), finishNames[ev.Reason])
	default:
		return ""
	}
	return fmt.Sprintf("#%-4d %s", e.Seq, s)
}

// describeIntent renders an intent for the log.
func describeIntent(in protocol.Intent) string {
	switch in := in.(type) {
	case protocol.Mulligan:
		return fmt.Sprintf("mulligan %v", in.HandIndexes)
	case protocol.FinishMulligan:
		return "keep hand"
	case protocol.Ride:
		return "ride " + in.PrintingID
	case protocol.SkipRide:
		return "skip ride"
	case protocol.Call:
		return fmt.Sprintf("call %s to %s", in.PrintingID, slot(in.Slot))
	case protocol.Move:
		return fmt.Sprintf("move %s → %s", slot(in.FromSlot), slot(in.ToSlot))
	case protocol.EnterBattle:
		return "enter battle"
	case protocol.Attack:
		s := fmt.Sprintf("attack %s → %s", slot(in.AttackerSlot), slot(in.TargetSlot))
		if in.BoosterSlot != nil {
			s += " boosted by " + slot(*in.BoosterSlot)
		}
		return s
	case protocol.Guard:
		if in.DiscardPrintingID != nil {
			return fmt.Sprintf("perfect guard %s (discard %s)", in.PrintingID, *in.DiscardPrintingID)
		}
		return "guard " + in.PrintingID
	case protocol.Intercept:
		return "intercept from " + slot(in.Slot)
	case protocol.PassGuard:
		return "no more guards"
	case protocol.ResolveTrigger:
		return fmt.Sprintf("trigger power → %s, effect → %d", slot(in.PowerTarget), in.EffectTarget)
	case protocol.SelectTrigger:
		return fmt.Sprintf("resolve queued ability %d", in.Index)
	case protocol.ResolveAbility:
		if in.Accept {
			return "use ability"
		}
		return "decline ability"
	case protocol.Choose:
		return fmt.Sprintf("choose option %d", in.Index)
	case protocol.ActivateAbility:
		return fmt.Sprintf("activate #%d", in.InstanceID)
	case protocol.EndTurn:
		return "end turn"
	case protocol.Concede:
		return "concede"
	default:
		return fmt.Sprintf("%T", in)
	}
}
