package game

import (
	"errors"
	"slices"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// Rules edges of docs/rules.md §14.10 and the other rules the spec pins down. Player
// 0 plays S1 (Emberwing), player 1 plays S2 (Tidewarden); states are built
// with the table builder, then driven through Execute.

var (
	sp = protocol.StringPtr
	ip = protocol.IntPtr
)

// attackVC sets p0 to declare an attack at p1's vanguard and returns after
// the attack (with p1 in the guard step unless abilities intervene).
func (tb *table) attackVC(a int, b *int) []protocol.Event {
	tb.t.Helper()
	tb.at(0, stAttackWait)
	return tb.do(0, protocol.Attack{AttackerSlot: a, TargetSlot: slotVC, BoosterSlot: b})
}

func TestCallOntoOccupiedCircleRetiresTheOldUnit(t *testing.T) {
	tb := newTable(t, 1)
	tb.vanguard(0, "S1-009")
	old := tb.rear(0, 3, "S1-005")
	tb.hand(0, "S1-012")
	tb.at(0, stMainWait)
	evs := tb.do(0, protocol.Call{PrintingID: "S1-012", Slot: 3})
	if !slices.Equal(kinds(evs), []protocol.EventKind{protocol.EventRetire, protocol.EventCall}) {
		t.Fatalf("events:\n%s", script(evs))
	}
	r := one[*protocol.RetireEvent](t, evs)
	if r.Card.InstanceID != int(old) || r.Cause != protocol.RetireCall || r.FromSlot != 3 || r.FromZone != protocol.ZoneRC {
		t.Errorf("retire: %s", formatEvent(r))
	}
	if indexOf(tb.e.pl[0].drop, old) < 0 || tb.e.prOf(tb.e.pl[0].rc[3]).ID != "S1-012" {
		t.Errorf("old unit not in drop or new unit not on circle 3")
	}
}

func TestMoveSwapKeepsRestedStateAndMovesOncePerTurn(t *testing.T) {
	tb := newTable(t, 2)
	tb.vanguard(0, "S1-009")
	a := tb.rear(0, 3, "S1-012")
	b := tb.rear(0, 0, "S1-005")
	tb.e.cards[a].set(flagRested, true)
	tb.e.cards[a].powTurn = 5000
	tb.at(0, stMainWait)
	evs := tb.do(0, protocol.Move{FromSlot: 3, ToSlot: 0})
	mv := one[*protocol.MoveEvent](t, evs)
	if mv.Swapped == nil || mv.Swapped.InstanceID != int(b) || mv.Card.InstanceID != int(a) {
		t.Fatalf("move: %s", formatEvent(mv))
	}
	pl := &tb.e.pl[0]
	if pl.rc[0] != a || pl.rc[3] != b || !tb.e.cards[a].rested() || tb.e.cards[b].rested() {
		t.Errorf("after the swap: rc0=%d rc3=%d rested a=%v b=%v", pl.rc[0], pl.rc[3], tb.e.cards[a].rested(), tb.e.cards[b].rested())
	}
	if got := tb.e.power(0, 0); got != 11000+5000 {
		t.Errorf("moved unit lost its modifier: power %d", got)
	}
	// D9: neither unit may move again this turn.
	tb.reject(0, protocol.Move{FromSlot: 0, ToSlot: 3}, ErrIllegal)
	tb.reject(0, protocol.Move{FromSlot: 3, ToSlot: 0}, ErrIllegal)
	// A fresh unit may move into an empty circle of its column.
	tb.rear(0, 4, "S1-005")
	tb.do(0, protocol.Move{FromSlot: 4, ToSlot: 2})
}

func TestInterceptingUnitCannotBeTheTarget(t *testing.T) {
	tb := newTable(t, 3)
	tb.vanguard(0, "S1-009")
	tb.rear(1, 3, "S2-010")
	tb.rear(1, 4, "S2-013")
	tb.vanguard(1, "S2-010")
	tb.at(0, stAttackWait)
	tb.do(0, protocol.Attack{AttackerSlot: slotVC, TargetSlot: 3})
	if tb.e.Decider() != 1 {
		t.Fatalf("defender does not decide the guard step")
	}
	tb.reject(1, protocol.Intercept{Slot: 3}, ErrIllegal)
	if tb.legal(1, protocol.Intercept{Slot: 3}) || !tb.legal(1, protocol.Intercept{Slot: 4}) {
		t.Errorf("intercept legality: %s", formatIntents(tb.e.LegalCommands(1)))
	}
	evs := tb.do(1, protocol.Intercept{Slot: 4})
	g := one[*protocol.GuardEvent](t, evs)
	if g.FromZone != protocol.ZoneRC || g.FromSlot != 4 || g.Shield != 10000 {
		t.Errorf("intercept: %s", formatEvent(g))
	}
	if tb.e.pl[1].rc[4] != 0 || len(tb.e.pl[1].gc) != 1 {
		t.Errorf("interceptor not moved to the guardian circle")
	}
}

func TestSentinelWithoutDiscardAddsZeroShield(t *testing.T) {
	tb := newTable(t, 4)
	tb.vanguard(0, "S1-009")
	tb.vanguard(1, "S2-010")
	tb.hand(1, "S2-006", "S2-002")
	tb.deckTop(0, "S1-012")
	tb.deckTop(1, "S2-013")
	tb.attackVC(slotVC, nil)
	evs := tb.do(1, protocol.Guard{PrintingID: "S2-006"})
	g := one[*protocol.GuardEvent](t, evs)
	if g.Shield != 0 || g.Perfect {
		t.Fatalf("sentinel guard without discard: %s", formatEvent(g))
	}
	evs = tb.do(1, protocol.PassGuard{})
	br := one[*protocol.BattleResolvedEvent](t, evs)
	if !br.Hit || br.AttackerPower != 10000 || br.DefenderPower != 10000 || br.PerfectGuard {
		t.Errorf("tie must hit the unguarded target: %s", formatEvent(br))
	}
	// The guardian goes to the drop zone at the close step.
	r := find[*protocol.RetireEvent](evs)
	if len(r) != 1 || r[0].FromZone != protocol.ZoneGC || r[0].Cause != protocol.RetireClose {
		t.Errorf("guardian not retired at close:\n%s", script(evs))
	}
}

func TestPerfectGuard(t *testing.T) {
	tb := newTable(t, 5)
	tb.vanguard(0, "S1-013")
	tb.vanguard(1, "S2-010")
	tb.hand(1, "S2-006", "S2-006", "S2-002")
	tb.deckTop(0, "S1-012", "S1-012")
	tb.attackVC(slotVC, nil)
	if !tb.legal(1, protocol.Guard{PrintingID: "S2-006", DiscardPrintingID: sp("S2-006")}) {
		t.Errorf("a second copy may pay the perfect guard: %s", formatIntents(tb.e.LegalCommands(1)))
	}
	tb.reject(1, protocol.Guard{PrintingID: "S2-002", DiscardPrintingID: sp("S2-006")}, ErrIllegal)
	tb.reject(1, protocol.Guard{PrintingID: "S2-006", DiscardPrintingID: sp("S1-002")}, ErrIllegal)
	evs := tb.do(1, protocol.Guard{PrintingID: "S2-006", DiscardPrintingID: sp("S2-002")})
	want := []protocol.EventKind{protocol.EventGuard, protocol.EventAbilityTriggered, protocol.EventDiscard, protocol.EventAbilityResolved}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("perfect guard events:\n%s", script(evs))
	}
	if !one[*protocol.GuardEvent](t, evs).Perfect || one[*protocol.AbilityTriggeredEvent](t, evs).AbilityKey != protocol.AbilitySentinel {
		t.Errorf("perfect guard not marked:\n%s", script(evs))
	}
	evs = tb.do(1, protocol.PassGuard{})
	br := one[*protocol.BattleResolvedEvent](t, evs)
	if br.Hit || !br.PerfectGuard || br.AttackerPower < br.DefenderPower {
		t.Errorf("a perfect guard must stop a stronger attack: %s", formatEvent(br))
	}
	if len(find[*protocol.DamageCheckEvent](evs)) != 0 {
		t.Errorf("damage checked through a perfect guard")
	}
}

func TestHealOnTheSixthDamageCheckSavesThePlayer(t *testing.T) {
	tb := newTable(t, 6)
	tb.vanguard(0, "S1-009")
	tb.vanguard(1, "S2-010")
	tb.damage(0, "S1-012", "S1-012", "S1-011", "S1-011", "S1-010")
	tb.damage(1, "S2-013", "S2-013", "S2-011", "S2-011", "S2-012")
	tb.deckTop(0, "S1-010")
	tb.deckTop(1, "S2-005")
	tb.attackVC(slotVC, nil)
	evs := tb.do(1, protocol.PassGuard{})
	if tb.e.pend.kind != pendTrigger || tb.e.Decider() != 1 {
		t.Fatalf("the defender must decide the heal trigger:\n%s", script(evs))
	}
	tv := tb.e.View(0).Trigger
	if tv == nil || tv.CheckKind != protocol.CheckDamage || !slices.Equal(tv.EffectTargets, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("trigger view for the attacker: %+v", tv)
	}
	evs = tb.do(1, protocol.ResolveTrigger{PowerTarget: slotVC, EffectTarget: 2})
	tr := one[*protocol.TriggerResolvedEvent](t, evs)
	if tr.Healed == nil || tr.Healed.PrintingID != "S2-011" {
		t.Fatalf("heal did not remove face-up damage 2: %s", formatEvent(tr))
	}
	if d := one[*protocol.DamageEvent](t, evs); d.DamageCount != 5 {
		t.Errorf("damage after heal: %s", formatEvent(d))
	}
	if tb.e.IsFinished() {
		t.Fatalf("the healed player lost:\n%s", script(evs))
	}
}

func TestHealCondition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		own, opp  []string
		heal      bool
		effectSet []int
	}{
		{"no damage", nil, nil, false, []int{-2}},
		{"fewer than the opponent", []string{"S2-013"}, []string{"S1-012", "S1-012"}, false, []int{-2}},
		{"equal", []string{"S2-013", "vS2-012"}, []string{"S1-012", "S1-012"}, true, []int{-1, 0}},
		{"more", []string{"vS2-013", "vS2-012"}, []string{"S1-012"}, true, []int{-1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable(t, 7)
			tb.vanguard(0, "S1-009")
			tb.vanguard(1, "S2-010")
			tb.rear(1, 3, "S2-013") // two power targets: a decision either way
			tb.damage(0, tc.opp...)
			tb.damage(1, tc.own...)
			tb.deckTop(0, "S1-010")
			tb.deckTop(1, "S2-005")
			tb.attackVC(slotVC, nil)
			tb.do(1, protocol.PassGuard{})
			tv := tb.e.View(1).Trigger
			if tv == nil || !slices.Equal(tv.EffectTargets, tc.effectSet) {
				t.Fatalf("effect targets %+v, want %v", tv, tc.effectSet)
			}
			evs := tb.do(1, protocol.ResolveTrigger{PowerTarget: 3, EffectTarget: tc.effectSet[0]})
			tr := one[*protocol.TriggerResolvedEvent](t, evs)
			if (tr.Healed != nil) != tc.heal {
				t.Errorf("healed=%v, want %v", tr.Healed != nil, tc.heal)
			}
			if got := tb.e.power(1, 3); got != 9000+10000 {
				t.Errorf("heal power went to %d", got)
			}
		})
	}
}

func TestCriticalTriggerSplitAcrossTwoUnits(t *testing.T) {
	tb := newTable(t, 8)
	tb.vanguard(0, "S1-013")
	tb.rear(0, 3, "S1-009")
	tb.vanguard(1, "S2-010")
	tb.deckTop(0, "S1-002", "S1-012")
	tb.deckTop(1, "S2-013", "S2-013")
	tb.attackVC(slotVC, nil)
	tb.do(1, protocol.PassGuard{})
	if tb.e.pend.kind != pendTrigger || tb.e.Decider() != 0 || len(tb.e.LegalCommands(0)) != 4+1 {
		t.Fatalf("critical decision: %s", formatIntents(tb.e.LegalCommands(0)))
	}
	evs := tb.do(0, protocol.ResolveTrigger{PowerTarget: 3, EffectTarget: slotVC})
	if got := len(find[*protocol.DriveCheckEvent](evs)); got != 1 {
		t.Errorf("twin drive: %d more drive checks, want 1", got)
	}
	if tb.e.power(0, 3) != 20000 || tb.e.critical(tb.e.pl[0].vc) != 2 || tb.e.power(0, slotVC) != 13000 {
		t.Errorf("power RC3 %d, VC crit %d, VC power %d", tb.e.power(0, 3), tb.e.critical(tb.e.pl[0].vc), tb.e.power(0, slotVC))
	}
	checks := find[*protocol.DamageCheckEvent](evs)
	if len(checks) != 2 || checks[0].Total != 2 {
		t.Fatalf("damage checks must equal the critical (2):\n%s", script(evs))
	}
	if len(tb.e.pl[1].damage) != 2 {
		t.Errorf("defender has %d damage", len(tb.e.pl[1].damage))
	}
}

func TestDrawTriggerOnTheLastCardsLosesAtTheCheckPoint(t *testing.T) {
	tb := newTable(t, 9)
	tb.vanguard(0, "S1-009") // grade 2: one drive check
	tb.vanguard(1, "S2-010")
	tb.deckTop(0, "S1-003", "S1-012")
	tb.deckSize(0, 2)
	tb.attackVC(slotVC, nil)
	evs := tb.do(1, protocol.PassGuard{})
	want := []protocol.EventKind{protocol.EventPhaseStarted, protocol.EventDriveCheck, protocol.EventTriggerResolved,
		protocol.EventCardsDrawn, protocol.EventCardToHand, protocol.EventGameFinished}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	gf := one[*protocol.GameFinishedEvent](t, evs)
	if gf.Winner != 1 || gf.Reason != protocol.FinishDeckOut {
		t.Errorf("finish: %s", formatEvent(gf))
	}
}

func TestRiddenUponAndRideSearchRaiseAnOrderDecision(t *testing.T) {
	tb := newTable(t, 10)
	tb.hand(0, "S1-006")
	tb.at(0, stRideWait)
	if tb.e.prOf(tb.e.pl[0].vc).ID != "S1-001" {
		t.Fatalf("the starter is not the vanguard")
	}
	evs := tb.do(0, protocol.Ride{PrintingID: "S1-006"})
	want := []protocol.EventKind{protocol.EventRide, protocol.EventSoul, protocol.EventAbilityTriggered, protocol.EventAbilityTriggered}
	if !slices.Equal(kinds(evs), want) || tb.e.pend.kind != pendOrder {
		t.Fatalf("ride events:\n%s", script(evs))
	}
	v0, v1 := tb.e.View(0), tb.e.View(1)
	if v0.Order == nil || len(v0.Order.Entries) != 2 || v0.Order.Entries[0].AbilityKey != protocol.AbilityRiddenUpon ||
		v0.Order.Entries[1].AbilityKey != protocol.AbilityRideSearch {
		t.Fatalf("order view: %+v", v0.Order)
	}
	if v1.Order != nil || !v1.OpponentChoosing || len(v1.LegalIntents) != 1 {
		t.Errorf("the opponent sees the order decision: %+v", v1)
	}
	// Resolve the search first.
	evs = tb.do(0, protocol.SelectTrigger{Index: 1})
	if tb.e.pend.kind != pendAbility || len(evs) != 0 {
		t.Fatalf("A2 is optional: %s", script(evs))
	}
	if av := tb.e.View(0).Ability; av == nil || av.AbilityKey != protocol.AbilityRideSearch {
		t.Fatalf("ability view: %+v", av)
	}
	tb.do(0, protocol.ResolveAbility{Accept: true})
	cv := tb.e.View(0).Choice
	if cv == nil || cv.Kind != protocol.ChoiceSearchCard || len(cv.Options) != 4 || cv.Options[0].PrintingID != "S1-009" {
		t.Fatalf("search choice: %+v", cv)
	}
	if tb.e.View(1).Choice != nil {
		t.Fatalf("search candidates shown to the opponent")
	}
	hand := len(tb.e.pl[0].hand)
	evs = tb.do(0, protocol.Choose{Index: 1})
	want = []protocol.EventKind{protocol.EventCardSearchedView, protocol.EventDeckShuffled, protocol.EventAbilityResolved,
		protocol.EventCardsDrawn, protocol.EventAbilityResolved, protocol.EventPhaseStarted}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	if cs := one[*protocol.CardSearchedViewEvent](t, evs); cs.Card.PrintingID != "S1-010" || cs.Query != "grade=2" {
		t.Errorf("searched: %s", formatEvent(cs))
	}
	if ar := find[*protocol.AbilityResolvedEvent](evs); ar[0].AddedToHand != 1 || ar[1].AbilityKey != protocol.AbilityRiddenUpon {
		t.Errorf("resolutions:\n%s", script(evs))
	}
	if len(tb.e.pl[0].hand) != hand+2 || tb.e.phase != protocol.PhaseMain {
		t.Errorf("hand %d (want %d), phase %d", len(tb.e.pl[0].hand), hand+2, tb.e.phase)
	}
	// The searched card is hidden from the opponent: it sees a seq gap.
	if _, ok := ProjectEvent(1, evs[0]); ok {
		t.Errorf("CardSearchedView reaches the opponent")
	}
}

func TestRideSearchWithoutCandidates(t *testing.T) {
	tb := newTable(t, 11)
	tb.vanguard(0, "S1-005")
	tb.hand(0, "S1-011") // A2 searches grade 3
	for _, id := range []string{"S1-013", "S1-013", "S1-013", "S1-013", "S1-014", "S1-014", "S1-015", "S1-015"} {
		tb.e.pl[0].drop = append(tb.e.pl[0].drop, tb.take(0, id))
	}
	tb.at(0, stRideWait)
	evs := tb.do(0, protocol.Ride{PrintingID: "S1-011"})
	if tb.e.pend.kind != pendAbility {
		t.Fatalf("no candidate must still offer the search (the deck is hidden):\n%s", script(evs))
	}
	evs = tb.do(0, protocol.ResolveAbility{Accept: true})
	want := []protocol.EventKind{protocol.EventSearchFailedView, protocol.EventDeckShuffled, protocol.EventAbilityResolved, protocol.EventPhaseStarted}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	if _, ok := ProjectEvent(1, evs[0]); ok {
		t.Errorf("SearchFailedView reaches the opponent")
	}
}

func TestAttackPowerAndBoostBonusRaiseAnOrderDecision(t *testing.T) {
	tb := newTable(t, 12)
	tb.vanguard(0, "S1-010")
	tb.rear(0, 3, "S1-009")
	tb.rear(0, 0, "S1-005")
	tb.damage(0, "S1-012")
	tb.vanguard(1, "S2-010")
	tb.at(0, stAttackWait)
	evs := tb.do(0, protocol.Attack{AttackerSlot: 3, TargetSlot: slotVC, BoosterSlot: ip(0)})
	want := []protocol.EventKind{protocol.EventAttack, protocol.EventBoost, protocol.EventAbilityTriggered, protocol.EventAbilityTriggered}
	if !slices.Equal(kinds(evs), want) || tb.e.pend.kind != pendOrder {
		t.Fatalf("events:\n%s", script(evs))
	}
	tb.do(0, protocol.SelectTrigger{Index: 0}) // A4 first: optional
	if tb.e.pend.kind != pendAbility {
		t.Fatalf("A4 must ask")
	}
	evs = tb.do(0, protocol.ResolveAbility{Accept: true})
	want = []protocol.EventKind{protocol.EventDamageFlipped, protocol.EventAbilityResolved, protocol.EventAbilityResolved, protocol.EventPhaseStarted}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	if tb.e.faceUpCount(0) != 0 {
		t.Errorf("counter-blast did not flip the damage")
	}
	bv := tb.e.View(1).Battle
	if bv == nil || bv.AttackerPower != 10000+10000+5000+8000 || bv.BoosterSlot == nil || *bv.BoosterSlot != 0 {
		t.Fatalf("battle view %+v, want attacker power 33000", bv)
	}
	// Boost and "until end of battle" bonuses end at the close step.
	tb.deckTop(1, "S2-013")
	tb.do(1, protocol.PassGuard{})
	if got := tb.e.power(0, 3); got != 10000 {
		t.Errorf("power after the battle %d, want 10000", got)
	}
}

func TestHitRetire(t *testing.T) {
	t.Run("no target, no prompt", func(t *testing.T) {
		tb := newTable(t, 13)
		tb.vanguard(0, "S1-013")
		tb.damage(0, "S1-011")
		tb.vanguard(1, "S2-010")
		tb.deckTop(0, "S1-012", "S1-012")
		tb.deckTop(1, "S2-013")
		tb.attackVC(slotVC, nil)
		evs := tb.do(1, protocol.PassGuard{})
		ar := one[*protocol.AbilityResolvedEvent](t, evs)
		if ar.Outcome != protocol.OutcomeNoTarget || tb.e.pend.kind != pendNone || tb.e.stage != stAttackWait {
			t.Fatalf("A6 without a target:\n%s", script(evs))
		}
	})
	t.Run("retires the chosen rear-guard", func(t *testing.T) {
		tb := newTable(t, 13)
		tb.vanguard(0, "S1-013")
		tb.damage(0, "S1-011")
		tb.vanguard(1, "S2-010")
		tb.rear(1, 0, "S2-007")
		victim := tb.rear(1, 4, "S2-013")
		tb.deckTop(0, "S1-012", "S1-012")
		tb.deckTop(1, "S2-013")
		tb.attackVC(slotVC, nil)
		tb.do(1, protocol.PassGuard{})
		if tb.e.pend.kind != pendAbility {
			t.Fatalf("A6 must ask")
		}
		tb.do(0, protocol.ResolveAbility{Accept: true})
		cv := tb.e.View(0).Choice
		if cv == nil || len(cv.Options) != 2 || cv.Options[1].Slot != 4 {
			t.Fatalf("A6 targets: %+v", cv)
		}
		evs := tb.do(0, protocol.Choose{Index: 1})
		r := one[*protocol.RetireEvent](t, evs)
		if r.Card.InstanceID != int(victim) || r.Player != 1 || r.Cause != protocol.RetireEffect {
			t.Errorf("retire: %s", formatEvent(r))
		}
	})
	t.Run("declined", func(t *testing.T) {
		tb := newTable(t, 13)
		tb.vanguard(0, "S1-013")
		tb.damage(0, "S1-011")
		tb.vanguard(1, "S2-010")
		tb.rear(1, 0, "S2-007")
		tb.deckTop(0, "S1-012", "S1-012")
		tb.deckTop(1, "S2-013")
		tb.attackVC(slotVC, nil)
		tb.do(1, protocol.PassGuard{})
		evs := tb.do(0, protocol.ResolveAbility{Accept: false})
		if ar := one[*protocol.AbilityResolvedEvent](t, evs); ar.Outcome != protocol.OutcomeDeclined || tb.e.faceUpCount(0) != 1 {
			t.Errorf("decline: %s", script(evs))
		}
	})
	t.Run("unpayable", func(t *testing.T) {
		tb := newTable(t, 13)
		tb.vanguard(0, "S1-013")
		tb.vanguard(1, "S2-010")
		tb.rear(1, 0, "S2-007")
		tb.deckTop(0, "S1-012", "S1-012")
		tb.deckTop(1, "S2-013")
		tb.attackVC(slotVC, nil)
		evs := tb.do(1, protocol.PassGuard{})
		if ar := one[*protocol.AbilityResolvedEvent](t, evs); ar.Outcome != protocol.OutcomeUnpayable {
			t.Errorf("no face-up damage: %s", script(evs))
		}
	})
}

func TestHitDrawPaysSoulBlast(t *testing.T) {
	tb := newTable(t, 14)
	tb.vanguard(0, "S1-014")
	tb.soul(0, "S1-001", "S1-005")
	tb.vanguard(1, "S2-010")
	tb.rear(1, 3, "S2-013")
	tb.deckTop(0, "S1-012", "S1-012", "S1-010")
	tb.at(0, stAttackWait)
	tb.do(0, protocol.Attack{AttackerSlot: slotVC, TargetSlot: 3})
	tb.do(1, protocol.PassGuard{})
	evs := tb.do(0, protocol.ResolveAbility{Accept: true})
	want := []protocol.EventKind{protocol.EventSoul, protocol.EventCardsDrawn, protocol.EventAbilityResolved, protocol.EventPhaseStarted, protocol.EventPhaseStarted}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	if s := one[*protocol.SoulEvent](t, evs); s.Op != protocol.SoulOut || s.Card.PrintingID != "S1-001" {
		t.Errorf("soul-blast must take the oldest soul card: %s", formatEvent(s))
	}
}

func TestRideGrades(t *testing.T) {
	tb := newTable(t, 15)
	tb.vanguard(0, "S1-005")
	tb.hand(0, "S1-004", "S1-006", "S1-009", "S1-013")
	tb.at(0, stRideWait)
	var rides []string
	for _, in := range tb.e.LegalCommands(0) {
		if r, ok := in.(protocol.Ride); ok {
			rides = append(rides, r.PrintingID)
		}
	}
	if !slices.Equal(rides, []string{"S1-006", "S1-009"}) {
		t.Fatalf("ride options %v, want same grade or one higher", rides)
	}
	tb.reject(0, protocol.Ride{PrintingID: "S1-013"}, ErrIllegal)
	tb.reject(0, protocol.Ride{PrintingID: "S1-004"}, ErrIllegal)
	tb.do(0, protocol.Ride{PrintingID: "S1-009"})
	// One ride per turn: the ride phase is over.
	tb.reject(0, protocol.Ride{PrintingID: "S1-013"}, ErrIllegal)
	// Calls follow the new grade.
	if !tb.legal(0, protocol.Call{PrintingID: "S1-006", Slot: 0}) || tb.legal(0, protocol.Call{PrintingID: "S1-013", Slot: 0}) {
		t.Errorf("call grades wrong: %s", formatIntents(tb.e.LegalCommands(0)))
	}
}

func TestFirstPlayerDrawsButCannotAttackOnTurnOne(t *testing.T) {
	for seed := uint64(0); seed < 4; seed++ {
		e, evs, err := New(seed, decksFor(1))
		if err != nil {
			t.Fatal(err)
		}
		fp := one[*protocol.GameStartedEvent](t, envEvents(evs)).FirstPlayer
		if _, err := e.Execute(fp, protocol.FinishMulligan{}); err != nil {
			t.Fatal(err)
		}
		envs, err := e.Execute(1-fp, protocol.FinishMulligan{})
		if err != nil {
			t.Fatal(err)
		}
		got := withoutDecisions(envEvents(envs))
		want := []protocol.EventKind{protocol.EventStandUp, protocol.EventTurnStarted, protocol.EventPhaseStarted,
			protocol.EventPhaseStarted, protocol.EventCardsDrawn, protocol.EventPhaseStarted}
		if !slices.Equal(kinds(got), want) {
			t.Fatalf("turn 1 start:\n%s", script(got))
		}
		if d := one[*protocol.CardsDrawnEvent](t, got); d.Player != fp || d.Count != 1 || len(e.pl[fp].hand) != 6 {
			t.Errorf("the first player must draw on turn 1: %s", formatEvent(d))
		}
		if _, err := e.Execute(fp, protocol.SkipRide{}); err != nil {
			t.Fatal(err)
		}
		if inList(protocol.EnterBattle{}, e.LegalCommands(fp)) {
			t.Errorf("EnterBattle offered on turn 1")
		}
		if _, err := e.Execute(fp, protocol.EnterBattle{}); !errors.Is(err, ErrIllegal) {
			t.Errorf("EnterBattle on turn 1: %v", err)
		}
	}
}

func envEvents(envs []protocol.EventEnvelope) []protocol.Event {
	out := make([]protocol.Event, len(envs))
	for i, e := range envs {
		out[i] = e.Event
	}
	return out
}

func TestMulliganBottomDrawShuffle(t *testing.T) {
	e, evs, err := New(21, decksFor(0))
	if err != nil {
		t.Fatal(err)
	}
	fp := one[*protocol.GameStartedEvent](t, envEvents(evs)).FirstPlayer
	if e.Decider() != fp {
		t.Fatalf("the first player mulligans first")
	}
	pl := &e.pl[fp]
	oldHand := slices.Clone(pl.hand)
	top := slices.Clone(pl.deck[:2])
	envs, err := e.Execute(fp, protocol.Mulligan{HandIndexes: []int{3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := withoutDecisions(envEvents(envs))
	if !slices.Equal(kinds(got), []protocol.EventKind{protocol.EventReturnedToDeck, protocol.EventCardsDrawn, protocol.EventDeckShuffled}) {
		t.Fatalf("mulligan events:\n%s", script(got))
	}
	rd := one[*protocol.ReturnedToDeckEvent](t, got)
	if !rd.ToBottom || rd.Count != 2 || rd.Cards[0].InstanceID != int(oldHand[1]) || rd.Cards[1].InstanceID != int(oldHand[3]) {
		t.Errorf("returned in ascending index order to the bottom: %s", formatEvent(rd))
	}
	want := []uint8{oldHand[0], oldHand[2], oldHand[4], top[0], top[1]}
	if !slices.Equal(pl.hand, want) {
		t.Errorf("hand %v, want the kept cards then the old top two %v", pl.hand, want)
	}
	if len(pl.deck) != 44 || e.Decider() != 1-fp {
		t.Errorf("deck %d, decider %d", len(pl.deck), e.Decider())
	}
	// Once per player.
	if _, err := e.Execute(fp, protocol.Mulligan{HandIndexes: []int{0}}); !errors.Is(err, ErrNotYourTurn) {
		t.Errorf("second mulligan: %v", err)
	}
	// The opponent sees counts only.
	for _, env := range envs[:2] {
		p, ok := ProjectEvent(1-fp, env.Event)
		if !ok || len(eventRefs(p)) != 0 || redactedCount(p) != 2 {
			t.Errorf("redacted mulligan event: %#v", p)
		}
	}
}

func TestTwinDrive(t *testing.T) {
	for _, tc := range []struct {
		vg    string
		total int
	}{{"S1-013", 2}, {"S1-009", 1}, {"S1-005", 1}} {
		tb := newTable(t, 16)
		tb.vanguard(0, tc.vg)
		tb.vanguard(1, "S2-014")
		tb.deckTop(0, "S1-012", "S1-012")
		tb.attackVC(slotVC, nil)
		evs := tb.do(1, protocol.PassGuard{})
		dc := find[*protocol.DriveCheckEvent](evs)
		if len(dc) != tc.total || dc[0].Total != tc.total {
			t.Errorf("%s: %d drive checks, want %d", tc.vg, len(dc), tc.total)
		}
	}
	// A rear-guard attack has no drive step.
	tb := newTable(t, 16)
	tb.vanguard(0, "S1-013")
	tb.rear(0, 3, "S1-012")
	tb.vanguard(1, "S2-010")
	tb.deckTop(1, "S2-013")
	tb.at(0, stAttackWait)
	tb.do(0, protocol.Attack{AttackerSlot: 3, TargetSlot: slotVC})
	evs := tb.do(1, protocol.PassGuard{})
	if len(find[*protocol.DriveCheckEvent](evs)) != 0 || len(find[*protocol.DamageCheckEvent](evs)) != 1 {
		t.Errorf("rear-guard attack:\n%s", script(evs))
	}
}

func TestDeckOutAtTheDrawPhaseCheckPoint(t *testing.T) {
	tb := newTable(t, 17)
	tb.deckSize(1, 1)
	tb.at(0, stMainWait)
	evs := tb.do(0, protocol.EndTurn{})
	want := []protocol.EventKind{protocol.EventPhaseStarted, protocol.EventTurnStarted, protocol.EventPhaseStarted,
		protocol.EventPhaseStarted, protocol.EventCardsDrawn, protocol.EventGameFinished}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("events:\n%s", script(evs))
	}
	if gf := one[*protocol.GameFinishedEvent](t, evs); gf.Winner != 0 || gf.Reason != protocol.FinishDeckOut {
		t.Errorf("finish: %s", formatEvent(gf))
	}
	if !tb.e.IsFinished() || tb.e.Winner() != 0 || tb.e.Decider() != -1 {
		t.Errorf("engine not finished")
	}
}

func TestSixthDamageLosesAndStopsTheChecks(t *testing.T) {
	tb := newTable(t, 18)
	tb.vanguard(0, "S1-009")
	tb.e.cards[tb.e.pl[0].vc].critTurn = 1 // critical 2
	tb.vanguard(1, "S2-010")
	tb.damage(1, "S2-013", "S2-013", "S2-011", "S2-011", "S2-012")
	tb.deckTop(0, "S1-012")
	tb.deckTop(1, "S2-010", "S2-010")
	tb.attackVC(slotVC, nil)
	evs := tb.do(1, protocol.PassGuard{})
	if n := len(find[*protocol.DamageCheckEvent](evs)); n != 1 {
		t.Errorf("%d damage checks after the sixth damage, want 1", n)
	}
	if gf := one[*protocol.GameFinishedEvent](t, evs); gf.Winner != 0 || gf.Reason != protocol.FinishDamage || evs[len(evs)-1] != gf {
		t.Errorf("finish:\n%s", script(evs))
	}
	v := tb.e.View(1)
	if !v.Players[1].IsDefeated || v.Players[0].IsDefeated || v.Phase != protocol.PhaseFinished || len(v.LegalIntents) != 0 {
		t.Errorf("finished view: defeated %v/%v phase %d legal %d", v.Players[0].IsDefeated, v.Players[1].IsDefeated, v.Phase, len(v.LegalIntents))
	}
}

func TestFinish(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loser    int
		reason   protocol.FinishReason
		winner   int
		defeated [2]bool
	}{
		{"concede p0", 0, protocol.FinishConceded, 1, [2]bool{true, false}},
		{"timeout p1", 1, protocol.FinishTimeout, 0, [2]bool{false, true}},
		{"both absent", -1, protocol.FinishAbsence, -1, [2]bool{true, true}},
		{"bad loser is a draw", 7, protocol.FinishAbsence, -1, [2]bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable(t, 19)
			seq := tb.e.LastSeq()
			evs := tb.e.Finish(tc.loser, tc.reason)
			if len(evs) != 2 || evs[0].Seq != seq+1 || batchShape(evs) != nil {
				t.Fatalf("Finish events %v: %v", evs, batchShape(evs))
			}
			gf, ok := evs[1].Event.(*protocol.GameFinishedEvent)
			if !ok || gf.Winner != tc.winner || gf.Reason != tc.reason {
				t.Fatalf("finish: %#v", evs[1].Event)
			}
			if tb.e.Winner() != tc.winner || !tb.e.IsFinished() || tb.e.Decider() != -1 {
				t.Errorf("engine state after Finish")
			}
			v := tb.e.View(0)
			if v.Players[0].IsDefeated != tc.defeated[0] || v.Players[1].IsDefeated != tc.defeated[1] {
				t.Errorf("isDefeated %v/%v", v.Players[0].IsDefeated, v.Players[1].IsDefeated)
			}
			if tb.e.Finish(0, protocol.FinishConceded) != nil {
				t.Errorf("a second Finish produced events")
			}
			for p := range 2 {
				tb.reject(p, protocol.EndTurn{}, ErrMatchFinished)
				if len(tb.e.LegalCommands(p)) != 0 {
					t.Errorf("commands after the end")
				}
			}
		})
	}
}

func TestConcedeIsTheServersBusiness(t *testing.T) {
	tb := newTable(t, 20)
	d := tb.e.Decider()
	for _, p := range []int{d, 1 - d} {
		if !tb.legal(p, protocol.Concede{}) {
			t.Errorf("Concede not listed for p%d", p)
		}
		tb.reject(p, protocol.Concede{}, ErrIllegal)
	}
	tb.reject(1-d, protocol.SkipRide{}, ErrNotYourTurn)
	tb.reject(5, protocol.SkipRide{}, ErrIllegal)
	tb.reject(d, nil, ErrIllegal)
	var rej *Rejection
	_, err := tb.e.Execute(1-d, protocol.SkipRide{})
	if !errors.As(err, &rej) || rej.Code != protocol.RejectNotYourTurn || rej.Reason == "" {
		t.Errorf("rejection %#v", err)
	}
	// Pointer forms of intents are accepted like values.
	tb.do(d, &protocol.SkipRide{})
}

func TestCallModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage []string
		modes  int
		pick   int
		check  func(tb *table, unit uint8) bool
	}{
		{"power", nil, 2, 0, func(tb *table, u uint8) bool { return tb.e.power(0, 3) == 12000 }},
		{"soul charge", nil, 2, 1, func(tb *table, u uint8) bool { return len(tb.e.pl[0].soul) == 1 }},
		{"counter charge", []string{"vS1-012"}, 3, 2, func(tb *table, u uint8) bool { return tb.e.faceUpCount(0) == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable(t, 22)
			tb.vanguard(0, "S1-009")
			tb.soul(0)
			tb.damage(0, tc.damage...)
			tb.hand(0, "S1-007")
			tb.at(0, stMainWait)
			evs := tb.do(0, protocol.Call{PrintingID: "S1-007", Slot: 3})
			cv := tb.e.View(0).Choice
			if cv == nil || cv.Kind != protocol.ChoiceMode || len(cv.Options) != tc.modes {
				t.Fatalf("modes %+v after\n%s", cv, script(evs))
			}
			evs = tb.do(0, protocol.Choose{Index: tc.pick})
			ar := one[*protocol.AbilityResolvedEvent](t, evs)
			if ar.Mode == nil || *ar.Mode != tc.pick || !tc.check(tb, tb.e.pl[0].rc[3]) {
				t.Errorf("mode %d not applied:\n%s", tc.pick, script(evs))
			}
		})
	}
}

func TestActAbilities(t *testing.T) {
	t.Run("A8 discard, choose, once per turn", func(t *testing.T) {
		tb := newTable(t, 23)
		tb.vanguard(0, "S1-010")
		src := tb.e.pl[0].vc
		tb.rear(0, 4, "S1-012")
		tb.hand(0, "S1-002", "S1-008")
		tb.at(0, stMainWait)
		tb.reject(0, protocol.ActivateAbility{InstanceID: int(src)}, ErrIllegal)
		tb.reject(0, protocol.ActivateAbility{InstanceID: int(src), DiscardPrintingID: sp("S1-013")}, ErrIllegal)
		evs := tb.do(0, protocol.ActivateAbility{InstanceID: int(src), DiscardPrintingID: sp("S1-008")})
		if !slices.Equal(kinds(evs), []protocol.EventKind{protocol.EventAbilityTriggered, protocol.EventDiscard}) {
			t.Fatalf("events:\n%s", script(evs))
		}
		evs = tb.do(0, protocol.Choose{Index: 1}) // slot 4
		if ar := one[*protocol.AbilityResolvedEvent](t, evs); ar.Target == nil || *ar.Target != 4 || tb.e.power(0, 4) != 21000 {
			t.Errorf("A8:\n%s", script(evs))
		}
		tb.reject(0, protocol.ActivateAbility{InstanceID: int(src), DiscardPrintingID: sp("S1-002")}, ErrIllegal)
	})
	t.Run("A9 soul blast 2, vanguard only", func(t *testing.T) {
		tb := newTableDecks(t, 24, catalog.DeckTidewarden, catalog.DeckEmberwing)
		tb.vanguard(0, "S2-015")
		src := tb.e.pl[0].vc
		rg := tb.rear(0, 3, "S2-015")
		tb.rear(0, 4, "S2-013")
		tb.rear(0, 1, "S2-007")
		tb.soul(0, "S2-001")
		tb.at(0, stMainWait)
		tb.reject(0, protocol.ActivateAbility{InstanceID: int(src)}, ErrIllegal) // one soul card
		tb.soul(0, "S2-001", "S2-002")
		tb.reject(0, protocol.ActivateAbility{InstanceID: int(rg)}, ErrIllegal) // not on VC
		evs := tb.do(0, protocol.ActivateAbility{InstanceID: int(src)})
		if len(find[*protocol.SoulEvent](evs)) != 2 || tb.e.power(0, 3) != 13000+5000 || tb.e.power(0, 4) != 9000+5000 ||
			tb.e.power(0, 1) != 8000 || tb.e.power(0, slotVC) != 13000 {
			t.Errorf("A9:\n%s", script(evs))
		}
	})
}

func TestGrade3PowerFollowsTheVanguard(t *testing.T) {
	tb := newTable(t, 25)
	tb.vanguard(0, "S1-009")
	tb.rear(0, 3, "S1-015")
	tb.at(0, stMainWait)
	if tb.e.power(0, 3) != 13000 {
		t.Errorf("A10 active under a grade 2 vanguard")
	}
	tb.vanguard(0, "S1-013")
	if tb.e.power(0, 3) != 18000 || tb.e.unitPower(0, slotVC, tb.e.pl[0].vc) != 13000 {
		t.Errorf("A10 inactive under a grade 3 vanguard: %d", tb.e.power(0, 3))
	}
}

func TestFrontTrigger(t *testing.T) {
	tb := newTableDecks(t, 26, catalog.DeckTidewarden, catalog.DeckEmberwing)
	tb.vanguard(0, "S2-010")
	tb.rear(0, 3, "S2-013")
	tb.rear(0, 1, "S2-007")
	tb.vanguard(1, "S1-009")
	tb.deckTop(0, "S2-004")
	tb.deckTop(1, "S1-012")
	tb.attackVC(slotVC, nil)
	evs := tb.do(1, protocol.PassGuard{})
	tr := one[*protocol.TriggerResolvedEvent](t, evs)
	if tr.Trigger != protocol.TriggerFront || tb.e.power(0, slotVC) != 20000 || tb.e.power(0, 3) != 19000 || tb.e.power(0, 1) != 8000 {
		t.Errorf("front trigger: VC %d RC3 %d RC1 %d", tb.e.power(0, slotVC), tb.e.power(0, 3), tb.e.power(0, 1))
	}
	// Trigger power lasts until the end of the turn.
	tb.do(0, protocol.EndTurn{})
	if tb.e.power(0, slotVC) != 10000 {
		t.Errorf("trigger power survived the end of turn")
	}
}

func TestBattleSkippedWhenTheTargetLeft(t *testing.T) {
	tb := newTable(t, 27)
	tb.vanguard(0, "S1-009")
	tb.rear(1, 3, "S2-013")
	tb.at(0, stAttackWait)
	tb.do(0, protocol.Attack{AttackerSlot: slotVC, TargetSlot: 3})
	// No starter ability can do this; the engine must still cope.
	tb.rear(1, 3, "")
	tb.deckTop(0, "S1-012")
	evs := tb.do(1, protocol.PassGuard{})
	if len(find[*protocol.BattleResolvedEvent](evs)) != 0 || len(find[*protocol.DriveCheckEvent](evs)) != 0 || tb.e.stage != stAttackWait {
		t.Errorf("battle with a missing target:\n%s", script(evs))
	}
}

func TestFaceDownStarterBeforeStandUp(t *testing.T) {
	e, _, err := New(28, decksFor(2))
	if err != nil {
		t.Fatal(err)
	}
	d := e.Decider()
	v := e.View(d)
	if *v.Players[1-d].Vanguard != (protocol.CardView{}) {
		t.Errorf("the opponent's face-down starter is visible: %+v", v.Players[1-d].Vanguard)
	}
	if own := v.Players[d].Vanguard; own.InstanceID == 0 || own.FaceUp || own.PrintingID == "" {
		t.Errorf("the owner must see its own face-down starter: %+v", own)
	}
	if v.Phase != protocol.PhaseSetup || v.ActivePlayer != d || len(v.LegalIntents) != 32+1 {
		t.Errorf("setup view: phase %d active %d legal %d", v.Phase, v.ActivePlayer, len(v.LegalIntents))
	}
	if o := e.View(1 - d); len(o.LegalIntents) != 1 || len(o.Players[d].Hand) != 0 {
		t.Errorf("the non-decider sees %d intents and %d hand cards", len(o.LegalIntents), len(o.Players[d].Hand))
	}
}

func TestProjectEvent(t *testing.T) {
	draw := &protocol.CardsDrawnEvent{Player: 0, Count: 1, Cards: []protocol.CardRef{{InstanceID: 7, PrintingID: "S1-002"}}}
	if got, ok := ProjectEvent(0, draw); !ok || got != draw {
		t.Errorf("the owner gets its own draw unchanged")
	}
	got, ok := ProjectEvent(1, draw)
	if c, _ := got.(*protocol.CardsDrawnEvent); !ok || c == draw || c.Count != 1 || len(c.Cards) != 0 || len(draw.Cards) != 1 {
		t.Errorf("redacted copy: %#v (original %#v)", got, draw)
	}
	search := &protocol.CardSearchedViewEvent{Player: 1}
	if _, ok := ProjectEvent(0, search); ok {
		t.Errorf("owner-only event reaches the opponent")
	}
	if _, ok := ProjectEvent(2, search); ok {
		t.Errorf("owner-only event reaches a spectator")
	}
	pub := &protocol.DeckShuffledEvent{Player: 1}
	if got, ok := ProjectEvent(0, pub); !ok || got != pub {
		t.Errorf("public event changed")
	}
}

func TestRejectionMatchesSentinels(t *testing.T) {
	for _, tc := range []struct {
		code protocol.IntentRejectCode
		is   error
	}{
		{protocol.RejectIllegal, ErrIllegal},
		{protocol.RejectNotYourTurn, ErrNotYourTurn},
		{protocol.RejectMatchFinished, ErrMatchFinished},
	} {
		err := error(&Rejection{Code: tc.code, Reason: "x"})
		for _, s := range []error{ErrIllegal, ErrNotYourTurn, ErrMatchFinished} {
			if errors.Is(err, s) != (s == tc.is) {
				t.Errorf("code %d: errors.Is(%v) = %v", tc.code, s, errors.Is(err, s))
			}
		}
	}
}
