package game

import "github.com/matchgrain/matchgrain/protocol"

// View is player's projection of the match (docs/rules.md §11, docs/protocol.md §3.5, §7).
// The opponent's hand, every deck, face-down damage identities, the
// opponent's Choice/Ability/Order details and a face-down starter are never
// in it. The grain fills MatchID, Clock and the players' names. A player
// other than 0 and 1 gets a spectator view: both hands hidden, no commands.
func (e *Engine) View(player int) protocol.MatchView {
	d := e.Decider()
	v := protocol.MatchView{
		EventSeq:     e.seq,
		You:          player,
		ActivePlayer: d,
		TurnNumber:   int(e.turn),
		Phase:        e.phase,
		Step:         e.step,
		IsFinished:   e.finished,
		Winner:       int(e.winner),
		LegalIntents: e.LegalCommands(player),
	}
	for p := range e.pl {
		v.Players[p] = e.playerView(p, player == p)
	}
	if e.finished {
		reason := e.reason
		v.FinishReason = &reason
		return v
	}
	if e.battle.open {
		v.Battle = e.battleView()
	}
	if e.pend.kind == pendTrigger {
		v.Trigger = e.triggerView()
	}
	mine := d == player
	switch e.pend.kind {
	case pendChoice:
		if mine {
			v.Choice = e.choiceView()
		}
	case pendAbility:
		if mine {
			v.Ability = e.abilityView()
		}
	case pendOrder:
		if mine {
			v.Order = e.orderView()
		}
	}
	switch e.pend.kind {
	case pendChoice, pendAbility, pendOrder:
		v.OpponentChoosing = (player == 0 || player == 1) && d == 1-player
	}
	return v
}

// cardView is the view of any face-up card outside VC/RC.
func (e *Engine) cardView(id uint8) protocol.CardView {
	c := &e.cards[id]
	pr := &printings[c.pr]
	return protocol.CardView{InstanceID: int(id), PrintingID: pr.ID, FaceUp: true,
		BasePower: pr.Power, Power: pr.Power, BaseCritical: pr.Critical, Critical: pr.Critical}
}

// unitView is the view of p's unit on slot: effective power and critical.
func (e *Engine) unitView(p, slot int, id uint8) protocol.CardView {
	v := e.cardView(id)
	v.Rested = e.cards[id].rested()
	v.FaceUp = e.cards[id].faceUp()
	v.Power = e.power(p, slot)
	v.Critical = e.critical(id)
	return v
}

// cardViews appends the views of ids to buf and returns them as their own
// slice (capacity capped, so appends by a caller cannot overwrite a neighbour).
func (e *Engine) cardViews(buf *[]protocol.CardView, ids []uint8) []protocol.CardView {
	start := len(*buf)
	for _, id := range ids {
		*buf = append(*buf, e.cardView(id))
	}
	return (*buf)[start:len(*buf):len(*buf)]
}

// playerView builds p's zones as the viewer sees them, with one allocation
// for all the card views.
func (e *Engine) playerView(p int, own bool) protocol.PlayerView {
	pl := &e.pl[p]
	n := 1 + 5 + 1 + len(pl.gc) + len(pl.soul) + len(pl.drop) + len(pl.damage)
	if own {
		n += len(pl.hand)
	}
	buf := make([]protocol.CardView, 0, n)
	v := protocol.PlayerView{
		Index:          p,
		HandCount:      len(pl.hand),
		DeckCount:      len(pl.deck),
		FaceDownDamage: e.faceDownCount(p),
		IsDefeated:     e.finished && int(e.winner) != p,
	}
	v.Hand = e.cardViews(&buf, nil)
	if own {
		v.Hand = e.cardViews(&buf, pl.hand)
	}
	v.Guardian = e.cardViews(&buf, pl.gc)
	v.Soul = e.cardViews(&buf, pl.soul)
	v.Drop = e.cardViews(&buf, pl.drop)
	start := len(buf)
	for _, id := range pl.damage {
		if e.cards[id].faceUp() {
			buf = append(buf, e.cardView(id))
		}
	}
	v.FaceUpDamage = buf[start:len(buf):len(buf)]
	// The single cards last: pointers into buf stay valid, it never grows past n.
	if !own && !e.cards[pl.vc].faceUp() {
		// A face-down starter before stand-up: nothing about it is shown.
		buf = append(buf, protocol.CardView{})
	} else {
		buf = append(buf, e.unitView(p, slotVC, pl.vc))
	}
	v.Vanguard = &buf[len(buf)-1]
	for s, id := range pl.rc {
		if id != 0 {
			buf = append(buf, e.unitView(p, s, id))
			v.RearGuards[s] = &buf[len(buf)-1]
		}
	}
	if pl.trig != 0 {
		buf = append(buf, e.cardView(pl.trig))
		v.Trigger = &buf[len(buf)-1]
	}
	return v
}

func (e *Engine) battleView() *protocol.BattleView {
	b := &e.battle
	tp := int(e.tp)
	v := &protocol.BattleView{
		AttackerSlot:  int(b.attackerSlot),
		TargetSlot:    int(b.targetSlot),
		AttackerPower: e.power(tp, int(b.attackerSlot)),
		TargetPower:   e.power(1-tp, int(b.targetSlot)),
		ShieldTotal:   e.shieldTotal(),
		PerfectGuard:  b.perfect,
		DriveDone:     int(b.driveDone),
		DriveTotal:    int(b.driveTotal),
	}
	if b.booster != 0 {
		v.BoosterSlot = protocol.IntPtr(int(b.boosterSlot))
	}
	if b.hit != hitUnknown {
		hit := b.hit == hitYes
		v.Hit = &hit
	}
	return v
}

func (e *Engine) triggerView() *protocol.TriggerView {
	p := int(e.check.owner)
	id := e.pl[p].trig
	kind := protocol.CheckDrive
	if e.check.kind == checkDamage {
		kind = protocol.CheckDamage
	}
	pts, ets := e.triggerTargets(p, nil, nil)
	return &protocol.TriggerView{Player: p, CheckKind: kind, Card: e.ref(id), Trigger: e.prOf(id).Trigger,
		PowerTargets: pts, EffectTargets: ets}
}

func (e *Engine) choiceView() *protocol.ChoiceView {
	pd := &e.pend
	v := &protocol.ChoiceView{Player: int(pd.player), Source: e.ref(pd.act.source), AbilityKey: pd.act.key,
		Kind: pd.choice, Options: make([]protocol.ChoiceOption, len(pd.options))}
	for i, o := range pd.options {
		switch pd.choice {
		case protocol.ChoiceMode:
			v.Options[i].Mode = int(o)
		case protocol.ChoiceTarget:
			v.Options[i].Slot = int(o)
		case protocol.ChoiceSearchCard:
			v.Options[i].PrintingID = printings[o].ID
		}
	}
	return v
}

func (e *Engine) orderView() *protocol.OrderView {
	p := int(e.pend.player)
	v := &protocol.OrderView{Player: p, Entries: make([]protocol.OrderEntry, len(e.queue[p]))}
	for i, a := range e.queue[p] {
		v.Entries[i] = protocol.OrderEntry{Source: e.ref(a.source), AbilityKey: a.key}
	}
	return v
}

// ProjectEvent is ev as viewer may see it (docs/rules.md §10): false for the other
// player's owner-only events (the viewer sees a seq gap); for the other
// player's redacted events a copy without cards (the count is kept); for a
// Decision of another decider a copy without its choice, ability, order and
// legal intents; face-down units only to their owner; every other event
// unchanged. A viewer other than 0 and 1 is treated as nobody's
// owner (a spectator).
func ProjectEvent(viewer int, ev protocol.Event) (protocol.Event, bool) {
	switch v := ev.(type) {
	case *protocol.CardSearchedViewEvent:
		return ev, v != nil && v.Player == viewer
	case *protocol.SearchFailedViewEvent:
		return ev, v != nil && v.Player == viewer
	case *protocol.CardsDrawnEvent:
		if v != nil && v.Player != viewer {
			c := *v
			c.Cards = []protocol.CardRef{}
			return &c, true
		}
	case *protocol.ReturnedToDeckEvent:
		if v != nil && v.Player != viewer {
			c := *v
			c.Cards = []protocol.CardRef{}
			return &c, true
		}
	case *protocol.DecisionEvent:
		if v != nil {
			return projectDecision(viewer, v), true
		}
	}
	return ev, true
}
