package protocol

func (r *reader) cardRef(v *CardRef) {
	n := r.open("CardRef")
	if n > 0 {
		v.InstanceID = r.int("CardRef.instanceId")
	}
	if n > 1 {
		v.PrintingID = r.str("CardRef.printingId", 0, MaxPrintingIDLen)
	}
	r.close(n, 2)
}

func (r *reader) optCardRef() *CardRef {
	if r.isNil() {
		return nil
	}
	v := &CardRef{}
	r.cardRef(v)
	return v
}

// The list decoders below are written out rather than generic over an
// element func: a call through a func value makes the reader escape to the heap.

func (r *reader) cardRefs(field string) []CardRef {
	n := r.open(field)
	var out []CardRef
	if r.err == nil && n > 0 {
		out = make([]CardRef, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		r.cardRef(&out[i])
	}
	r.close(n, n)
	return out
}

func (r *reader) unitState(v *UnitState) {
	n := r.open("UnitState")
	if n > 0 {
		v.Player = r.int("UnitState.player")
	}
	if n > 1 {
		v.Slot = r.int("UnitState.slot")
	}
	if n > 2 {
		r.cardRef(&v.Card)
	}
	if n > 3 {
		v.Rested = r.bool("UnitState.rested")
	}
	if n > 4 {
		v.FaceUp = r.bool("UnitState.faceUp")
	}
	if n > 5 {
		v.Power = r.int("UnitState.power")
	}
	if n > 6 {
		v.Critical = r.int("UnitState.critical")
	}
	r.close(n, 7)
}

// event decodes an event union; an unknown key becomes *UnknownEvent.
func (r *reader) event(field string) Event {
	key := r.unionKey(field)
	if r.err != nil {
		return nil
	}
	var ev Event
	switch key {
	case int64(EventGameStarted):
		v := &GameStartedEvent{}
		n := r.open("GameStarted")
		if n > 0 {
			v.FirstPlayer = r.int("GameStarted.firstPlayer")
		}
		if n > 1 && r.fixed("GameStarted.deckSize", 2) {
			v.DeckSize[0] = r.int("GameStarted.deckSize")
			v.DeckSize[1] = r.int("GameStarted.deckSize")
			r.close(2, 2)
		}
		r.close(n, 2)
		ev = v
	case int64(EventTurnStarted):
		v := &TurnStartedEvent{}
		n := r.open("TurnStarted")
		if n > 0 {
			v.TurnNumber = r.int("TurnStarted.turnNumber")
		}
		if n > 1 {
			v.Player = r.int("TurnStarted.player")
		}
		r.close(n, 2)
		ev = v
	case int64(EventPhaseStarted):
		v := &PhaseStartedEvent{}
		n := r.open("PhaseStarted")
		if n > 0 {
			v.Phase = Phase(r.int("PhaseStarted.phase"))
		}
		if n > 1 {
			v.Step = Step(r.int("PhaseStarted.step"))
		}
		r.close(n, 2)
		ev = v
	case int64(EventCardsDrawn):
		v := &CardsDrawnEvent{}
		n := r.open("CardsDrawn")
		if n > 0 {
			v.Player = r.int("CardsDrawn.player")
		}
		if n > 1 {
			v.Count = r.int("CardsDrawn.count")
		}
		if n > 2 {
			v.Cards = r.cardRefs("CardsDrawn.cards")
		}
		r.close(n, 3)
		ev = v
	case int64(EventReturnedToDeck):
		v := &ReturnedToDeckEvent{}
		n := r.open("ReturnedToDeck")
		if n > 0 {
			v.Player = r.int("ReturnedToDeck.player")
		}
		if n > 1 {
			v.Count = r.int("ReturnedToDeck.count")
		}
		if n > 2 {
			v.Cards = r.cardRefs("ReturnedToDeck.cards")
		}
		if n > 3 {
			v.ToBottom = r.bool("ReturnedToDeck.toBottom")
		}
		r.close(n, 4)
		ev = v
	case int64(EventDeckShuffled):
		v := &DeckShuffledEvent{}
		n := r.open("DeckShuffled")
		if n > 0 {
			v.Player = r.int("DeckShuffled.player")
		}
		r.close(n, 1)
		ev = v
	case int64(EventStandUp):
		v := &StandUpEvent{}
		n := r.open("StandUp")
		if n > 0 && r.fixed("StandUp.vanguards", 2) {
			r.cardRef(&v.Vanguards[0])
			r.cardRef(&v.Vanguards[1])
			r.close(2, 2)
		}
		r.close(n, 1)
		ev = v
	case int64(EventRide):
		v := &RideEvent{}
		n := r.open("Ride")
		if n > 0 {
			v.Player = r.int("Ride.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			r.cardRef(&v.Previous)
		}
		r.close(n, 3)
		ev = v
	case int64(EventSoul):
		v := &SoulEvent{}
		n := r.open("Soul")
		if n > 0 {
			v.Player = r.int("Soul.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Op = SoulOp(r.int("Soul.op"))
		}
		if n > 3 {
			v.Cause = SoulCause(r.int("Soul.cause"))
		}
		r.close(n, 4)
		ev = v
	case int64(EventCall):
		v := &CallEvent{}
		n := r.open("Call")
		if n > 0 {
			v.Player = r.int("Call.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Slot = r.int("Call.slot")
		}
		r.close(n, 3)
		ev = v
	case int64(EventMove):
		v := &MoveEvent{}
		n := r.open("Move")
		if n > 0 {
			v.Player = r.int("Move.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.FromSlot = r.int("Move.fromSlot")
		}
		if n > 3 {
			v.ToSlot = r.int("Move.toSlot")
		}
		if n > 4 {
			v.Swapped = r.optCardRef()
		}
		r.close(n, 5)
		ev = v
	case int64(EventAttack):
		v := &AttackEvent{}
		n := r.open("Attack")
		if n > 0 {
			v.Player = r.int("Attack.player")
		}
		if n > 1 {
			r.cardRef(&v.Attacker)
		}
		if n > 2 {
			v.AttackerSlot = r.int("Attack.attackerSlot")
		}
		if n > 3 {
			r.cardRef(&v.Target)
		}
		if n > 4 {
			v.TargetSlot = r.int("Attack.targetSlot")
		}
		r.close(n, 5)
		ev = v
	case int64(EventBoost):
		v := &BoostEvent{}
		n := r.open("Boost")
		if n > 0 {
			v.Player = r.int("Boost.player")
		}
		if n > 1 {
			r.cardRef(&v.Booster)
		}
		if n > 2 {
			v.BoosterSlot = r.int("Boost.boosterSlot")
		}
		r.close(n, 3)
		ev = v
	case int64(EventGuard):
		v := &GuardEvent{}
		n := r.open("Guard")
		if n > 0 {
			v.Player = r.int("Guard.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.FromZone = Zone(r.int("Guard.fromZone"))
		}
		if n > 3 {
			v.FromSlot = r.int("Guard.fromSlot")
		}
		if n > 4 {
			v.Shield = r.int("Guard.shield")
		}
		if n > 5 {
			v.Perfect = r.bool("Guard.perfect")
		}
		r.close(n, 6)
		ev = v
	case int64(EventDriveCheck):
		v := &DriveCheckEvent{}
		n := r.open("DriveCheck")
		if n > 0 {
			v.Player = r.int("DriveCheck.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Trigger = TriggerType(r.int("DriveCheck.trigger"))
		}
		if n > 3 {
			v.Index = r.int("DriveCheck.index")
		}
		if n > 4 {
			v.Total = r.int("DriveCheck.total")
		}
		r.close(n, 5)
		ev = v
	case int64(EventDamageCheck):
		v := &DamageCheckEvent{}
		n := r.open("DamageCheck")
		if n > 0 {
			v.Player = r.int("DamageCheck.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Trigger = TriggerType(r.int("DamageCheck.trigger"))
		}
		if n > 3 {
			v.Index = r.int("DamageCheck.index")
		}
		if n > 4 {
			v.Total = r.int("DamageCheck.total")
		}
		r.close(n, 5)
		ev = v
	case int64(EventTriggerResolved):
		v := &TriggerResolvedEvent{}
		n := r.open("TriggerResolved")
		if n > 0 {
			v.Player = r.int("TriggerResolved.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Trigger = TriggerType(r.int("TriggerResolved.trigger"))
		}
		if n > 3 {
			v.PowerTarget = r.int("TriggerResolved.powerTarget")
		}
		if n > 4 {
			v.EffectTarget = r.int("TriggerResolved.effectTarget")
		}
		if n > 5 {
			v.Healed = r.optCardRef()
		}
		r.close(n, 6)
		ev = v
	case int64(EventBattleResolved):
		v := &BattleResolvedEvent{}
		n := r.open("BattleResolved")
		if n > 0 {
			v.Hit = r.bool("BattleResolved.hit")
		}
		if n > 1 {
			v.AttackerPower = r.int("BattleResolved.attackerPower")
		}
		if n > 2 {
			v.DefenderPower = r.int("BattleResolved.defenderPower")
		}
		if n > 3 {
			v.PerfectGuard = r.bool("BattleResolved.perfectGuard")
		}
		r.close(n, 4)
		ev = v
	case int64(EventDamage):
		v := &DamageEvent{}
		n := r.open("Damage")
		if n > 0 {
			v.Player = r.int("Damage.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.DamageCount = r.int("Damage.damageCount")
		}
		r.close(n, 3)
		ev = v
	case int64(EventRetire):
		v := &RetireEvent{}
		n := r.open("Retire")
		if n > 0 {
			v.Player = r.int("Retire.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.FromZone = Zone(r.int("Retire.fromZone"))
		}
		if n > 3 {
			v.FromSlot = r.int("Retire.fromSlot")
		}
		if n > 4 {
			v.Cause = RetireCause(r.int("Retire.cause"))
		}
		r.close(n, 5)
		ev = v
	case int64(EventDiscard):
		v := &DiscardEvent{}
		n := r.open("Discard")
		if n > 0 {
			v.Player = r.int("Discard.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Cause = DiscardCause(r.int("Discard.cause"))
		}
		r.close(n, 3)
		ev = v
	case int64(EventCardToHand):
		v := &CardToHandEvent{}
		n := r.open("CardToHand")
		if n > 0 {
			v.Player = r.int("CardToHand.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.FromZone = Zone(r.int("CardToHand.fromZone"))
		}
		r.close(n, 3)
		ev = v
	case int64(EventDamageFlipped):
		v := &DamageFlippedEvent{}
		n := r.open("DamageFlipped")
		if n > 0 {
			v.Player = r.int("DamageFlipped.player")
		}
		if n > 1 {
			v.Cards = r.cardRefs("DamageFlipped.cards")
		}
		if n > 2 {
			v.FaceUp = r.bool("DamageFlipped.faceUp")
		}
		r.close(n, 3)
		ev = v
	case int64(EventAbilityTriggered):
		v := &AbilityTriggeredEvent{}
		n := r.open("AbilityTriggered")
		if n > 0 {
			v.Player = r.int("AbilityTriggered.player")
		}
		if n > 1 {
			r.cardRef(&v.Source)
		}
		if n > 2 {
			v.AbilityKey = AbilityKey(r.int("AbilityTriggered.abilityKey"))
		}
		r.close(n, 3)
		ev = v
	case int64(EventAbilityResolved):
		v := &AbilityResolvedEvent{}
		n := r.open("AbilityResolved")
		if n > 0 {
			v.Player = r.int("AbilityResolved.player")
		}
		if n > 1 {
			r.cardRef(&v.Source)
		}
		if n > 2 {
			v.AbilityKey = AbilityKey(r.int("AbilityResolved.abilityKey"))
		}
		if n > 3 {
			v.Outcome = AbilityOutcome(r.int("AbilityResolved.outcome"))
		}
		if n > 4 {
			v.Mode = r.optInt("AbilityResolved.mode")
		}
		if n > 5 {
			v.Target = r.optInt("AbilityResolved.target")
		}
		if n > 6 {
			v.AddedToHand = r.int("AbilityResolved.addedToHand")
		}
		r.close(n, 7)
		ev = v
	case int64(EventCardSearchedView):
		v := &CardSearchedViewEvent{}
		n := r.open("CardSearchedView")
		if n > 0 {
			v.Player = r.int("CardSearchedView.player")
		}
		if n > 1 {
			r.cardRef(&v.Card)
		}
		if n > 2 {
			v.Query = r.str("CardSearchedView.query", 0, 0)
		}
		r.close(n, 3)
		ev = v
	case int64(EventSearchFailedView):
		v := &SearchFailedViewEvent{}
		n := r.open("SearchFailedView")
		if n > 0 {
			v.Player = r.int("SearchFailedView.player")
		}
		if n > 1 {
			v.Query = r.str("SearchFailedView.query", 0, 0)
		}
		r.close(n, 2)
		ev = v
	case int64(EventGameFinished):
		v := &GameFinishedEvent{}
		n := r.open("GameFinished")
		if n > 0 {
			v.Winner = r.int("GameFinished.winner")
		}
		if n > 1 {
			v.Reason = FinishReason(r.int("GameFinished.reason"))
		}
		r.close(n, 2)
		ev = v
	case int64(EventDecision):
		v := &DecisionEvent{}
		n := r.open("Decision")
		if n > 0 {
			v.Player = r.int("Decision.player")
		}
		if n > 1 {
			v.Pending = r.bool("Decision.pending")
		}
		if n > 2 && !r.isNil() {
			v.Trigger = &TriggerView{}
			r.triggerView(v.Trigger)
		}
		if n > 3 && !r.isNil() {
			v.Battle = &BattleView{}
			r.battleView(v.Battle)
		}
		if n > 4 {
			m := r.open("Decision.units")
			if r.err == nil && m > 0 {
				v.Units = make([]UnitState, m)
			}
			for i := 0; i < m && r.err == nil; i++ {
				r.unitState(&v.Units[i])
			}
			r.close(m, m)
		}
		if n > 5 && !r.isNil() {
			v.Choice = &ChoiceView{}
			r.choiceView(v.Choice)
		}
		if n > 6 && !r.isNil() {
			v.Ability = &AbilityView{}
			r.abilityView(v.Ability)
		}
		if n > 7 && !r.isNil() {
			v.Order = &OrderView{}
			r.orderView(v.Order)
		}
		if n > 8 {
			m := r.open("Decision.legalIntents")
			if r.err == nil && m > 0 {
				v.LegalIntents = make([]Intent, m)
			}
			for i := 0; i < m && r.err == nil; i++ {
				v.LegalIntents[i] = r.intent("Decision.legalIntents")
			}
			r.close(m, m)
		}
		r.close(n, 9)
		ev = v
	default:
		// A newer event: keep its key, skip its body (forward compatibility).
		r.skip()
		ev = &UnknownEvent{Key: EventKind(r.kindInt(key, field))}
	}
	r.close(2, 2)
	if r.err != nil {
		return nil
	}
	return ev
}
