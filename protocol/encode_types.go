package protocol

import "fmt"

// Primitive writers. Each is a no-op once e.err is set.

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) arr(n int) {
	if e.err == nil {
		e.err = e.enc.EncodeArrayLen(n)
	}
}

// list writes the header of a variable-length array, which must respect
// MaxArrayLen so that every conforming decoder accepts it.
func (e *encoder) list(n int, field string) {
	if n > MaxArrayLen {
		e.fail(fmt.Errorf("%w: %s has %d elements, limit %d", ErrInvalidValue, field, n, MaxArrayLen))
		return
	}
	e.arr(n)
}

// union writes the [key, body] pair header and the body header of n fields.
func (e *encoder) union(key, n int) {
	e.arr(2)
	e.int(key)
	e.arr(n)
}

func (e *encoder) int(v int) { e.i64(int64(v)) }

func (e *encoder) i64(v int64) {
	if e.err == nil {
		// EncodeInt picks the smallest MessagePack integer form.
		e.err = e.enc.EncodeInt(v)
	}
}

func (e *encoder) str(s string) {
	if e.err == nil {
		e.err = e.enc.EncodeString(s)
	}
}

func (e *encoder) bool(b bool) {
	if e.err == nil {
		e.err = e.enc.EncodeBool(b)
	}
}

func (e *encoder) nil() {
	if e.err == nil {
		e.err = e.enc.EncodeNil()
	}
}

func (e *encoder) optInt(p *int) {
	if p == nil {
		e.nil()
		return
	}
	e.int(*p)
}

func (e *encoder) optBool(p *bool) {
	if p == nil {
		e.nil()
		return
	}
	e.bool(*p)
}

func (e *encoder) optStr(p *string) {
	if p == nil {
		e.nil()
		return
	}
	e.str(*p)
}

func (e *encoder) ints(v []int, field string) {
	e.list(len(v), field)
	for _, x := range v {
		e.int(x)
	}
}

// Frames.

func (e *encoder) clientFrame(f ClientFrame) {
	switch v := f.(type) {
	case *ClientHello:
		if v != nil {
			e.union(int(ClientHelloKind), 5)
			e.int(v.ProtocolVersion)
			e.str(v.Ticket)
			e.str(v.ClientBuild)
			e.i64(v.ResumeFromSeq)
			e.bool(v.ResumeTickets)
			return
		}
	case *ClientIntent:
		if v != nil {
			e.union(int(ClientIntentKind), 3)
			e.str(v.IntentID)
			e.i64(v.BasedOnSeq)
			e.intent(v.Intent)
			return
		}
	case *ClientResync:
		if v != nil {
			e.union(int(ClientResyncKind), 2)
			e.i64(v.FromSeq)
			e.bool(v.FullSnapshot)
			return
		}
	case *ClientPing:
		if v != nil {
			e.union(int(ClientPingKind), 2)
			e.i64(v.Nonce)
			e.i64(v.ClientTimeMs)
			return
		}
	case *ClientPong:
		if v != nil {
			e.union(int(ClientPongKind), 1)
			e.i64(v.Nonce)
			return
		}
	case *ClientLeave:
		if v != nil {
			e.union(int(ClientLeaveKind), 1)
			e.str(v.Reason)
			return
		}
	}
	e.fail(fmt.Errorf("%w: client frame %T is nil or unknown", ErrInvalidValue, f))
}

func (e *encoder) serverFrame(f ServerFrame) {
	switch v := f.(type) {
	case *ServerHello:
		if v != nil {
			e.union(int(ServerHelloKind), 6)
			e.int(v.ProtocolVersion)
			e.str(v.MatchID)
			e.int(v.PlayerIndex)
			e.bool(v.Resumed)
			e.i64(v.EventSeq)
			e.i64(v.ServerTimeMs)
			return
		}
	case *ServerSnapshot:
		if v != nil {
			e.union(int(ServerSnapshotKind), 1)
			e.matchView(&v.View)
			return
		}
	case *ServerEvents:
		if v != nil {
			e.union(int(ServerEventsKind), 3)
			e.i64(v.FromSeq)
			e.i64(v.ToSeq)
			// The only array without MaxArrayLen: it is bounded by the frame size.
			e.arr(len(v.Events))
			for i := range v.Events {
				e.arr(2)
				e.i64(v.Events[i].Seq)
				e.event(v.Events[i].Event)
			}
			return
		}
	case *ServerIntentResult:
		if v != nil {
			e.union(int(ServerIntentResultKind), 6)
			e.str(v.IntentID)
			e.bool(v.Accepted)
			e.int(int(v.Code))
			e.str(v.Reason)
			e.i64(v.EventSeq)
			e.bool(v.Duplicate)
			return
		}
	case *ServerClock:
		if v != nil {
			e.union(int(ServerClockKind), 2)
			e.clockView(&v.Clock)
			e.i64(v.EventSeq)
			return
		}
	case *ServerPing:
		if v != nil {
			e.union(int(ServerPingKind), 2)
			e.i64(v.Nonce)
			e.i64(v.ServerTimeMs)
			return
		}
	case *ServerPong:
		if v != nil {
			e.union(int(ServerPongKind), 2)
			e.i64(v.Nonce)
			e.i64(v.ServerTimeMs)
			return
		}
	case *ServerError:
		if v != nil {
			e.union(int(ServerErrorKind), 4)
			e.int(int(v.Code))
			e.str(v.Message)
			e.bool(v.Fatal)
			e.i64(v.EventSeq)
			return
		}
	case *ServerResumeTicket:
		if v != nil {
			e.union(int(ServerResumeTicketKind), 2)
			e.str(v.Ticket)
			e.i64(v.ExpiresAtMs)
			return
		}
	}
	e.fail(fmt.Errorf("%w: server frame %T is nil or unknown", ErrInvalidValue, f))
}

// Intents.

func (e *encoder) intent(it Intent) {
	switch v := derefIntent(it).(type) {
	case Mulligan:
		e.union(int(IntentMulligan), 1)
		e.ints(v.HandIndexes, "Mulligan.handIndexes")
	case FinishMulligan:
		e.union(int(IntentFinishMulligan), 0)
	case Ride:
		e.union(int(IntentRide), 1)
		e.str(v.PrintingID)
	case SkipRide:
		e.union(int(IntentSkipRide), 0)
	case Call:
		e.union(int(IntentCall), 2)
		e.str(v.PrintingID)
		e.int(v.Slot)
	case Move:
		e.union(int(IntentMove), 2)
		e.int(v.FromSlot)
		e.int(v.ToSlot)
	case EnterBattle:
		e.union(int(IntentEnterBattle), 0)
	case Attack:
		e.union(int(IntentAttack), 3)
		e.int(v.AttackerSlot)
		e.int(v.TargetSlot)
		e.optInt(v.BoosterSlot)
	case Guard:
		e.union(int(IntentGuard), 2)
		e.str(v.PrintingID)
		e.optStr(v.DiscardPrintingID)
	case Intercept:
		e.union(int(IntentIntercept), 1)
		e.int(v.Slot)
	case PassGuard:
		e.union(int(IntentPassGuard), 0)
	case ResolveTrigger:
		e.union(int(IntentResolveTrigger), 2)
		e.int(v.PowerTarget)
		e.int(v.EffectTarget)
	case SelectTrigger:
		e.union(int(IntentSelectTrigger), 1)
		e.int(v.Index)
	case ResolveAbility:
		e.union(int(IntentResolveAbility), 1)
		e.bool(v.Accept)
	case Choose:
		e.union(int(IntentChoose), 1)
		e.int(v.Index)
	case ActivateAbility:
		e.union(int(IntentActivateAbility), 2)
		e.int(v.InstanceID)
		e.optStr(v.DiscardPrintingID)
	case EndTurn:
		e.union(int(IntentEndTurn), 0)
	case Concede:
		e.union(int(IntentConcede), 0)
	case UnknownIntent:
		e.union(int(v.Key), 0)
	default:
		e.fail(fmt.Errorf("%w: intent %T is nil or unknown", ErrInvalidValue, it))
	}
}

// Events.

func (e *encoder) cardRef(c *CardRef) {
	e.arr(2)
	e.int(c.InstanceID)
	e.str(c.PrintingID)
}

func (e *encoder) optCardRef(c *CardRef) {
	if c == nil {
		e.nil()
		return
	}
	e.cardRef(c)
}

func (e *encoder) cardRefs(cs []CardRef, field string) {
	e.list(len(cs), field)
	for i := range cs {
		e.cardRef(&cs[i])
	}
}

func (e *encoder) event(ev Event) {
	switch v := ev.(type) {
	case *GameStartedEvent:
		if v != nil {
			e.union(int(EventGameStarted), 2)
			e.int(v.FirstPlayer)
			e.arr(2)
			e.int(v.DeckSize[0])
			e.int(v.DeckSize[1])
			return
		}
	case *TurnStartedEvent:
		if v != nil {
			e.union(int(EventTurnStarted), 2)
			e.int(v.TurnNumber)
			e.int(v.Player)
			return
		}
	case *PhaseStartedEvent:
		if v != nil {
			e.union(int(EventPhaseStarted), 2)
			e.int(int(v.Phase))
			e.int(int(v.Step))
			return
		}
	case *CardsDrawnEvent:
		if v != nil {
			e.union(int(EventCardsDrawn), 3)
			e.int(v.Player)
			e.int(v.Count)
			e.cardRefs(v.Cards, "CardsDrawn.cards")
			return
		}
	case *ReturnedToDeckEvent:
		if v != nil {
			e.union(int(EventReturnedToDeck), 4)
			e.int(v.Player)
			e.int(v.Count)
			e.cardRefs(v.Cards, "ReturnedToDeck.cards")
			e.bool(v.ToBottom)
			return
		}
	case *DeckShuffledEvent:
		if v != nil {
			e.union(int(EventDeckShuffled), 1)
			e.int(v.Player)
			return
		}
	case *StandUpEvent:
		if v != nil {
			e.union(int(EventStandUp), 1)
			e.arr(2)
			e.cardRef(&v.Vanguards[0])
			e.cardRef(&v.Vanguards[1])
			return
		}
	case *RideEvent:
		if v != nil {
			e.union(int(EventRide), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.cardRef(&v.Previous)
			return
		}
	case *SoulEvent:
		if v != nil {
			e.union(int(EventSoul), 4)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.Op))
			e.int(int(v.Cause))
			return
		}
	case *CallEvent:
		if v != nil {
			e.union(int(EventCall), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(v.Slot)
			return
		}
	case *MoveEvent:
		if v != nil {
			e.union(int(EventMove), 5)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(v.FromSlot)
			e.int(v.ToSlot)
			e.optCardRef(v.Swapped)
			return
		}
	case *AttackEvent:
		if v != nil {
			e.union(int(EventAttack), 5)
			e.int(v.Player)
			e.cardRef(&v.Attacker)
			e.int(v.AttackerSlot)
			e.cardRef(&v.Target)
			e.int(v.TargetSlot)
			return
		}
	case *BoostEvent:
		if v != nil {
			e.union(int(EventBoost), 3)
			e.int(v.Player)
			e.cardRef(&v.Booster)
			e.int(v.BoosterSlot)
			return
		}
	case *GuardEvent:
		if v != nil {
			e.union(int(EventGuard), 6)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.FromZone))
			e.int(v.FromSlot)
			e.int(v.Shield)
			e.bool(v.Perfect)
			return
		}
	case *DriveCheckEvent:
		if v != nil {
			e.union(int(EventDriveCheck), 5)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.Trigger))
			e.int(v.Index)
			e.int(v.Total)
			return
		}
	case *DamageCheckEvent:
		if v != nil {
			e.union(int(EventDamageCheck), 5)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.Trigger))
			e.int(v.Index)
			e.int(v.Total)
			return
		}
	case *TriggerResolvedEvent:
		if v != nil {
			e.union(int(EventTriggerResolved), 6)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.Trigger))
			e.int(v.PowerTarget)
			e.int(v.EffectTarget)
			e.optCardRef(v.Healed)
			return
		}
	case *BattleResolvedEvent:
		if v != nil {
			e.union(int(EventBattleResolved), 4)
			e.bool(v.Hit)
			e.int(v.AttackerPower)
			e.int(v.DefenderPower)
			e.bool(v.PerfectGuard)
			return
		}
	case *DamageEvent:
		if v != nil {
			e.union(int(EventDamage), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(v.DamageCount)
			return
		}
	case *RetireEvent:
		if v != nil {
			e.union(int(EventRetire), 5)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.FromZone))
			e.int(v.FromSlot)
			e.int(int(v.Cause))
			return
		}
	case *DiscardEvent:
		if v != nil {
			e.union(int(EventDiscard), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.Cause))
			return
		}
	case *CardToHandEvent:
		if v != nil {
			e.union(int(EventCardToHand), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.int(int(v.FromZone))
			return
		}
	case *DamageFlippedEvent:
		if v != nil {
			e.union(int(EventDamageFlipped), 3)
			e.int(v.Player)
			e.cardRefs(v.Cards, "DamageFlipped.cards")
			e.bool(v.FaceUp)
			return
		}
	case *AbilityTriggeredEvent:
		if v != nil {
			e.union(int(EventAbilityTriggered), 3)
			e.int(v.Player)
			e.cardRef(&v.Source)
			e.int(int(v.AbilityKey))
			return
		}
	case *AbilityResolvedEvent:
		if v != nil {
			e.union(int(EventAbilityResolved), 7)
			e.int(v.Player)
			e.cardRef(&v.Source)
			e.int(int(v.AbilityKey))
			e.int(int(v.Outcome))
			e.optInt(v.Mode)
			e.optInt(v.Target)
			e.int(v.AddedToHand)
			return
		}
	case *CardSearchedViewEvent:
		if v != nil {
			e.union(int(EventCardSearchedView), 3)
			e.int(v.Player)
			e.cardRef(&v.Card)
			e.str(v.Query)
			return
		}
	case *SearchFailedViewEvent:
		if v != nil {
			e.union(int(EventSearchFailedView), 2)
			e.int(v.Player)
			e.str(v.Query)
			return
		}
	case *GameFinishedEvent:
		if v != nil {
			e.union(int(EventGameFinished), 2)
			e.int(v.Winner)
			e.int(int(v.Reason))
			return
		}
	case *DecisionEvent:
		if v != nil {
			e.union(int(EventDecision), 9)
			e.int(v.Player)
			e.bool(v.Pending)
			if v.Trigger == nil {
				e.nil()
			} else {
				e.triggerView(v.Trigger)
			}
			if v.Battle == nil {
				e.nil()
			} else {
				e.battleView(v.Battle)
			}
			e.list(len(v.Units), "Decision.units")
			for i := range v.Units {
				e.unitState(&v.Units[i])
			}
			if v.Choice == nil {
				e.nil()
			} else {
				e.choiceView(v.Choice)
			}
			if v.Ability == nil {
				e.nil()
			} else {
				e.abilityView(v.Ability)
			}
			if v.Order == nil {
				e.nil()
			} else {
				e.orderView(v.Order)
			}
			e.list(len(v.LegalIntents), "Decision.legalIntents")
			for _, it := range v.LegalIntents {
				e.intent(it)
			}
			return
		}
	case *UnknownEvent:
		if v != nil {
			e.union(int(v.Key), 0)
			return
		}
	}
	e.fail(fmt.Errorf("%w: event %T is nil or unknown", ErrInvalidValue, ev))
}

// Views.

func (e *encoder) matchView(v *MatchView) {
	e.arr(19)
	e.str(v.MatchID)
	e.i64(v.EventSeq)
	e.int(v.You)
	e.int(v.ActivePlayer)
	e.int(v.TurnNumber)
	e.int(int(v.Phase))
	e.int(int(v.Step))
	e.bool(v.IsFinished)
	e.int(v.Winner)
	e.arr(2)
	e.playerView(&v.Players[0])
	e.playerView(&v.Players[1])
	if v.Battle == nil {
		e.nil()
	} else {
		e.battleView(v.Battle)
	}
	if v.Trigger == nil {
		e.nil()
	} else {
		e.triggerView(v.Trigger)
	}
	if v.Choice == nil {
		e.nil()
	} else {
		e.choiceView(v.Choice)
	}
	if v.Ability == nil {
		e.nil()
	} else {
		e.abilityView(v.Ability)
	}
	if v.Order == nil {
		e.nil()
	} else {
		e.orderView(v.Order)
	}
	e.bool(v.OpponentChoosing)
	e.clockView(&v.Clock)
	e.list(len(v.LegalIntents), "MatchView.legalIntents")
	for _, it := range v.LegalIntents {
		e.intent(it)
	}
	if v.FinishReason == nil {
		e.nil()
	} else {
		e.int(int(*v.FinishReason))
	}
}

func (e *encoder) playerView(p *PlayerView) {
	e.arr(14)
	e.int(p.Index)
	e.str(p.Name)
	e.int(p.HandCount)
	e.int(p.DeckCount)
	e.cardViews(p.Hand, "PlayerView.hand")
	e.optCardView(p.Vanguard)
	e.arr(len(p.RearGuards))
	for _, c := range p.RearGuards {
		e.optCardView(c)
	}
	e.cardViews(p.Guardian, "PlayerView.guardian")
	e.cardViews(p.Soul, "PlayerView.soul")
	e.cardViews(p.Drop, "PlayerView.drop")
	e.optCardView(p.Trigger)
	e.int(p.FaceDownDamage)
	e.cardViews(p.FaceUpDamage, "PlayerView.faceUpDamage")
	e.bool(p.IsDefeated)
}

func (e *encoder) cardView(c *CardView) {
	e.arr(8)
	e.int(c.InstanceID)
	e.str(c.PrintingID)
	e.bool(c.Rested)
	e.bool(c.FaceUp)
	e.int(c.BasePower)
	e.int(c.Power)
	e.int(c.BaseCritical)
	e.int(c.Critical)
}

func (e *encoder) optCardView(c *CardView) {
	if c == nil {
		e.nil()
		return
	}
	e.cardView(c)
}

func (e *encoder) cardViews(cs []CardView, field string) {
	e.list(len(cs), field)
	for i := range cs {
		e.cardView(&cs[i])
	}
}

func (e *encoder) clockView(c *ClockView) {
	e.arr(6)
	e.int(c.DecisionPlayer)
	e.i64(c.TurnDeadlineMs)
	e.i64(c.Bank0Ms)
	e.i64(c.Bank1Ms)
	e.bool(c.IsRunning)
	e.i64(c.ServerTimeMs)
}

func (e *encoder) unitState(u *UnitState) {
	e.arr(7)
	e.int(u.Player)
	e.int(u.Slot)
	e.cardRef(&u.Card)
	e.bool(u.Rested)
	e.bool(u.FaceUp)
	e.int(u.Power)
	e.int(u.Critical)
}

func (e *encoder) battleView(b *BattleView) {
	e.arr(10)
	e.int(b.AttackerSlot)
	e.int(b.TargetSlot)
	e.optInt(b.BoosterSlot)
	e.int(b.AttackerPower)
	e.int(b.TargetPower)
	e.int(b.ShieldTotal)
	e.bool(b.PerfectGuard)
	e.int(b.DriveDone)
	e.int(b.DriveTotal)
	e.optBool(b.Hit)
}

func (e *encoder) triggerView(t *TriggerView) {
	e.arr(6)
	e.int(t.Player)
	e.int(int(t.CheckKind))
	e.cardRef(&t.Card)
	e.int(int(t.Trigger))
	e.ints(t.PowerTargets, "TriggerView.powerTargets")
	e.ints(t.EffectTargets, "TriggerView.effectTargets")
}

func (e *encoder) choiceView(c *ChoiceView) {
	e.arr(5)
	e.int(c.Player)
	e.cardRef(&c.Source)
	e.int(int(c.AbilityKey))
	e.int(int(c.Kind))
	e.list(len(c.Options), "ChoiceView.options")
	for i := range c.Options {
		o := &c.Options[i]
		e.arr(3)
		e.int(o.Mode)
		e.int(o.Slot)
		e.str(o.PrintingID)
	}
}

func (e *encoder) abilityView(a *AbilityView) {
	e.arr(4)
	e.int(a.Player)
	e.cardRef(&a.Source)
	e.int(int(a.AbilityKey))
	e.arr(3)
	e.int(a.Cost.CounterBlast)
	e.int(a.Cost.SoulBlast)
	e.bool(a.Cost.Discard)
}

func (e *encoder) orderView(o *OrderView) {
	e.arr(2)
	e.int(o.Player)
	e.list(len(o.Entries), "OrderView.entries")
	for i := range o.Entries {
		e.arr(2)
		e.cardRef(&o.Entries[i].Source)
		e.int(int(o.Entries[i].AbilityKey))
	}
}
