package game

import (
	"fmt"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// eventsCap is the initial capacity of one call's event buffer; most commands
// produce fewer events, a whole turn change about a dozen.
const eventsCap = 16

// New validates both deck lists (docs/rules.md §1 (D2)), sets the match up (docs/rules.md §3) and
// returns the engine with its first events: GameStarted (seq 1), the opening
// draws and everything up to the first decision (the first player's mulligan).
// decks[p] is player p's list of printing ids (see catalog.DeckList). The error wraps
// ErrInvalidDeck.
func New(seed uint64, decks [2][]string) (*Engine, []protocol.EventEnvelope, error) {
	for p, list := range decks {
		if err := catalog.ValidateDeck(list); err != nil {
			return nil, nil, fmt.Errorf("player %d: %w", p, err)
		}
	}
	e := &Engine{winner: protocol.NoWinner, phase: protocol.PhaseSetup}
	e.allocZones()
	e.out = make([]protocol.EventEnvelope, 0, eventsCap)
	// docs/rules.md §13 order: the first-player bit, the instance id permutation, then
	// each player's deck shuffle.
	e.rng = newRNG(seed)
	e.first = uint8(e.rng.bounded(2))
	e.tp = e.first
	var ids [maxCards]uint8
	for i := range ids {
		ids[i] = uint8(i + 1)
	}
	shuffle(&e.rng, ids[:])
	k := 0
	for p, list := range decks {
		pl := &e.pl[p]
		for _, pid := range list {
			id := ids[k]
			k++
			pr, _ := lookupPrinting(pid) // known: catalog.ValidateDeck passed
			e.cards[id] = card{pr: pr, flags: ownerFlag(p) | flagFaceUp}
			if printings[pr].Starter {
				pl.vc = id
				e.cards[id].set(flagFaceUp, false)
			} else {
				pl.deck = append(pl.deck, id)
			}
		}
	}
	for p := range e.pl {
		shuffle(&e.rng, e.pl[p].deck)
	}
	e.emit(&protocol.GameStartedEvent{
		FirstPlayer: int(e.first),
		DeckSize:    [2]int{len(e.pl[0].deck), len(e.pl[1].deck)},
	})
	e.draw(int(e.first), handSize)
	e.draw(1-int(e.first), handSize)
	e.stage = stMulliganWait
	e.run()
	e.emitDecision()
	return e, e.takeEvents(), nil
}

// allocZones gives every zone its own backing array with room for a whole
// deck, so zone slices never alias and never grow during a match.
func (e *Engine) allocZones() {
	const zones = 6
	buf := make([]uint8, 2*zones*catalog.DeckSize)
	next := func() []uint8 {
		s := buf[:0:catalog.DeckSize]
		buf = buf[catalog.DeckSize:]
		return s
	}
	for p := range e.pl {
		pl := &e.pl[p]
		pl.deck, pl.hand, pl.soul, pl.gc, pl.drop, pl.damage = next(), next(), next(), next(), next(), next()
	}
}

// Execute applies one command of player and returns its events, with global
// seq numbers, up to the next decision. A refused command returns a
// *Rejection (errors.Is with ErrIllegal, ErrNotYourTurn or ErrMatchFinished)
// and changes nothing: no state, no RNG use, no seq. Concede is never
// executed here: the server ends the match with Finish (docs/rules.md §8 #17).
func (e *Engine) Execute(player int, in protocol.Intent) ([]protocol.EventEnvelope, error) {
	if e.finished {
		return nil, &Rejection{Code: protocol.RejectMatchFinished, Reason: "the match is finished"}
	}
	in = valueIntent(in)
	switch in.(type) {
	case nil:
		return nil, illegal("no intent")
	case protocol.Concede:
		return nil, illegal("concede is decided by the server: it calls Finish")
	}
	if player != 0 && player != 1 {
		return nil, illegal(fmt.Sprintf("no player %d", player))
	}
	if player != e.Decider() {
		return nil, &Rejection{Code: protocol.RejectNotYourTurn, Reason: fmt.Sprintf("player %d decides", e.Decider())}
	}
	if w := e.checkIntent(player, in); !w.ok() {
		return nil, illegal(w.String())
	}
	e.out = make([]protocol.EventEnvelope, 0, eventsCap)
	e.apply(player, in)
	e.run()
	if !e.finished {
		e.emitDecision() // a finished match got its Decision in finish
	}
	return e.takeEvents(), nil
}

// Finish ends the match on a server decision (concession, timeout, absence):
// loser loses; loser -1 (or any value other than 0 and 1) is a draw. It
// returns the Decision of nobody and the GameFinished event, or nil if the
// match had already ended.
func (e *Engine) Finish(loser int, reason protocol.FinishReason) []protocol.EventEnvelope {
	if e.finished {
		return nil
	}
	winner := protocol.NoWinner
	switch loser {
	case 0, 1:
		winner = 1 - loser
	}
	e.out = make([]protocol.EventEnvelope, 0, 2)
	e.finish(winner, reason)
	return e.takeEvents()
}

// Decider is the player whose decision the engine waits for; -1 when finished.
func (e *Engine) Decider() int {
	if e.finished {
		return -1
	}
	if e.pend.kind != pendNone {
		return int(e.pend.player)
	}
	switch e.stage {
	case stMulliganWait:
		if !e.mullDone[e.first] {
			return int(e.first)
		}
		return 1 - int(e.first)
	case stRideWait, stMainWait, stAttackWait:
		return int(e.tp)
	case stGuardWait:
		return 1 - int(e.tp)
	}
	return -1
}

// LastSeq is the seq of the last event produced (hidden events included).
func (e *Engine) LastSeq() int64 { return e.seq }

// IsFinished reports whether the match has ended.
func (e *Engine) IsFinished() bool { return e.finished }

// Winner is the winning player, or -1 while running and after a draw.
func (e *Engine) Winner() int { return int(e.winner) }

// run advances the automatic flow until a decision is open or the match ends.
func (e *Engine) run() {
	for e.settle() {
		switch e.stage {
		case stTurnStart:
			e.beginTurn()
		case stRidePhase:
			e.enterPhase(protocol.PhaseRide, protocol.StepNone)
			e.stage = stRideWait
		case stMainPhase:
			e.enterPhase(protocol.PhaseMain, protocol.StepNone)
			e.stage = stMainWait
		case stBattleStart:
			e.enterPhase(protocol.PhaseBattle, protocol.StepStart)
			e.stage = stAttackStep
		case stAttackStep:
			e.enterPhase(protocol.PhaseBattle, protocol.StepAttack)
			e.stage = stAttackWait
		case stGuardStep:
			e.enterPhase(protocol.PhaseBattle, protocol.StepGuard)
			e.stage = stGuardWait
		case stDriveStep:
			e.enterPhase(protocol.PhaseBattle, protocol.StepDrive)
			e.stage = stDriveCheck
			if !e.battleIntact() {
				e.stage = stCloseStep
			}
		case stDriveCheck:
			e.driveCheck()
		case stDamageStep:
			e.damageStep()
		case stDamageCheck:
			e.damageCheck()
		case stHitAbilities:
			e.hitAbilities()
		case stCloseStep:
			e.closeStep()
		default:
			// A phase decision (or a finished match): wait for a command.
			return
		}
	}
}

// settle is the resolution loop of docs/rules.md §7.2: a check point, then the turn
// player's queued abilities, then the other player's. It reports whether the
// flow may continue (false: the match ended or a decision is open).
func (e *Engine) settle() bool {
	for {
		if e.finished || e.pend.kind != pendNone {
			return false
		}
		e.checkpoint()
		if e.finished {
			return false
		}
		resolved := false
		for _, p := range [2]int{int(e.tp), 1 - int(e.tp)} {
			q := e.queue[p]
			if len(q) == 0 {
				continue
			}
			if len(q) >= 2 {
				e.pend = pending{kind: pendOrder, player: uint8(p)}
				return false
			}
			a := q[0]
			e.queue[p] = q[:0]
			e.resolveActivation(a)
			resolved = true
			break
		}
		if !resolved {
			return true
		}
	}
}

// checkpoint applies docs/rules.md §9: 6+ damage or an empty deck loses; both at once draw.
func (e *Engine) checkpoint() {
	var lose [2]bool
	var why [2]protocol.FinishReason
	for p := range e.pl {
		switch {
		case len(e.pl[p].damage) >= lossDamage:
			lose[p], why[p] = true, protocol.FinishDamage
		case len(e.pl[p].deck) == 0:
			lose[p], why[p] = true, protocol.FinishDeckOut
		}
	}
	switch {
	case lose[0] && lose[1]:
		e.finish(protocol.NoWinner, protocol.FinishDraw)
	case lose[0]:
		e.finish(1, why[0])
	case lose[1]:
		e.finish(0, why[1])
	}
}

// finish ends the match and emits GameFinished, the last event.
func (e *Engine) finish(winner int, reason protocol.FinishReason) {
	e.finished = true
	e.winner = int8(winner)
	e.reason = reason
	e.phase, e.step = protocol.PhaseFinished, protocol.StepNone
	e.stage = stFinished
	e.pend = pending{}
	e.queue[0], e.queue[1] = e.queue[0][:0], e.queue[1][:0]
	e.emitDecision()
	e.emit(&protocol.GameFinishedEvent{Winner: winner, Reason: reason})
}

func (e *Engine) enterPhase(ph protocol.Phase, st protocol.Step) {
	e.phase, e.step = ph, st
	e.emit(&protocol.PhaseStartedEvent{Phase: ph, Step: st})
}

// beginTurn runs the stand and draw phases of the turn player (docs/rules.md §4).
func (e *Engine) beginTurn() {
	e.turn++
	tp := int(e.tp)
	e.emit(&protocol.TurnStartedEvent{TurnNumber: int(e.turn), Player: tp})
	e.enterPhase(protocol.PhaseStand, protocol.StepNone)
	pl := &e.pl[tp]
	e.cards[pl.vc].set(flagRested, false)
	for _, u := range pl.rc {
		if u != 0 {
			e.cards[u].set(flagRested, false)
		}
	}
	e.enterPhase(protocol.PhaseDraw, protocol.StepNone)
	e.draw(tp, 1)
	// The check point after the draw phase is the next settle.
	e.stage = stRidePhase
}

// endTurn runs the end phase and hands the turn over.
func (e *Engine) endTurn() {
	e.enterPhase(protocol.PhaseEnd, protocol.StepNone)
	for id := 1; id <= maxCards; id++ {
		c := &e.cards[id]
		c.powTurn, c.critTurn, c.powBattle = 0, 0, 0
		c.flags &^= flagMoved | flagActUsed
	}
	e.tp = 1 - e.tp
	e.stage = stTurnStart
}

// standUp ends the setup: both starters turn face up, turn 1 begins.
func (e *Engine) standUp() {
	var v [2]protocol.CardRef
	for p := range e.pl {
		id := e.pl[p].vc
		e.cards[id].set(flagFaceUp, true)
		v[p] = e.ref(id)
	}
	e.emit(&protocol.StandUpEvent{Vanguards: v})
	e.tp = e.first
	e.stage = stTurnStart
}

// draw moves up to n cards from the top of p's deck to the hand; an empty
// deck moves nothing (the next check point ends the game).
func (e *Engine) draw(p, n int) int {
	pl := &e.pl[p]
	n = min(n, len(pl.deck))
	if n <= 0 {
		return 0
	}
	cards := make([]protocol.CardRef, n)
	for i, id := range pl.deck[:n] {
		cards[i] = e.ref(id)
	}
	pl.hand = append(pl.hand, pl.deck[:n]...)
	pl.deck = pl.deck[:copy(pl.deck, pl.deck[n:])]
	e.emit(&protocol.CardsDrawnEvent{Player: p, Count: n, Cards: cards})
	return n
}

// soulCharge moves up to n top deck cards into p's soul.
func (e *Engine) soulCharge(p, n int) {
	pl := &e.pl[p]
	for ; n > 0 && len(pl.deck) > 0; n-- {
		id := pl.deck[0]
		pl.deck = removeAt(pl.deck, 0)
		e.resetUnit(id)
		pl.soul = append(pl.soul, id)
		e.emit(&protocol.SoulEvent{Player: p, Card: e.ref(id), Op: protocol.SoulIn, Cause: protocol.SoulCauseCharge})
	}
}

// counterCharge turns up to n face-down damage cards face up, oldest first.
func (e *Engine) counterCharge(p, n int) {
	e.flipDamage(p, n, true)
}

// counterBlast turns n face-up damage cards face down, oldest first.
func (e *Engine) counterBlast(p, n int) {
	e.flipDamage(p, n, false)
}

func (e *Engine) flipDamage(p, n int, up bool) {
	var refs []protocol.CardRef
	for _, id := range e.pl[p].damage {
		if n == 0 {
			break
		}
		if c := &e.cards[id]; c.faceUp() != up {
			c.set(flagFaceUp, up)
			refs = append(refs, e.ref(id))
			n--
		}
	}
	if len(refs) > 0 {
		e.emit(&protocol.DamageFlippedEvent{Player: p, Cards: refs, FaceUp: up})
	}
}

// soulBlast moves n soul cards to the drop zone, oldest first.
func (e *Engine) soulBlast(p, n int) {
	pl := &e.pl[p]
	for ; n > 0 && len(pl.soul) > 0; n-- {
		id := pl.soul[0]
		pl.soul = removeAt(pl.soul, 0)
		pl.drop = append(pl.drop, id)
		e.emit(&protocol.SoulEvent{Player: p, Card: e.ref(id), Op: protocol.SoulOut, Cause: protocol.SoulCauseBlast})
	}
}

// discard moves the lowest-index hand card of printing pr to the drop zone as a cost.
func (e *Engine) discard(p int, pr uint8) {
	pl := &e.pl[p]
	i := e.handIndex(p, pr)
	if i < 0 {
		return
	}
	id := pl.hand[i]
	pl.hand = removeAt(pl.hand, i)
	pl.drop = append(pl.drop, id)
	e.emit(&protocol.DiscardEvent{Player: p, Card: e.ref(id), Cause: protocol.DiscardCost})
}

// retire moves p's unit on rear-guard circle slot to the drop zone.
func (e *Engine) retire(p, slot int, cause protocol.RetireCause) {
	pl := &e.pl[p]
	id := pl.rc[slot]
	if id == 0 {
		return
	}
	pl.rc[slot] = 0
	e.resetUnit(id)
	pl.drop = append(pl.drop, id)
	e.emit(&protocol.RetireEvent{Player: p, Card: e.ref(id), FromZone: protocol.ZoneRC, FromSlot: slot, Cause: cause})
}

// queueAbility appends an AUTO activation to its controller's queue.
func (e *Engine) queueAbility(a activation) {
	p := int(e.cards[a.source].owner())
	e.queue[p] = append(e.queue[p], a)
	e.emit(&protocol.AbilityTriggeredEvent{Player: p, Source: e.ref(a.source), AbilityKey: a.key})
}

// battleIntact: the attacker and the target are still on their circles.
func (e *Engine) battleIntact() bool {
	b := &e.battle
	tp := int(e.tp)
	return b.open && e.unitAt(tp, int(b.attackerSlot)) == b.attacker &&
		e.unitAt(1-tp, int(b.targetSlot)) == b.target
}

// shieldTotal sums the shields on the defender's guardian circle.
func (e *Engine) shieldTotal() int {
	n := 0
	for _, id := range e.pl[1-e.tp].gc {
		n += e.prOf(id).Shield
	}
	return n
}

// driveCheck runs the next drive check, or moves on to the damage step.
func (e *Engine) driveCheck() {
	b := &e.battle
	p := int(e.tp)
	if b.driveDone >= b.driveTotal || len(e.pl[p].deck) == 0 {
		e.stage = stDamageStep
		return
	}
	e.startCheck(checkDrive, p, int(b.driveDone)+1, int(b.driveTotal))
}

// damageStep decides hit or miss (docs/rules.md §5) and what follows.
func (e *Engine) damageStep() {
	e.enterPhase(protocol.PhaseBattle, protocol.StepDamage)
	b := &e.battle
	if !e.battleIntact() {
		e.stage = stCloseStep
		return
	}
	tp, opp := int(e.tp), 1-int(e.tp)
	atk := e.power(tp, int(b.attackerSlot))
	def := e.power(opp, int(b.targetSlot)) + e.shieldTotal()
	hit := atk >= def && !b.perfect
	e.emit(&protocol.BattleResolvedEvent{Hit: hit, AttackerPower: atk, DefenderPower: def, PerfectGuard: b.perfect})
	switch {
	case !hit:
		b.hit = hitNo
		e.stage = stCloseStep
	case b.targetSlot == slotVC:
		b.hit = hitYes
		b.dmgTotal = uint8(min(e.critical(b.attacker), 255))
		e.stage = stDamageCheck
	default:
		b.hit = hitYes
		e.retire(opp, int(b.targetSlot), protocol.RetireHit)
		e.stage = stHitAbilities
	}
}

// damageCheck runs the next damage check of a vanguard hit.
func (e *Engine) damageCheck() {
	b := &e.battle
	opp := 1 - int(e.tp)
	if b.dmgDone >= b.dmgTotal || len(e.pl[opp].deck) == 0 {
		e.stage = stHitAbilities
		return
	}
	e.startCheck(checkDamage, opp, int(b.dmgDone)+1, int(b.dmgTotal))
}

// hitAbilities triggers the attacking vanguard's "when hits" ability.
func (e *Engine) hitAbilities() {
	e.stage = stCloseStep
	b := &e.battle
	if b.attackerSlot != slotVC || e.pl[e.tp].vc != b.attacker {
		return
	}
	switch e.abOf(b.attacker).key {
	case protocol.AbilityHitRetire:
		if b.targetSlot == slotVC {
			e.queueAbility(activation{source: b.attacker, key: protocol.AbilityHitRetire})
		}
	case protocol.AbilityHitDraw:
		e.queueAbility(activation{source: b.attacker, key: protocol.AbilityHitDraw})
	}
}

// closeStep puts the guardians into the drop zone and ends the battle's modifiers.
func (e *Engine) closeStep() {
	e.enterPhase(protocol.PhaseBattle, protocol.StepClose)
	for p := range e.pl {
		pl := &e.pl[p]
		for _, id := range pl.gc {
			e.resetUnit(id)
			pl.drop = append(pl.drop, id)
			e.emit(&protocol.RetireEvent{Player: p, Card: e.ref(id), FromZone: protocol.ZoneGC, FromSlot: slotNone, Cause: protocol.RetireClose})
		}
		pl.gc = pl.gc[:0]
	}
	for id := 1; id <= maxCards; id++ {
		e.cards[id].powBattle = 0
	}
	e.battle = battle{}
	e.stage = stAttackStep
}
