package protocol

func (r *reader) matchView(v *MatchView) {
	n := r.open("MatchView")
	if n > 0 {
		v.MatchID = r.str("MatchView.matchId", 0, 0)
	}
	if n > 1 {
		v.EventSeq = r.i64("MatchView.eventSeq")
	}
	if n > 2 {
		v.You = r.int("MatchView.you")
	}
	if n > 3 {
		v.ActivePlayer = r.int("MatchView.activePlayer")
	}
	if n > 4 {
		v.TurnNumber = r.int("MatchView.turnNumber")
	}
	if n > 5 {
		v.Phase = Phase(r.int("MatchView.phase"))
	}
	if n > 6 {
		v.Step = Step(r.int("MatchView.step"))
	}
	if n > 7 {
		v.IsFinished = r.bool("MatchView.isFinished")
	}
	if n > 8 {
		v.Winner = r.int("MatchView.winner")
	}
	if n > 9 && r.fixed("MatchView.players", 2) {
		r.playerView(&v.Players[0])
		r.playerView(&v.Players[1])
		r.close(2, 2)
	}
	if n > 10 && !r.isNil() {
		v.Battle = &BattleView{}
		r.battleView(v.Battle)
	}
	if n > 11 && !r.isNil() {
		v.Trigger = &TriggerView{}
		r.triggerView(v.Trigger)
	}
	if n > 12 && !r.isNil() {
		v.Choice = &ChoiceView{}
		r.choiceView(v.Choice)
	}
	if n > 13 && !r.isNil() {
		v.Ability = &AbilityView{}
		r.abilityView(v.Ability)
	}
	if n > 14 && !r.isNil() {
		v.Order = &OrderView{}
		r.orderView(v.Order)
	}
	if n > 15 {
		v.OpponentChoosing = r.bool("MatchView.opponentChoosing")
	}
	if n > 16 {
		r.clockView(&v.Clock)
	}
	if n > 17 {
		m := r.open("MatchView.legalIntents")
		if r.err == nil && m > 0 {
			v.LegalIntents = make([]Intent, m)
		}
		for i := 0; i < m && r.err == nil; i++ {
			v.LegalIntents[i] = r.intent("MatchView.legalIntents")
		}
		r.close(m, m)
	}
	if n > 18 && !r.isNil() {
		reason := FinishReason(r.int("MatchView.finishReason"))
		v.FinishReason = &reason
	}
	r.close(n, 19)
}

func (r *reader) playerView(v *PlayerView) {
	n := r.open("PlayerView")
	if n > 0 {
		v.Index = r.int("PlayerView.index")
	}
	if n > 1 {
		v.Name = r.str("PlayerView.name", 0, 0)
	}
	if n > 2 {
		v.HandCount = r.int("PlayerView.handCount")
	}
	if n > 3 {
		v.DeckCount = r.int("PlayerView.deckCount")
	}
	if n > 4 {
		v.Hand = r.cardViews("PlayerView.hand")
	}
	if n > 5 {
		v.Vanguard = r.optCardView()
	}
	if n > 6 && r.fixed("PlayerView.rearGuards", len(v.RearGuards)) {
		for i := range v.RearGuards {
			v.RearGuards[i] = r.optCardView()
		}
		r.close(len(v.RearGuards), len(v.RearGuards))
	}
	if n > 7 {
		v.Guardian = r.cardViews("PlayerView.guardian")
	}
	if n > 8 {
		v.Soul = r.cardViews("PlayerView.soul")
	}
	if n > 9 {
		v.Drop = r.cardViews("PlayerView.drop")
	}
	if n > 10 {
		v.Trigger = r.optCardView()
	}
	if n > 11 {
		v.FaceDownDamage = r.int("PlayerView.faceDownDamage")
	}
	if n > 12 {
		v.FaceUpDamage = r.cardViews("PlayerView.faceUpDamage")
	}
	if n > 13 {
		v.IsDefeated = r.bool("PlayerView.isDefeated")
	}
	r.close(n, 14)
}

func (r *reader) cardView(v *CardView) {
	n := r.open("CardView")
	if n > 0 {
		v.InstanceID = r.int("CardView.instanceId")
	}
	if n > 1 {
		v.PrintingID = r.str("CardView.printingId", 0, 0)
	}
	if n > 2 {
		v.Rested = r.bool("CardView.rested")
	}
	if n > 3 {
		v.FaceUp = r.bool("CardView.faceUp")
	}
	if n > 4 {
		v.BasePower = r.int("CardView.basePower")
	}
	if n > 5 {
		v.Power = r.int("CardView.power")
	}
	if n > 6 {
		v.BaseCritical = r.int("CardView.baseCritical")
	}
	if n > 7 {
		v.Critical = r.int("CardView.critical")
	}
	r.close(n, 8)
}

func (r *reader) optCardView() *CardView {
	if r.isNil() {
		return nil
	}
	v := &CardView{}
	r.cardView(v)
	return v
}

func (r *reader) cardViews(field string) []CardView {
	n := r.open(field)
	var out []CardView
	if r.err == nil && n > 0 {
		out = make([]CardView, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		r.cardView(&out[i])
	}
	r.close(n, n)
	return out
}

func (r *reader) clockView(v *ClockView) {
	n := r.open("ClockView")
	if n > 0 {
		v.DecisionPlayer = r.int("ClockView.decisionPlayer")
	}
	if n > 1 {
		v.TurnDeadlineMs = r.i64("ClockView.turnDeadlineMs")
	}
	if n > 2 {
		v.Bank0Ms = r.i64("ClockView.bank0Ms")
	}
	if n > 3 {
		v.Bank1Ms = r.i64("ClockView.bank1Ms")
	}
	if n > 4 {
		v.IsRunning = r.bool("ClockView.isRunning")
	}
	if n > 5 {
		v.ServerTimeMs = r.i64("ClockView.serverTimeMs")
	}
	r.close(n, 6)
}

func (r *reader) battleView(v *BattleView) {
	n := r.open("BattleView")
	if n > 0 {
		v.AttackerSlot = r.int("BattleView.attackerSlot")
	}
	if n > 1 {
		v.TargetSlot = r.int("BattleView.targetSlot")
	}
	if n > 2 {
		v.BoosterSlot = r.optInt("BattleView.boosterSlot")
	}
	if n > 3 {
		v.AttackerPower = r.int("BattleView.attackerPower")
	}
	if n > 4 {
		v.TargetPower = r.int("BattleView.targetPower")
	}
	if n > 5 {
		v.ShieldTotal = r.int("BattleView.shieldTotal")
	}
	if n > 6 {
		v.PerfectGuard = r.bool("BattleView.perfectGuard")
	}
	if n > 7 {
		v.DriveDone = r.int("BattleView.driveDone")
	}
	if n > 8 {
		v.DriveTotal = r.int("BattleView.driveTotal")
	}
	if n > 9 {
		v.Hit = r.optBool("BattleView.hit")
	}
	r.close(n, 10)
}

func (r *reader) triggerView(v *TriggerView) {
	n := r.open("TriggerView")
	if n > 0 {
		v.Player = r.int("TriggerView.player")
	}
	if n > 1 {
		v.CheckKind = CheckKind(r.int("TriggerView.checkKind"))
	}
	if n > 2 {
		r.cardRef(&v.Card)
	}
	if n > 3 {
		v.Trigger = TriggerType(r.int("TriggerView.trigger"))
	}
	if n > 4 {
		v.PowerTargets = r.ints("TriggerView.powerTargets")
	}
	if n > 5 {
		v.EffectTargets = r.ints("TriggerView.effectTargets")
	}
	r.close(n, 6)
}

func (r *reader) choiceOption(v *ChoiceOption) {
	n := r.open("ChoiceOption")
	if n > 0 {
		v.Mode = r.int("ChoiceOption.mode")
	}
	if n > 1 {
		v.Slot = r.int("ChoiceOption.slot")
	}
	if n > 2 {
		v.PrintingID = r.str("ChoiceOption.printingId", 0, 0)
	}
	r.close(n, 3)
}

func (r *reader) choiceView(v *ChoiceView) {
	n := r.open("ChoiceView")
	if n > 0 {
		v.Player = r.int("ChoiceView.player")
	}
	if n > 1 {
		r.cardRef(&v.Source)
	}
	if n > 2 {
		v.AbilityKey = AbilityKey(r.int("ChoiceView.abilityKey"))
	}
	if n > 3 {
		v.Kind = ChoiceKind(r.int("ChoiceView.kind"))
	}
	if n > 4 {
		m := r.open("ChoiceView.options")
		if r.err == nil && m > 0 {
			v.Options = make([]ChoiceOption, m)
		}
		for i := 0; i < m && r.err == nil; i++ {
			r.choiceOption(&v.Options[i])
		}
		r.close(m, m)
	}
	r.close(n, 5)
}

func (r *reader) abilityView(v *AbilityView) {
	n := r.open("AbilityView")
	if n > 0 {
		v.Player = r.int("AbilityView.player")
	}
	if n > 1 {
		r.cardRef(&v.Source)
	}
	if n > 2 {
		v.AbilityKey = AbilityKey(r.int("AbilityView.abilityKey"))
	}
	if n > 3 {
		m := r.open("AbilityCost")
		if m > 0 {
			v.Cost.CounterBlast = r.int("AbilityCost.counterBlast")
		}
		if m > 1 {
			v.Cost.SoulBlast = r.int("AbilityCost.soulBlast")
		}
		if m > 2 {
			v.Cost.Discard = r.bool("AbilityCost.discard")
		}
		r.close(m, 3)
	}
	r.close(n, 4)
}

func (r *reader) orderEntry(v *OrderEntry) {
	n := r.open("OrderEntry")
	if n > 0 {
		r.cardRef(&v.Source)
	}
	if n > 1 {
		v.AbilityKey = AbilityKey(r.int("OrderEntry.abilityKey"))
	}
	r.close(n, 2)
}

func (r *reader) orderView(v *OrderView) {
	n := r.open("OrderView")
	if n > 0 {
		v.Player = r.int("OrderView.player")
	}
	if n > 1 {
		m := r.open("OrderView.entries")
		if r.err == nil && m > 0 {
			v.Entries = make([]OrderEntry, m)
		}
		for i := 0; i < m && r.err == nil; i++ {
			r.orderEntry(&v.Entries[i])
		}
		r.close(m, m)
	}
	r.close(n, 2)
}
