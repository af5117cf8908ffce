package game

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/matchgrain/matchgrain/protocol"
)

// The readable text forms of intents and events used by the golden scripts
// and by failure messages.

var (
	phaseNames   = [...]string{"setup", "stand", "draw", "ride", "main", "battle", "end", "finished"}
	stepNames    = [...]string{"none", "start", "attack", "guard", "drive", "damage", "close"}
	triggerNames = [...]string{"none", "critical", "draw", "front", "heal"}
	outcomeNames = [...]string{"resolved", "declined", "fizzled", "no-target", "unpayable"}
	reasonNames  = [...]string{"damage", "deck-out", "conceded", "timeout", "absence", "draw"}
	zoneNames    = [...]string{"deck", "hand", "vc", "rc", "gc", "soul", "drop", "damage", "trigger"}
	choiceNames  = [...]string{"mode", "target", "search"}
)

func name[T ~int](names []string, v T) string {
	if int(v) >= 0 && int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}

func abilityName(k protocol.AbilityKey) string {
	if k == protocol.AbilitySentinel {
		return "SEN"
	}
	return "A" + strconv.Itoa(int(k))
}

func optSlot(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func optString(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// formatIntent renders an intent in the script syntax parseIntent reads.
func formatIntent(in protocol.Intent) string {
	switch v := valueIntent(in).(type) {
	case nil:
		return "<nil>"
	case protocol.Mulligan:
		s := make([]string, len(v.HandIndexes))
		for i, x := range v.HandIndexes {
			s[i] = strconv.Itoa(x)
		}
		return strings.TrimSpace("mulligan " + strings.Join(s, " "))
	case protocol.FinishMulligan:
		return "finish-mulligan"
	case protocol.Ride:
		return "ride " + v.PrintingID
	case protocol.SkipRide:
		return "skip-ride"
	case protocol.Call:
		return fmt.Sprintf("call %s %d", v.PrintingID, v.Slot)
	case protocol.Move:
		return fmt.Sprintf("move %d %d", v.FromSlot, v.ToSlot)
	case protocol.EnterBattle:
		return "enter-battle"
	case protocol.Attack:
		return fmt.Sprintf("attack %d %d %s", v.AttackerSlot, v.TargetSlot, optSlot(v.BoosterSlot))
	case protocol.Guard:
		if v.DiscardPrintingID == nil {
			return "guard " + v.PrintingID
		}
		return "guard " + v.PrintingID + " " + *v.DiscardPrintingID
	case protocol.Intercept:
		return fmt.Sprintf("intercept %d", v.Slot)
	case protocol.PassGuard:
		return "pass-guard"
	case protocol.ResolveTrigger:
		return fmt.Sprintf("resolve-trigger %d %d", v.PowerTarget, v.EffectTarget)
	case protocol.SelectTrigger:
		return fmt.Sprintf("select-trigger %d", v.Index)
	case protocol.ResolveAbility:
		return "resolve-ability " + yesNo(v.Accept)
	case protocol.Choose:
		return fmt.Sprintf("choose %d", v.Index)
	case protocol.ActivateAbility:
		return fmt.Sprintf("activate %d %s", v.InstanceID, optString(v.DiscardPrintingID))
	case protocol.EndTurn:
		return "end-turn"
	case protocol.Concede:
		return "concede"
	default:
		return fmt.Sprintf("intent(%d)", in.IntentKind())
	}
}

func formatIntents(l []protocol.Intent) string {
	s := make([]string, len(l))
	for i, in := range l {
		s[i] = formatIntent(in)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// parseIntent reads the script syntax of formatIntent.
func parseIntent(s string) (protocol.Intent, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil, fmt.Errorf("empty intent")
	}
	ints := func(args []string) ([]int, error) {
		out := make([]int, len(args))
		for i, a := range args {
			v, err := strconv.Atoi(a)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", s, err)
			}
			out[i] = v
		}
		return out, nil
	}
	want := func(n int) error {
		if len(f)-1 != n {
			return fmt.Errorf("%q: want %d arguments", s, n)
		}
		return nil
	}
	optInt := func(a string) (*int, error) {
		if a == "-" {
			return nil, nil
		}
		v, err := strconv.Atoi(a)
		return &v, err
	}
	optStr := func(a string) *string {
		if a == "-" {
			return nil
		}
		return &a
	}
	switch f[0] {
	case "mulligan":
		idx, err := ints(f[1:])
		return protocol.Mulligan{HandIndexes: idx}, err
	case "finish-mulligan":
		return protocol.FinishMulligan{}, want(0)
	case "ride":
		if err := want(1); err != nil {
			return nil, err
		}
		return protocol.Ride{PrintingID: f[1]}, nil
	case "skip-ride":
		return protocol.SkipRide{}, want(0)
	case "call":
		if err := want(2); err != nil {
			return nil, err
		}
		slot, err := strconv.Atoi(f[2])
		return protocol.Call{PrintingID: f[1], Slot: slot}, err
	case "move":
		if err := want(2); err != nil {
			return nil, err
		}
		v, err := ints(f[1:])
		if err != nil {
			return nil, err
		}
		return protocol.Move{FromSlot: v[0], ToSlot: v[1]}, nil
	case "enter-battle":
		return protocol.EnterBattle{}, want(0)
	case "attack":
		if err := want(3); err != nil {
			return nil, err
		}
		v, err := ints(f[1:3])
		if err != nil {
			return nil, err
		}
		b, err := optInt(f[3])
		return protocol.Attack{AttackerSlot: v[0], TargetSlot: v[1], BoosterSlot: b}, err
	case "guard":
		switch len(f) {
		case 2:
			return protocol.Guard{PrintingID: f[1]}, nil
		case 3:
			return protocol.Guard{PrintingID: f[1], DiscardPrintingID: optStr(f[2])}, nil
		}
		return nil, fmt.Errorf("%q: want 1 or 2 arguments", s)
	case "intercept":
		if err := want(1); err != nil {
			return nil, err
		}
		v, err := strconv.Atoi(f[1])
		return protocol.Intercept{Slot: v}, err
	case "pass-guard":
		return protocol.PassGuard{}, want(0)
	case "resolve-trigger":
		if err := want(2); err != nil {
			return nil, err
		}
		v, err := ints(f[1:])
		if err != nil {
			return nil, err
		}
		return protocol.ResolveTrigger{PowerTarget: v[0], EffectTarget: v[1]}, nil
	case "select-trigger":
		if err := want(1); err != nil {
			return nil, err
		}
		v, err := strconv.Atoi(f[1])
		return protocol.SelectTrigger{Index: v}, err
	case "resolve-ability":
		if err := want(1); err != nil {
			return nil, err
		}
		return protocol.ResolveAbility{Accept: f[1] == "yes"}, nil
	case "choose":
		if err := want(1); err != nil {
			return nil, err
		}
		v, err := strconv.Atoi(f[1])
		return protocol.Choose{Index: v}, err
	case "activate":
		if err := want(2); err != nil {
			return nil, err
		}
		v, err := strconv.Atoi(f[1])
		return protocol.ActivateAbility{InstanceID: v, DiscardPrintingID: optStr(f[2])}, err
	case "end-turn":
		return protocol.EndTurn{}, want(0)
	case "concede":
		return protocol.Concede{}, want(0)
	}
	return nil, fmt.Errorf("unknown intent %q", f[0])
}

func cardText(c protocol.CardRef) string {
	if c.InstanceID == 0 && c.PrintingID == "" {
		return "?"
	}
	return fmt.Sprintf("#%d %s", c.InstanceID, c.PrintingID)
}

func cardsText(cs []protocol.CardRef) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = cardText(c)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func optCard(c *protocol.CardRef) string {
	if c == nil {
		return "-"
	}
	return cardText(*c)
}

// formatEvent renders one event on one line.
func formatEvent(ev protocol.Event) string {
	switch v := ev.(type) {
	case *protocol.GameStartedEvent:
		return fmt.Sprintf("GameStarted first=p%d deck=%v", v.FirstPlayer, v.DeckSize)
	case *protocol.TurnStartedEvent:
		return fmt.Sprintf("TurnStarted turn=%d p%d", v.TurnNumber, v.Player)
	case *protocol.PhaseStartedEvent:
		if v.Step != protocol.StepNone {
			return fmt.Sprintf("PhaseStarted %s/%s", name(phaseNames[:], v.Phase), name(stepNames[:], v.Step))
		}
		return "PhaseStarted " + name(phaseNames[:], v.Phase)
	case *protocol.CardsDrawnEvent:
		return fmt.Sprintf("CardsDrawn p%d n=%d %s", v.Player, v.Count, cardsText(v.Cards))
	case *protocol.ReturnedToDeckEvent:
		return fmt.Sprintf("ReturnedToDeck p%d n=%d %s bottom=%s", v.Player, v.Count, cardsText(v.Cards), yesNo(v.ToBottom))
	case *protocol.DeckShuffledEvent:
		return fmt.Sprintf("DeckShuffled p%d", v.Player)
	case *protocol.StandUpEvent:
		return fmt.Sprintf("StandUp %s %s", cardText(v.Vanguards[0]), cardText(v.Vanguards[1]))
	case *protocol.RideEvent:
		return fmt.Sprintf("Ride p%d %s over %s", v.Player, cardText(v.Card), cardText(v.Previous))
	case *protocol.SoulEvent:
		op := "in"
		if v.Op == protocol.SoulOut {
			op = "out"
		}
		return fmt.Sprintf("Soul p%d %s %s cause=%s", v.Player, op, cardText(v.Card), []string{"ride", "charge", "blast"}[v.Cause])
	case *protocol.CallEvent:
		return fmt.Sprintf("Call p%d %s to %d", v.Player, cardText(v.Card), v.Slot)
	case *protocol.MoveEvent:
		return fmt.Sprintf("Move p%d %s %d->%d swapped=%s", v.Player, cardText(v.Card), v.FromSlot, v.ToSlot, optCard(v.Swapped))
	case *protocol.AttackEvent:
		return fmt.Sprintf("Attack p%d %s at %d -> %s at %d", v.Player, cardText(v.Attacker), v.AttackerSlot, cardText(v.Target), v.TargetSlot)
	case *protocol.BoostEvent:
		return fmt.Sprintf("Boost p%d %s at %d", v.Player, cardText(v.Booster), v.BoosterSlot)
	case *protocol.GuardEvent:
		return fmt.Sprintf("Guard p%d %s from=%s/%d shield=%d perfect=%s", v.Player, cardText(v.Card), name(zoneNames[:], v.FromZone), v.FromSlot, v.Shield, yesNo(v.Perfect))
	case *protocol.DriveCheckEvent:
		return fmt.Sprintf("DriveCheck p%d %d/%d %s trigger=%s", v.Player, v.Index, v.Total, cardText(v.Card), name(triggerNames[:], v.Trigger))
	case *protocol.DamageCheckEvent:
		return fmt.Sprintf("DamageCheck p%d %d/%d %s trigger=%s", v.Player, v.Index, v.Total, cardText(v.Card), name(triggerNames[:], v.Trigger))
	case *protocol.TriggerResolvedEvent:
		return fmt.Sprintf("TriggerResolved p%d %s %s power=%d effect=%d healed=%s", v.Player, name(triggerNames[:], v.Trigger), cardText(v.Card), v.PowerTarget, v.EffectTarget, optCard(v.Healed))
	case *protocol.BattleResolvedEvent:
		return fmt.Sprintf("BattleResolved hit=%s %d vs %d perfect=%s", yesNo(v.Hit), v.AttackerPower, v.DefenderPower, yesNo(v.PerfectGuard))
	case *protocol.DamageEvent:
		return fmt.Sprintf("Damage p%d %s count=%d", v.Player, cardText(v.Card), v.DamageCount)
	case *protocol.RetireEvent:
		return fmt.Sprintf("Retire p%d %s from=%s/%d cause=%s", v.Player, cardText(v.Card), name(zoneNames[:], v.FromZone), v.FromSlot, []string{"hit", "call", "effect", "close"}[v.Cause])
	case *protocol.DiscardEvent:
		return fmt.Sprintf("Discard p%d %s", v.Player, cardText(v.Card))
	case *protocol.CardToHandEvent:
		return fmt.Sprintf("CardToHand p%d %s from=%s", v.Player, cardText(v.Card), name(zoneNames[:], v.FromZone))
	case *protocol.DamageFlippedEvent:
		return fmt.Sprintf("DamageFlipped p%d %s faceUp=%s", v.Player, cardsText(v.Cards), yesNo(v.FaceUp))
	case *protocol.AbilityTriggeredEvent:
		return fmt.Sprintf("AbilityTriggered p%d %s %s", v.Player, cardText(v.Source), abilityName(v.AbilityKey))
	case *protocol.AbilityResolvedEvent:
		return fmt.Sprintf("AbilityResolved p%d %s %s %s mode=%s target=%s added=%d", v.Player, cardText(v.Source), abilityName(v.AbilityKey),
			name(outcomeNames[:], v.Outcome), optSlot(v.Mode), optSlot(v.Target), v.AddedToHand)
	case *protocol.CardSearchedViewEvent:
		return fmt.Sprintf("CardSearchedView p%d %s %s", v.Player, cardText(v.Card), v.Query)
	case *protocol.SearchFailedViewEvent:
		return fmt.Sprintf("SearchFailedView p%d %s", v.Player, v.Query)
	case *protocol.GameFinishedEvent:
		return fmt.Sprintf("GameFinished winner=%d reason=%s", v.Winner, name(reasonNames[:], v.Reason))
	case *protocol.DecisionEvent:
		s := fmt.Sprintf("Decision p%d pending=%s units=%d legal=%d", v.Player, yesNo(v.Pending), len(v.Units), len(v.LegalIntents))
		if v.Battle != nil {
			s += fmt.Sprintf(" battle=%d/%d+%d", v.Battle.AttackerPower, v.Battle.TargetPower, v.Battle.ShieldTotal)
		}
		return s
	}
	return fmt.Sprintf("%T", ev)
}
