package game

import (
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// Card and slot numbers.
const (
	// maxCards is the number of physical cards in a match; instance ids are 1..maxCards.
	maxCards = 2 * catalog.DeckSize
	// slotVC is the vanguard circle; 0..4 are the rear-guard circles.
	slotVC = protocol.SlotVanguard
	// slotNone is "no circle" in events (a card from hand, a guardian) and "no boost" inside the engine.
	slotNone = -2
	// handSize is the opening hand.
	handSize = 5
	// lossDamage is the damage count that loses the game at a check point.
	lossDamage = 6
	// triggerPower is the power every trigger gives (docs/rules.md §6).
	triggerPower = 10000
	// callModesPower is A3's mode 0 bonus.
	callModesPower = 5000
)

// stage is where the automatic flow stands. The *Wait stages are phase
// decisions; the others are run by Engine.run without a command.
type stage uint8

const (
	stMulliganWait stage = iota
	stTurnStart
	stRidePhase
	stRideWait
	stMainPhase
	stMainWait
	stBattleStart
	stAttackStep
	stAttackWait
	stGuardStep
	stGuardWait
	stDriveStep
	stDriveCheck
	stDamageStep
	stDamageCheck
	stHitAbilities
	stCloseStep
	stFinished
	stageCount
)

// pendKind is an open pending decision (they pre-empt phase decisions).
type pendKind uint8

const (
	pendNone pendKind = iota
	pendTrigger
	pendOrder
	pendAbility
	pendChoice
	pendKindCount
)

// Check kinds of checkState.kind.
const (
	checkNone uint8 = iota
	checkDrive
	checkDamage
)

// Battle outcomes of battle.hit.
const (
	hitUnknown uint8 = iota
	hitYes
	hitNo
)

// card is the per-instance state, 12 bytes (a match keeps 101 of them, the
// largest part of its engine). Unit state (rested, moved, actUsed and the
// modifier sums) is cleared whenever the card leaves VC/RC.
type card struct {
	pr    uint8     // index into printings
	flags cardFlags // owner and face and unit state
	// Modifiers are kept as sums per duration: only totals are observable.
	critTurn  int16 // UnmarshalState bounds it by 1<<10
	powTurn   int32
	powBattle int32
}

// cardFlags are a card's one-bit fields. The bit positions are those of
// the snapshot's card flags byte (snapshot.go), which stores them as they are.
type cardFlags uint8

const (
	flagOwner1  cardFlags = 1 << iota // owned by player 1; clear: player 0
	flagFaceUp                        // damage zone and the starter before stand-up; set elsewhere
	flagRested                        // unit
	flagMoved                         // unit: moved this turn
	flagActUsed                       // unit: its ACT ability was used this turn

	cardFlagsMask = flagOwner1 | flagFaceUp | flagRested | flagMoved | flagActUsed
)

// ownerFlag is the owner bit for player p (0 or 1).
func ownerFlag(p int) cardFlags { return cardFlags(p) & flagOwner1 }

func (c *card) owner() uint8  { return uint8(c.flags & flagOwner1) }
func (c *card) faceUp() bool  { return c.flags&flagFaceUp != 0 }
func (c *card) rested() bool  { return c.flags&flagRested != 0 }
func (c *card) moved() bool   { return c.flags&flagMoved != 0 }
func (c *card) actUsed() bool { return c.flags&flagActUsed != 0 }

// set sets or clears f.
func (c *card) set(f cardFlags, on bool) {
	if on {
		c.flags |= f
	} else {
		c.flags &^= f
	}
}

// player holds one player's zones as instance ids (1..100).
type player struct {
	deck   []uint8 // index 0 = top
	hand   []uint8 // new cards appended
	soul   []uint8 // oldest first
	gc     []uint8
	drop   []uint8
	damage []uint8 // oldest first; face state in the card's flagFaceUp
	vc     uint8
	rc     [5]uint8
	trig   uint8
}

// battle is the open battle of the battle phase.
type battle struct {
	open         bool
	perfect      bool
	hit          uint8
	attackerSlot int8
	targetSlot   int8
	boosterSlot  int8 // slotNone: no boost
	attacker     uint8
	target       uint8
	booster      uint8
	driveTotal   uint8
	driveDone    uint8
	dmgTotal     uint8
	dmgDone      uint8
}

// checkState is the trigger check in progress (its card is in the owner's trigger zone).
type checkState struct {
	kind  uint8
	owner uint8
}

// activation is one pending AUTO ability, or an ACT ability being resolved.
type activation struct {
	source uint8
	key    protocol.AbilityKey
	target uint8 // A5: the boosted unit
}

// pending is the open pending decision.
type pending struct {
	kind    pendKind
	player  uint8
	act     activation
	choice  protocol.ChoiceKind
	options []int16 // modes, slots or printing indexes, by choice kind
}

// Engine is one match's rules state machine: deterministic, seeded and pure.
// Create it with New or UnmarshalState (the zero value is not a match). It is
// not safe for concurrent use; the match grain owns it.
type Engine struct {
	rng      rng
	seq      int64
	cards    [maxCards + 1]card // index = instance id; 0 unused
	pl       [2]player
	first    uint8
	tp       uint8 // turn player (the first player during setup)
	turn     int32
	phase    protocol.Phase
	step     protocol.Step
	stage    stage
	mullDone [2]bool
	battle   battle
	check    checkState
	queue    [2][]activation
	pend     pending
	finished bool
	winner   int8
	reason   protocol.FinishReason

	out []protocol.EventEnvelope // events of the call in progress
}

func (e *Engine) prOf(id uint8) *catalog.Printing { return &printings[e.cards[id].pr] }

func (e *Engine) abOf(id uint8) *abilityData { return &abilities[e.cards[id].pr] }

func (e *Engine) ref(id uint8) protocol.CardRef {
	return protocol.CardRef{InstanceID: int(id), PrintingID: printings[e.cards[id].pr].ID}
}

func (e *Engine) grade(id uint8) int { return printings[e.cards[id].pr].Grade }

func (e *Engine) vgGrade(p int) int { return e.grade(e.pl[p].vc) }

// unitAt is the unit on p's circle slot (-1 = VC), or 0.
func (e *Engine) unitAt(p, slot int) uint8 {
	switch {
	case slot == slotVC:
		return e.pl[p].vc
	case slot >= 0 && slot < 5:
		return e.pl[p].rc[slot]
	}
	return 0
}

// slotOf is the circle of unit id of player p, or slotNone.
func (e *Engine) slotOf(p int, id uint8) int {
	if id == 0 {
		return slotNone
	}
	if e.pl[p].vc == id {
		return slotVC
	}
	for s, u := range e.pl[p].rc {
		if u == id {
			return s
		}
	}
	return slotNone
}

// boosterSlotOf is the back-row circle behind front-row slot (docs/rules.md §2).
func boosterSlotOf(slot int) int {
	switch slot {
	case slotVC:
		return protocol.SlotBackCentre
	case protocol.SlotFrontLeft:
		return protocol.SlotBackLeft
	case protocol.SlotFrontRight:
		return protocol.SlotBackRight
	}
	return slotNone
}

// frontSlots are the front-row circles in ascending order.
var frontSlots = [3]int{slotVC, protocol.SlotFrontLeft, protocol.SlotFrontRight}

// resetUnit clears what a card loses when it leaves VC/RC, and turns it face up.
func (e *Engine) resetUnit(id uint8) {
	c := &e.cards[id]
	c.flags &^= flagRested | flagMoved | flagActUsed
	c.powTurn, c.powBattle, c.critTurn = 0, 0, 0
	c.set(flagFaceUp, true)
}

// unitPower is a unit's power without boost: base, modifiers and CONT bonus.
func (e *Engine) unitPower(p, slot int, id uint8) int {
	c := &e.cards[id]
	v := printings[c.pr].Power + int(c.powTurn) + int(c.powBattle)
	if slot >= 0 {
		if a := &abilities[c.pr]; a.key == protocol.AbilityGrade3Power && e.vgGrade(p) == 3 {
			v += a.power
		}
	}
	return max(0, v)
}

// power is the power of p's unit on slot (docs/rules.md §5), boost included.
func (e *Engine) power(p, slot int) int {
	id := e.unitAt(p, slot)
	if id == 0 {
		return 0
	}
	v := e.unitPower(p, slot, id)
	if b := &e.battle; b.open && b.booster != 0 && p == int(e.tp) && slot == int(b.attackerSlot) && id == b.attacker {
		if bs := int(b.boosterSlot); e.unitAt(p, bs) == b.booster {
			v += e.unitPower(p, bs, b.booster)
		}
	}
	return max(0, v)
}

// critical is a unit's critical (docs/rules.md §5).
func (e *Engine) critical(id uint8) int {
	c := &e.cards[id]
	return max(0, printings[c.pr].Critical+int(c.critTurn))
}

// handIndex is the lowest hand index of printing pr, or -1.
func (e *Engine) handIndex(p int, pr uint8) int {
	for i, id := range e.pl[p].hand {
		if e.cards[id].pr == pr {
			return i
		}
	}
	return -1
}

// handCount counts the copies of printing pr in p's hand.
func (e *Engine) handCount(p int, pr uint8) int {
	n := 0
	for _, id := range e.pl[p].hand {
		if e.cards[id].pr == pr {
			n++
		}
	}
	return n
}

// handPrintings appends the distinct printings in p's hand, ascending (= id order).
func (e *Engine) handPrintings(p int, dst []uint8) []uint8 {
	var seen [256]bool
	for _, id := range e.pl[p].hand {
		seen[e.cards[id].pr] = true
	}
	for i := range printings {
		if seen[i] {
			dst = append(dst, uint8(i))
		}
	}
	return dst
}

// lookupPrinting is the catalog index of id (false if unknown).
func lookupPrinting(id string) (uint8, bool) {
	if len(id) > protocol.MaxPrintingIDLen {
		return 0, false
	}
	i, ok := printingIndex[id]
	return i, ok
}

func removeAt(s []uint8, i int) []uint8 {
	copy(s[i:], s[i+1:])
	return s[:len(s)-1]
}

func indexOf(s []uint8, id uint8) int {
	for i, v := range s {
		if v == id {
			return i
		}
	}
	return -1
}

// faceUpCount and faceDownCount count p's damage by face.
func (e *Engine) faceUpCount(p int) int {
	n := 0
	for _, id := range e.pl[p].damage {
		if e.cards[id].faceUp() {
			n++
		}
	}
	return n
}

func (e *Engine) faceDownCount(p int) int { return len(e.pl[p].damage) - e.faceUpCount(p) }

// rearGuardCount counts p's occupied rear-guard circles.
func (e *Engine) rearGuardCount(p int) int {
	n := 0
	for _, u := range e.pl[p].rc {
		if u != 0 {
			n++
		}
	}
	return n
}

// emit appends ev with the next global seq.
func (e *Engine) emit(ev protocol.Event) {
	e.seq++
	e.out = append(e.out, protocol.EventEnvelope{Seq: e.seq, Event: ev})
}

// takeEvents hands the buffered events to the caller.
func (e *Engine) takeEvents() []protocol.EventEnvelope {
	out := e.out
	e.out = nil
	return out
}
