package protocol

import (
	"reflect"
	"testing"
)

// Sample values: one per client frame, server frame, intent and event key,
// with realistic contents. The vectors, round-trip tests, the reference
// encoder check and the docs generator all walk these lists, and
// TestSamplesCoverEveryKey fails when a new key has no sample.

func card(id int, printing string) CardRef { return CardRef{InstanceID: id, PrintingID: printing} }

func cardView(id int, printing string, power int) CardView {
	return CardView{InstanceID: id, PrintingID: printing, FaceUp: true, BasePower: power, Power: power, BaseCritical: 1, Critical: 1}
}

func boolPtr(v bool) *bool { return &v }

func finishReasonPtr(r FinishReason) *FinishReason { return &r }

// finishedView is a finished match as seat 0 sees it: seat 1 won for reason.
func finishedView(reason FinishReason) MatchView {
	return MatchView{
		MatchID: "m_01HZX3", EventSeq: 231, You: 0, ActivePlayer: NoWinner, TurnNumber: 9,
		Phase: PhaseFinished, IsFinished: true, Winner: 1, FinishReason: &reason,
		Players: [2]PlayerView{{Index: 0, Name: "alice", HandCount: 2, DeckCount: 20}, {Index: 1, Name: "bob", HandCount: 4, DeckCount: 19}},
		Clock:   ClockView{DecisionPlayer: NoWinner, ServerTimeMs: 1717000000000},
	}
}

// spectatorView is a running match as a spectator sees it: both hands a
// count only, nobody's choice details and no legal intents.
func spectatorView() MatchView {
	return MatchView{
		MatchID: "m_01HZX3", EventSeq: 120, You: SeatSpectator, ActivePlayer: 1, TurnNumber: 4,
		Phase: PhaseMain, Winner: NoWinner,
		Players: [2]PlayerView{
			{Index: 0, Name: "alice", HandCount: 5, DeckCount: 38, Vanguard: &CardView{InstanceID: 3, PrintingID: "S1-010", FaceUp: true, BasePower: 10000, Power: 10000, BaseCritical: 1, Critical: 1}},
			{Index: 1, Name: "bob", HandCount: 6, DeckCount: 37, Vanguard: &CardView{InstanceID: 53, PrintingID: "S2-010", FaceUp: true, BasePower: 10000, Power: 10000, BaseCritical: 1, Critical: 1}},
		},
		Clock:        ClockView{DecisionPlayer: 1, TurnDeadlineMs: 1717000090000, Bank0Ms: 300000, Bank1Ms: 300000, IsRunning: true, ServerTimeMs: 1717000000000},
		LegalIntents: []Intent{},
	}
}

// sampleIntents has one intent per key, in key order.
func sampleIntents() []Intent {
	return []Intent{
		Mulligan{HandIndexes: []int{0, 2, 4}},
		FinishMulligan{},
		Ride{PrintingID: "S1-009"},
		SkipRide{},
		Call{PrintingID: "S1-005", Slot: SlotFrontLeft},
		Move{FromSlot: SlotFrontLeft, ToSlot: SlotBackLeft},
		EnterBattle{},
		Attack{AttackerSlot: SlotVanguard, TargetSlot: SlotVanguard, BoosterSlot: IntPtr(SlotBackCentre)},
		Guard{PrintingID: "S2-006", DiscardPrintingID: StringPtr("S2-002")},
		Intercept{Slot: SlotFrontRight},
		PassGuard{},
		ResolveTrigger{PowerTarget: SlotVanguard, EffectTarget: SlotFrontLeft},
		SelectTrigger{Index: 1},
		ResolveAbility{Accept: true},
		Choose{Index: 2},
		ActivateAbility{InstanceID: 42, DiscardPrintingID: StringPtr("S1-002")},
		EndTurn{},
		Concede{},
	}
}

// sampleEvents has one event per key, in key order.
func sampleEvents() []Event {
	return []Event{
		&GameStartedEvent{FirstPlayer: 1, DeckSize: [2]int{49, 49}},
		&TurnStartedEvent{TurnNumber: 3, Player: 0},
		&PhaseStartedEvent{Phase: PhaseBattle, Step: StepAttack},
		&CardsDrawnEvent{Player: 0, Count: 2, Cards: []CardRef{card(17, "S1-006"), card(63, "S1-002")}},
		&ReturnedToDeckEvent{Player: 1, Count: 2, Cards: []CardRef{}, ToBottom: true},
		&DeckShuffledEvent{Player: 1},
		&StandUpEvent{Vanguards: [2]CardRef{card(5, "S1-001"), card(88, "S2-001")}},
		&RideEvent{Player: 0, Card: card(17, "S1-006"), Previous: card(5, "S1-001")},
		&SoulEvent{Player: 0, Card: card(5, "S1-001"), Op: SoulIn, Cause: SoulCauseRide},
		&CallEvent{Player: 0, Card: card(23, "S1-005"), Slot: SlotFrontLeft},
		&MoveEvent{Player: 0, Card: card(23, "S1-005"), FromSlot: SlotFrontLeft, ToSlot: SlotBackLeft, Swapped: &CardRef{InstanceID: 31, PrintingID: "S1-007"}},
		&AttackEvent{Player: 0, Attacker: card(17, "S1-006"), AttackerSlot: SlotVanguard, Target: card(90, "S2-008"), TargetSlot: SlotVanguard},
		&BoostEvent{Player: 0, Booster: card(31, "S1-007"), BoosterSlot: SlotBackCentre},
		&GuardEvent{Player: 1, Card: card(71, "S2-006"), FromZone: ZoneHand, FromSlot: 0, Shield: 0, Perfect: true},
		&DriveCheckEvent{Player: 0, Card: card(44, "S1-002"), Trigger: TriggerCritical, Index: 1, Total: 2},
		&DamageCheckEvent{Player: 1, Card: card(77, "S2-005"), Trigger: TriggerHeal, Index: 2, Total: 2},
		&TriggerResolvedEvent{Player: 1, Card: card(77, "S2-005"), Trigger: TriggerHeal, PowerTarget: SlotVanguard, EffectTarget: 0, Healed: &CardRef{InstanceID: 66, PrintingID: "S2-013"}},
		&BattleResolvedEvent{Hit: true, AttackerPower: 31000, DefenderPower: 23000, PerfectGuard: false},
		&DamageEvent{Player: 1, Card: card(80, "S2-010"), DamageCount: 4},
		&RetireEvent{Player: 1, Card: card(70, "S2-007"), FromZone: ZoneRC, FromSlot: SlotFrontRight, Cause: RetireEffect},
		&DiscardEvent{Player: 0, Card: card(12, "S1-003"), Cause: DiscardCost},
		&CardToHandEvent{Player: 0, Card: card(44, "S1-002"), FromZone: ZoneTrigger},
		&DamageFlippedEvent{Player: 0, Cards: []CardRef{card(9, "S1-012")}, FaceUp: false},
		&AbilityTriggeredEvent{Player: 0, Source: card(17, "S1-006"), AbilityKey: AbilityRideSearch},
		&AbilityResolvedEvent{Player: 0, Source: card(17, "S1-006"), AbilityKey: AbilityRideSearch, Outcome: OutcomeResolved, Mode: nil, Target: IntPtr(0), AddedToHand: 1},
		&CardSearchedViewEvent{Player: 0, Card: card(28, "S1-011"), Query: "grade=2"},
		&SearchFailedViewEvent{Player: 0, Query: "grade=3"},
		&GameFinishedEvent{Winner: NoWinner, Reason: FinishDraw},
		sampleDecision(),
	}
}

// sampleDecision is the decider's copy of a Decision with every field set
// (a state that cannot happen at once in a game, but exercises every field).
func sampleDecision() *DecisionEvent {
	return &DecisionEvent{
		Player:  0,
		Pending: true,
		Trigger: &TriggerView{Player: 0, CheckKind: CheckDrive, Card: card(44, "S1-002"), Trigger: TriggerCritical, PowerTargets: []int{-1, 1}, EffectTargets: []int{-1, 1}},
		Battle:  &BattleView{AttackerSlot: SlotVanguard, TargetSlot: SlotVanguard, BoosterSlot: IntPtr(SlotBackCentre), AttackerPower: 21000, TargetPower: 13000, ShieldTotal: 15000, DriveDone: 1, DriveTotal: 2},
		Units: []UnitState{
			{Player: 0, Slot: SlotVanguard, Card: card(17, "S1-013"), Rested: true, FaceUp: true, Power: 23000, Critical: 2},
			{Player: 1, Slot: SlotFrontRight, Card: card(70, "S2-007"), Rested: false, FaceUp: true, Power: 13000, Critical: 1},
		},
		Choice:       &ChoiceView{Player: 0, Source: card(17, "S1-013"), AbilityKey: AbilityCallModes, Kind: ChoiceMode, Options: []ChoiceOption{{Mode: 0}, {Mode: 1}}},
		Ability:      &AbilityView{Player: 0, Source: card(17, "S1-013"), AbilityKey: AbilityHitRetire, Cost: AbilityCost{CounterBlast: 1}},
		Order:        &OrderView{Player: 0, Entries: []OrderEntry{{Source: card(23, "S1-009"), AbilityKey: AbilityAttackPower}, {Source: card(31, "S1-005"), AbilityKey: AbilityBoostBonus}}},
		LegalIntents: []Intent{Choose{Index: 0}, Choose{Index: 1}, Concede{}},
	}
}

// sampleClientFrames has one client frame per key, in key order.
func sampleClientFrames() []ClientFrame {
	return []ClientFrame{
		&ClientHello{ProtocolVersion: Version, Ticket: "tkt_4f9c2a7e1b", ClientBuild: "unity-1.0.3", ResumeFromSeq: 120, ResumeTickets: true},
		&ClientIntent{IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", BasedOnSeq: 57, Intent: Call{PrintingID: "S1-005", Slot: SlotFrontLeft}},
		&ClientResync{FromSeq: 58, FullSnapshot: false},
		&ClientPing{Nonce: 7, ClientTimeMs: 1767225600123},
		&ClientPong{Nonce: 9},
		&ClientLeave{Reason: "user quit"},
	}
}

// sampleClock is a running decision clock.
func sampleClock() ClockView {
	return ClockView{DecisionPlayer: 0, TurnDeadlineMs: 1767225690000, Bank0Ms: 300000, Bank1Ms: 254321, IsRunning: true, ServerTimeMs: 1767225600000}
}

// sampleServerFrames has one server frame per key, in key order.
func sampleServerFrames() []ServerFrame {
	return []ServerFrame{
		&ServerHello{ProtocolVersion: Version, MatchID: "m_01HZX3", PlayerIndex: 1, Resumed: true, EventSeq: 120, ServerTimeMs: 1767225600000},
		&ServerSnapshot{View: snapshotView(false)},
		&ServerEvents{FromSeq: 121, ToSeq: 123, Events: []EventEnvelope{
			{Seq: 121, Event: &PhaseStartedEvent{Phase: PhaseMain, Step: StepNone}},
			{Seq: 123, Event: &CallEvent{Player: 1, Card: card(70, "S2-007"), Slot: SlotFrontRight}},
		}},
		&ServerIntentResult{IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", Accepted: false, Code: RejectIllegal, Reason: "no such card in hand", EventSeq: 123, Duplicate: false},
		&ServerClock{Clock: sampleClock(), EventSeq: 123},
		&ServerPing{Nonce: 11, ServerTimeMs: 1767225600500},
		&ServerPong{Nonce: 7, ServerTimeMs: 1767225600130},
		&ServerError{Code: ErrorMalformedFrame, Message: "malformed frame", Fatal: true, EventSeq: 123},
		&ServerResumeTicket{Ticket: "AQx9e1f7c2b4a6d8e0f1a2b3c4d5e6f70000019b8f3a2c1000016d2d3030303031", ExpiresAtMs: 1765011660000},
	}
}

// snapshotView is a mid-game view for player 0. With full set, every
// optional view is present (a state that cannot happen at once in a game, but
// exercises every field); otherwise only the battle is open.
func snapshotView(full bool) MatchView {
	rear := func(id int, p string, power int, rested bool) *CardView {
		c := cardView(id, p, power)
		c.Rested = rested
		return &c
	}
	hand := []CardView{cardView(12, "S1-003", 5000), cardView(44, "S1-002", 5000), cardView(51, "S1-008", 6000)}
	v := MatchView{
		MatchID: "m_01HZX3", EventSeq: 140, You: 0, ActivePlayer: 1, TurnNumber: 4,
		Phase: PhaseBattle, Step: StepGuard, IsFinished: false, Winner: NoWinner,
		Players: [2]PlayerView{
			{
				Index: 0, Name: "alice", HandCount: 3, DeckCount: 33, Hand: hand,
				Vanguard:   rear(17, "S1-013", 13000, true),
				RearGuards: [5]*CardView{nil, rear(31, "S1-005", 8000, true), nil, rear(23, "S1-009", 10000, false), nil},
				Guardian:   []CardView{}, Soul: []CardView{cardView(5, "S1-001", 6000)}, Drop: nil,
				Trigger: nil, FaceDownDamage: 1, FaceUpDamage: []CardView{cardView(9, "S1-012", 11000)}, IsDefeated: false,
			},
			{
				Index: 1, Name: "bob", HandCount: 5, DeckCount: 30, Hand: []CardView{},
				Vanguard:   rear(90, "S2-014", 13000, false),
				RearGuards: [5]*CardView{nil, nil, nil, nil, rear(70, "S2-007", 8000, false)},
				Guardian:   []CardView{cardView(72, "S2-003", 5000)}, Soul: []CardView{}, Drop: []CardView{cardView(61, "S2-002", 5000)},
				Trigger: nil, FaceDownDamage: 0, FaceUpDamage: []CardView{}, IsDefeated: false,
			},
		},
		Battle:           &BattleView{AttackerSlot: SlotVanguard, TargetSlot: SlotVanguard, BoosterSlot: IntPtr(SlotBackCentre), AttackerPower: 21000, TargetPower: 13000, ShieldTotal: 15000, PerfectGuard: false, DriveDone: 0, DriveTotal: 2, Hit: nil},
		OpponentChoosing: false,
		Clock:            ClockView{DecisionPlayer: 1, TurnDeadlineMs: 1767225690000, Bank0Ms: 300000, Bank1Ms: 254321, IsRunning: true, ServerTimeMs: 1767225600000},
		LegalIntents:     []Intent{Concede{}},
	}
	if full {
		v.ActivePlayer = 0
		v.Battle.Hit = boolPtr(true)
		v.Players[0].Trigger = &CardView{InstanceID: 44, PrintingID: "S1-002", FaceUp: true, BasePower: 5000, Power: 5000, BaseCritical: 1, Critical: 1}
		v.Trigger = &TriggerView{Player: 0, CheckKind: CheckDrive, Card: card(44, "S1-002"), Trigger: TriggerCritical, PowerTargets: []int{-1, 1, 3}, EffectTargets: []int{-1, 3}}
		v.Choice = &ChoiceView{Player: 0, Source: card(17, "S1-013"), AbilityKey: AbilityHitRetire, Kind: ChoiceTarget, Options: []ChoiceOption{{Slot: 4}, {Slot: 3}}}
		v.Ability = &AbilityView{Player: 0, Source: card(17, "S1-013"), AbilityKey: AbilityHitRetire, Cost: AbilityCost{CounterBlast: 1, SoulBlast: 0, Discard: false}}
		v.Order = &OrderView{Player: 0, Entries: []OrderEntry{{Source: card(23, "S1-009"), AbilityKey: AbilityAttackPower}, {Source: card(31, "S1-005"), AbilityKey: AbilityBoostBonus}}}
		v.OpponentChoosing = true
		v.LegalIntents = []Intent{ResolveTrigger{PowerTarget: -1, EffectTarget: -1}, ResolveTrigger{PowerTarget: 3, EffectTarget: 3}, Concede{}}
	}
	return v
}

func TestSamplesCoverEveryKey(t *testing.T) {
	for i, it := range sampleIntents() {
		if int(it.IntentKind()) != i {
			t.Errorf("sampleIntents()[%d] is %T with key %d", i, it, it.IntentKind())
		}
	}
	if n := len(sampleIntents()); n != intentKindCount {
		t.Errorf("%d intent samples, %d intent keys", n, intentKindCount)
	}
	for i, ev := range sampleEvents() {
		if int(ev.EventKind()) != i {
			t.Errorf("sampleEvents()[%d] is %T with key %d", i, ev, ev.EventKind())
		}
	}
	if n := len(sampleEvents()); n != eventKindCount {
		t.Errorf("%d event samples, %d event keys", n, eventKindCount)
	}
	for i, f := range sampleClientFrames() {
		if int(f.ClientFrameKind()) != i {
			t.Errorf("sampleClientFrames()[%d] is %T with key %d", i, f, f.ClientFrameKind())
		}
	}
	for i, f := range sampleServerFrames() {
		if int(f.ServerFrameKind()) != i {
			t.Errorf("sampleServerFrames()[%d] is %T with key %d", i, f, f.ServerFrameKind())
		}
	}
	// Every exported type that implements a union interface must have a sample.
	known := map[reflect.Type]bool{}
	for _, it := range sampleIntents() {
		known[reflect.TypeOf(it)] = true
	}
	for _, ev := range sampleEvents() {
		known[reflect.TypeOf(ev)] = true
	}
	if len(known) != intentKindCount+eventKindCount {
		t.Errorf("samples hold %d distinct types, want %d", len(known), intentKindCount+eventKindCount)
	}
}
