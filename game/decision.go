package game

import "github.com/matchgrain/matchgrain/protocol"

// emitDecision ends a batch of events with the Decision event (the
// event-complete invariant of the package doc): who decides now and what the
// rules derived that no other event states. It is called at the end of New,
// Execute and Finish, so every accepted command advances the seq and the
// view of each seat is a function of the events up to it.
func (e *Engine) emitDecision() {
	d := e.Decider()
	ev := &protocol.DecisionEvent{Player: d, Units: e.unitStates(), LegalIntents: []protocol.Intent{}}
	if !e.finished {
		ev.LegalIntents = e.LegalCommands(d)
		if e.battle.open {
			ev.Battle = e.battleView()
		}
		switch e.pend.kind {
		case pendTrigger:
			ev.Trigger = e.triggerView()
		case pendChoice:
			ev.Pending = true
			ev.Choice = e.choiceView()
		case pendAbility:
			ev.Pending = true
			ev.Ability = e.abilityView()
		case pendOrder:
			ev.Pending = true
			ev.Order = e.orderView()
		}
	}
	e.emit(ev)
}

// unitStates lists the units whose state differs from their printing's:
// rested, face down, or power or critical other than printed.
func (e *Engine) unitStates() []protocol.UnitState {
	var out []protocol.UnitState
	for p := range e.pl {
		for slot := slotVC; slot < 5; slot++ {
			id := e.unitAt(p, slot)
			if id == 0 {
				continue
			}
			c := &e.cards[id]
			pr := &printings[c.pr]
			u := protocol.UnitState{Player: p, Slot: slot, Card: e.ref(id), Rested: c.rested(), FaceUp: c.faceUp(),
				Power: e.power(p, slot), Critical: e.critical(id)}
			if u.Rested || !u.FaceUp || u.Power != pr.Power || u.Critical != pr.Critical {
				out = append(out, u)
			}
		}
	}
	if out == nil {
		out = []protocol.UnitState{}
	}
	return out
}

func (e *Engine) abilityView() *protocol.AbilityView {
	ab := e.abOf(e.pend.act.source)
	return &protocol.AbilityView{Player: int(e.pend.player), Source: e.ref(e.pend.act.source), AbilityKey: e.pend.act.key,
		Cost: protocol.AbilityCost{CounterBlast: ab.cb, SoulBlast: ab.sb, Discard: ab.discard}}
}

// projectDecision is the Decision as viewer may see it: the decider's parts
// only to the decider, face-down units only to their owner.
func projectDecision(viewer int, v *protocol.DecisionEvent) *protocol.DecisionEvent {
	hidden := false
	for _, u := range v.Units {
		if !u.FaceUp && u.Player != viewer {
			hidden = true
			break
		}
	}
	if v.Player == viewer && !hidden {
		return v
	}
	c := *v
	if v.Player != viewer {
		c.Choice, c.Ability, c.Order = nil, nil, nil
		c.LegalIntents = []protocol.Intent{}
	}
	if hidden {
		c.Units = make([]protocol.UnitState, 0, len(v.Units))
		for _, u := range v.Units {
			if u.FaceUp || u.Player == viewer {
				c.Units = append(c.Units, u)
			}
		}
	}
	return &c
}
