package game

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// stateVersion is the first byte of MarshalState. A new layout gets a new
// version; UnmarshalState refuses versions it does not know.
const stateVersion = 1

// Bounds of the variable parts of a state, checked before anything is built.
const (
	maxQueue   = 8
	maxOptions = 16
)

// MarshalState serialises the whole engine state, RNG included, in a compact
// versioned binary form (first byte = format version). An engine restored
// with UnmarshalState continues byte-identically. It never fails today; the
// error is there for future formats.
func (e *Engine) MarshalState() ([]byte, error) {
	return e.appendState(make([]byte, 0, 512)), nil
}

// StateHash is the SHA-256 of MarshalState, for tests and replays.
func (e *Engine) StateHash() [32]byte {
	var buf [512]byte
	return sha256.Sum256(e.appendState(buf[:0]))
}

func (e *Engine) appendState(b []byte) []byte {
	b = append(b, stateVersion)
	rs, _ := e.rng.pcg.MarshalBinary() // PCG's MarshalBinary cannot fail
	b = append(b, byte(len(rs)))
	b = append(b, rs...)
	b = binary.AppendUvarint(b, uint64(e.seq))
	b = append(b, e.first, e.tp)
	b = binary.AppendUvarint(b, uint64(e.turn))
	b = append(b, byte(e.phase), byte(e.step), byte(e.stage),
		bit(e.finished, 0)|bit(e.mullDone[0], 1)|bit(e.mullDone[1], 2), byte(e.winner+1))
	b = binary.AppendVarint(b, int64(e.reason)) // any value the server passed to Finish
	for id := 1; id <= maxCards; id++ {
		c := &e.cards[id]
		mods := c.powTurn != 0 || c.powBattle != 0 || c.critTurn != 0
		b = append(b, c.pr, uint8(c.flags)|bit(mods, 5))
		if mods {
			b = binary.AppendVarint(b, int64(c.powTurn))
			b = binary.AppendVarint(b, int64(c.powBattle))
			b = binary.AppendVarint(b, int64(c.critTurn))
		}
	}
	for p := range e.pl {
		pl := &e.pl[p]
		for _, z := range [...][]uint8{pl.deck, pl.hand, pl.soul, pl.gc, pl.drop, pl.damage} {
			b = append(b, byte(len(z)))
			b = append(b, z...)
		}
		b = append(b, pl.vc)
		b = append(b, pl.rc[:]...)
		b = append(b, pl.trig)
	}
	bt := &e.battle
	b = append(b, bit(bt.open, 0)|bit(bt.perfect, 1), bt.hit, byte(bt.attackerSlot+2), byte(bt.targetSlot+2), byte(bt.boosterSlot+2),
		bt.attacker, bt.target, bt.booster, bt.driveTotal, bt.driveDone, bt.dmgTotal, bt.dmgDone)
	b = append(b, e.check.kind, e.check.owner)
	for p := range e.queue {
		b = append(b, byte(len(e.queue[p])))
		for _, a := range e.queue[p] {
			b = append(b, a.source, byte(a.key), a.target)
		}
	}
	pd := &e.pend
	b = append(b, byte(pd.kind), pd.player, pd.act.source, byte(pd.act.key), pd.act.target, byte(pd.choice), byte(len(pd.options)))
	for _, o := range pd.options {
		b = binary.AppendVarint(b, int64(o))
	}
	return b
}

// bit is b as bit i of a flags byte.
func bit(b bool, i uint) byte {
	if b {
		return 1 << i
	}
	return 0
}

// stateReader decodes MarshalState bytes; the first error sticks. It keeps an
// offset rather than re-slicing, so reading writes no pointers.
type stateReader struct {
	b   []byte
	off int
	err error
}

func (r *stateReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadState}, args...)...)
	}
}

func (r *stateReader) left() int { return len(r.b) - r.off }

func (r *stateReader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated at %s", what)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *stateReader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if r.left() < n {
		r.fail("truncated at %s (%d bytes left, %d needed)", what, r.left(), n)
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *stateReader) uvarint(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || v > max {
		r.fail("bad %s", what)
		return 0
	}
	r.off += n
	return v
}

func (r *stateReader) varint(what string, lim int64) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 || v > lim || v < -lim {
		r.fail("bad %s", what)
		return 0
	}
	r.off += n
	return v
}

// ranged reads a byte that must be < n.
func (r *stateReader) ranged(what string, n int) byte {
	v := r.byte(what)
	if r.err == nil && int(v) >= n {
		r.fail("%s %d out of range (< %d)", what, v, n)
	}
	return v
}

// slot reads a circle number stored +2 (so slotNone = 0).
func (r *stateReader) slot(what string) int8 {
	return int8(r.ranged(what, 7)) - 2
}

// UnmarshalState restores an engine from MarshalState bytes. Corrupt,
// truncated or inconsistent input gives an error wrapping ErrBadState and
// never a panic; a restored engine continues byte-identically.
func UnmarshalState(data []byte) (*Engine, error) {
	r := &stateReader{b: data}
	if v := r.byte("version"); r.err == nil && v != stateVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadState, v, stateVersion)
	}
	e := &Engine{}
	e.allocZones()
	rs := r.bytes(int(r.ranged("rng length", 64)), "rng")
	if r.err == nil {
		if err := e.rng.pcg.UnmarshalBinary(rs); err != nil {
			return nil, fmt.Errorf("%w: rng: %w", ErrBadState, err)
		}
	}
	e.seq = int64(r.uvarint("seq", 1<<53))
	e.first = r.ranged("first player", 2)
	e.tp = r.ranged("turn player", 2)
	e.turn = int32(r.uvarint("turn", 1<<20))
	e.phase = protocol.Phase(r.ranged("phase", int(protocol.PhaseFinished)+1))
	e.step = protocol.Step(r.ranged("step", int(protocol.StepClose)+1))
	e.stage = stage(r.ranged("stage", int(stageCount)))
	f := r.ranged("flags", 8)
	e.finished, e.mullDone[0], e.mullDone[1] = f&1 != 0, f&2 != 0, f&4 != 0
	e.winner = int8(r.ranged("winner", 3)) - 1
	e.reason = protocol.FinishReason(r.varint("reason", 1<<31-1))
	for id := 1; id <= maxCards; id++ {
		c := &e.cards[id]
		c.pr = r.ranged("printing", len(printings))
		f := r.ranged("card flags", 64)
		c.flags = cardFlags(f) & cardFlagsMask
		if f&32 != 0 {
			c.powTurn = int32(r.varint("power modifier", 1<<24))
			c.powBattle = int32(r.varint("power modifier", 1<<24))
			c.critTurn = int16(r.varint("critical modifier", 1<<10))
			if c.powTurn == 0 && c.powBattle == 0 && c.critTurn == 0 {
				r.fail("card %d: modifier flag without modifiers", id)
			}
		}
	}
	for p := range e.pl {
		pl := &e.pl[p]
		for _, z := range [...]*[]uint8{&pl.deck, &pl.hand, &pl.soul, &pl.gc, &pl.drop, &pl.damage} {
			n := int(r.ranged("zone length", catalog.DeckSize+1))
			*z = append(*z, r.bytes(n, "zone")...)
		}
		pl.vc = r.byte("vanguard")
		copy(pl.rc[:], r.bytes(5, "rear-guards"))
		pl.trig = r.byte("trigger zone")
	}
	bt := &e.battle
	bf := r.ranged("battle flags", 4)
	bt.open, bt.perfect = bf&1 != 0, bf&2 != 0
	bt.hit = r.ranged("hit", 3)
	bt.attackerSlot, bt.targetSlot, bt.boosterSlot = r.slot("attacker slot"), r.slot("target slot"), r.slot("booster slot")
	bt.attacker, bt.target, bt.booster = r.ranged("attacker", maxCards+1), r.ranged("target", maxCards+1), r.ranged("booster", maxCards+1)
	bt.driveTotal, bt.driveDone = r.ranged("drive total", 3), r.ranged("drive done", 3)
	bt.dmgTotal, bt.dmgDone = r.byte("damage total"), r.byte("damage done")
	e.check.kind, e.check.owner = r.ranged("check kind", 3), r.ranged("check owner", 2)
	for p := range e.queue {
		n := int(r.ranged("queue length", maxQueue+1))
		for range n {
			a := activation{source: r.ranged("source", maxCards+1), key: protocol.AbilityKey(r.ranged("ability", int(protocol.AbilitySentinel)+1)), target: r.ranged("target", maxCards+1)}
			e.queue[p] = append(e.queue[p], a)
		}
	}
	pd := &e.pend
	pd.kind = pendKind(r.ranged("pending kind", int(pendKindCount)))
	pd.player = r.ranged("pending player", 2)
	pd.act = activation{source: r.ranged("source", maxCards+1), key: protocol.AbilityKey(r.ranged("ability", int(protocol.AbilitySentinel)+1)), target: r.ranged("target", maxCards+1)}
	pd.choice = protocol.ChoiceKind(r.ranged("choice kind", int(protocol.ChoiceSearchCard)+1))
	if n := int(r.ranged("options", maxOptions+1)); n > 0 {
		pd.options = make([]int16, n)
		for i := range pd.options {
			pd.options[i] = int16(r.varint("option", 255))
		}
	}
	if r.err == nil && r.left() != 0 {
		r.fail("%d trailing bytes", r.left())
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	return e, nil
}

// validate checks the structural invariants every reachable state has and
// that the engine relies on to never panic: card conservation and ownership,
// zone shapes, and a decision state that is coherent with the flow. Tests
// call it after every command; UnmarshalState refuses states that fail it.
func (e *Engine) validate() error {
	var where [maxCards + 1]int8
	var count [2]int
	place := func(p int, id uint8, zone string) error {
		if id == 0 || id > maxCards {
			return fmt.Errorf("player %d %s holds card id %d", p, zone, id)
		}
		if where[id] != 0 {
			return fmt.Errorf("card %d is in two zones", id)
		}
		if int(e.cards[id].owner()) != p {
			return fmt.Errorf("card %d of player %d is in player %d's %s", id, e.cards[id].owner(), p, zone)
		}
		where[id] = 1
		count[p]++
		return nil
	}
	for p := range e.pl {
		pl := &e.pl[p]
		for _, z := range [...]struct {
			name string
			ids  []uint8
		}{{"deck", pl.deck}, {"hand", pl.hand}, {"soul", pl.soul}, {"guardian circle", pl.gc}, {"drop", pl.drop}, {"damage", pl.damage}} {
			for _, id := range z.ids {
				if err := place(p, id, z.name); err != nil {
					return err
				}
			}
		}
		if err := place(p, pl.vc, "vanguard circle"); err != nil {
			return err
		}
		for _, id := range pl.rc {
			if id != 0 {
				if err := place(p, id, "rear-guard circles"); err != nil {
					return err
				}
			}
		}
		if pl.trig != 0 {
			if err := place(p, pl.trig, "trigger zone"); err != nil {
				return err
			}
		}
		if count[p] != catalog.DeckSize {
			return fmt.Errorf("player %d has %d cards, want %d", p, count[p], catalog.DeckSize)
		}
	}
	if e.finished != (e.stage == stFinished) || e.finished != (e.phase == protocol.PhaseFinished) {
		return fmt.Errorf("finished flag, stage %d and phase %d disagree", e.stage, e.phase)
	}
	if e.winner < -1 || e.winner > 1 || (!e.finished && e.winner != -1) {
		return fmt.Errorf("winner %d with finished=%v", e.winner, e.finished)
	}
	if e.finished {
		if e.pend.kind != pendNone || len(e.queue[0])+len(e.queue[1]) != 0 {
			return fmt.Errorf("a finished match has open decisions")
		}
		return nil
	}
	return e.validateFlow()
}

// validateFlow checks the decision state of a running match.
func (e *Engine) validateFlow() error {
	for p := range e.queue {
		for _, a := range e.queue[p] {
			if err := e.validateActivation(p, a); err != nil {
				return err
			}
		}
	}
	inBattle := e.stage >= stGuardStep && e.stage <= stCloseStep
	if inBattle && !e.battle.open {
		return fmt.Errorf("stage %d needs an open battle", e.stage)
	}
	if b := &e.battle; b.open && (!isFrontSlot(int(b.attackerSlot)) || !isFrontSlot(int(b.targetSlot)) ||
		(b.boosterSlot != slotNone && int(b.boosterSlot) != boosterSlotOf(int(b.attackerSlot)))) {
		return fmt.Errorf("battle circles %d/%d/%d are not an attack", b.attackerSlot, b.targetSlot, b.boosterSlot)
	}
	for p := range e.pl {
		if t := e.pl[p].trig; t != 0 && (e.check.kind == checkNone || int(e.check.owner) != p) {
			return fmt.Errorf("player %d's trigger zone is used outside a check", p)
		}
	}
	pd := &e.pend
	switch pd.kind {
	case pendNone:
		switch e.stage {
		case stMulliganWait, stRideWait, stMainWait, stAttackWait, stGuardWait:
		default:
			return fmt.Errorf("stage %d waits for no decision", e.stage)
		}
		if e.check.kind != checkNone {
			return fmt.Errorf("a check is open without a trigger decision")
		}
	case pendTrigger:
		if e.check.kind == checkNone || pd.player != e.check.owner || e.pl[pd.player].trig == 0 || !inBattle {
			return fmt.Errorf("trigger decision without its check")
		}
	case pendOrder:
		if len(e.queue[pd.player]) < 2 {
			return fmt.Errorf("order decision over %d abilities", len(e.queue[pd.player]))
		}
	case pendAbility:
		if err := e.validateActivation(int(pd.player), pd.act); err != nil {
			return err
		}
		if !e.abOf(pd.act.source).optional {
			return fmt.Errorf("ability decision for a mandatory ability")
		}
	case pendChoice:
		if err := e.validateActivation(int(pd.player), pd.act); err != nil {
			return err
		}
		if err := e.validateOptions(); err != nil {
			return err
		}
	}
	if pd.kind != pendTrigger && e.check.kind != checkNone {
		return fmt.Errorf("a check is open without a trigger decision")
	}
	return nil
}

// validateActivation checks that an activation names a card of player p with that ability.
func (e *Engine) validateActivation(p int, a activation) error {
	if a.source == 0 || a.source > maxCards || int(e.cards[a.source].owner()) != p {
		return fmt.Errorf("activation source %d is not player %d's card", a.source, p)
	}
	if e.abOf(a.source).key != a.key {
		return fmt.Errorf("card %d has no ability %d", a.source, a.key)
	}
	if a.target > maxCards {
		return fmt.Errorf("activation target %d", a.target)
	}
	return nil
}

// validateOptions checks the open choice's kind and options against its ability.
func (e *Engine) validateOptions() error {
	pd := &e.pend
	lo, hi, kind := 0, 0, protocol.ChoiceTarget
	switch pd.act.key {
	case protocol.AbilityRideSearch:
		lo, hi, kind = 0, len(printings)-1, protocol.ChoiceSearchCard
	case protocol.AbilityCallModes:
		lo, hi, kind = 0, 2, protocol.ChoiceMode
	case protocol.AbilityHitRetire:
		lo, hi = 0, 4
	case protocol.AbilityActDiscardPower:
		lo, hi = slotVC, 4
	default:
		return fmt.Errorf("ability %d makes no choice", pd.act.key)
	}
	if pd.choice != kind || len(pd.options) < 2 {
		return fmt.Errorf("choice kind %d with %d options for ability %d", pd.choice, len(pd.options), pd.act.key)
	}
	for _, o := range pd.options {
		if int(o) < lo || int(o) > hi {
			return fmt.Errorf("choice option %d outside %d..%d", o, lo, hi)
		}
	}
	return nil
}
