package game

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// maxCommands is the termination guard of docs/rules.md §14.9.
const maxCommands = 5000

// playOpts chooses which variant of random play a game uses.
type playOpts struct {
	// concede: call Finish at random points (conceded, timeout, absence, draw).
	concede bool
	// copyCheck: before each command, execute a random other legal command on
	// a Marshal/Unmarshal copy; it must be accepted.
	copyCheck bool
	// mutations per command that must be rejected without a trace.
	mutations int
	// views: build and scan both players' views after every command.
	views bool
}

var fullChecks = playOpts{copyCheck: true, mutations: 2, views: true}

// gameStats summarises one played game.
type gameStats struct {
	commands int
	reason   protocol.FinishReason
	winner   int
}

// decksFor picks the deck pairing of a seed: both mirrors and both orders.
func decksFor(seed uint64) [2][]string {
	ids := [2]catalog.DeckID{catalog.DeckEmberwing, catalog.DeckTidewarden}
	var d [2][]string
	for p := range d {
		d[p], _ = catalog.DeckList(ids[(seed>>uint(p))&1])
	}
	return d
}

// harness plays one game and checks every invariant of docs/rules.md §14 after
// every command. Its own choices come from its own seeded PCG, so a failure
// is reproduced by its seed alone.
type harness struct {
	e     *Engine
	r     *rand.Rand
	m     *zoneModel
	opts  playOpts
	seq   int64
	ended bool // GameFinished seen

	// Battle facts rebuilt from events.
	turn      int
	tp        int
	rides     int
	vgGrade   [2]int
	critBonus [maxCards + 1]int
	moved     [maxCards + 1]bool // D9: moved this turn
	atk       attackFacts
	attacks   []*protocol.AttackEvent // this command's attacks
	boosts    []*protocol.BoostEvent
	snap      *Engine                 // the state before the command, for rejections
	legal     []protocol.Intent       // the decider's commands after the last command, for checkView
	decision  *protocol.DecisionEvent // the last batch's Decision, for checkView
}

type attackFacts struct {
	active    bool
	vanguard  bool
	attacker  int
	grade     int
	targetVC  bool
	drives    int
	hitVC     bool
	expectDmg int
	dmgChecks int
}

// playGame plays one random game with seed and returns its first violation.
func playGame(seed uint64, opts playOpts) (st gameStats, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
		if err != nil {
			err = fmt.Errorf("seed %d, command %d: %w", seed, st.commands, err)
		}
	}()
	e, evs, err := New(seed, decksFor(seed))
	if err != nil {
		return st, err
	}
	h := &harness{e: e, r: rand.New(rand.NewPCG(seed, 0x7e57)), opts: opts}
	h.m = newZoneModel(e)
	h.vgGrade = [2]int{0, 0}
	if err := h.observe(evs); err != nil {
		return st, err
	}
	if err := h.checkState(); err != nil {
		return st, err
	}
	for !e.IsFinished() {
		if st.commands >= maxCommands {
			return st, fmt.Errorf("no end after %d commands", maxCommands)
		}
		if err := h.step(); err != nil {
			return st, err
		}
		st.commands++
	}
	if err := h.checkEnded(); err != nil {
		return st, err
	}
	st.reason, st.winner = e.reason, e.Winner()
	return st, nil
}

// step makes one decision (or a server Finish) and checks everything.
func (h *harness) step() error {
	e := h.e
	if h.opts.concede && h.r.IntN(200) == 0 {
		loser := h.r.IntN(3) - 1
		reason := []protocol.FinishReason{protocol.FinishConceded, protocol.FinishTimeout, protocol.FinishAbsence}[h.r.IntN(3)]
		evs := e.Finish(loser, reason)
		if len(evs) != 2 {
			return fmt.Errorf("Finish gave %d events", len(evs))
		}
		if err := batchShape(evs); err != nil {
			return fmt.Errorf("Finish: %w", err)
		}
		gf, ok := evs[1].Event.(*protocol.GameFinishedEvent)
		want := protocol.NoWinner
		if loser >= 0 {
			want = 1 - loser
		}
		if !ok || gf.Winner != want || gf.Reason != reason {
			return fmt.Errorf("Finish(%d, %d) gave %#v", loser, reason, evs[0].Event)
		}
		if err := h.observe(evs); err != nil {
			return err
		}
		return h.checkState()
	}
	d := e.Decider()
	legal := h.legal
	if legal == nil {
		legal = e.LegalCommands(d)
	}
	if err := h.checkLegal(d, legal); err != nil {
		return err
	}
	h.snap = copyEngine(h.snap, e)
	if err := h.checkRejections(d, legal); err != nil {
		return err
	}
	choices := legal[:len(legal)-1] // without Concede
	in := choices[h.r.IntN(len(choices))]
	if h.opts.copyCheck && h.r.IntN(copyCheckEvery) == 0 {
		if err := h.checkOnCopy(d, choices); err != nil {
			return err
		}
	}
	seq := e.LastSeq()
	evs, err := e.Execute(d, in)
	if err != nil {
		return fmt.Errorf("legal command %s refused: %w", formatIntent(in), err)
	}
	if e.LastSeq() <= seq {
		return fmt.Errorf("%s accepted but eventSeq stayed %d", formatIntent(in), seq)
	}
	if err := batchShape(evs); err != nil {
		return fmt.Errorf("after %s: %w", formatIntent(in), err)
	}
	if err := h.observe(evs); err != nil {
		return fmt.Errorf("after %s: %w", formatIntent(in), err)
	}
	if err := h.checkState(); err != nil {
		return fmt.Errorf("after %s: %w", formatIntent(in), err)
	}
	return nil
}

// copyCheckEvery is how often (in commands) checkOnCopy runs.
const copyCheckEvery = 3

// checkLegal checks the shape of the decider's command list (docs/rules.md §8, D8).
func (h *harness) checkLegal(d int, legal []protocol.Intent) error {
	e := h.e
	if d != 0 && d != 1 {
		return fmt.Errorf("running match has decider %d", d)
	}
	if n := len(legal); n < 2 || legal[n-1].IntentKind() != protocol.IntentConcede {
		return fmt.Errorf("decider's list %v has no command besides Concede", formatIntents(legal))
	}
	if len(legal) > protocol.MaxArrayLen {
		return fmt.Errorf("%d legal commands exceed the wire limit %d", len(legal), protocol.MaxArrayLen)
	}
	if o := e.LegalCommands(1 - d); len(o) != 1 || o[0].IntentKind() != protocol.IntentConcede {
		return fmt.Errorf("non-decider's list is %v", formatIntents(o))
	}
	if e.pend.kind != pendNone && len(legal)-1 < 2 {
		return fmt.Errorf("pending decision %d raised with %d option(s) (D8)", e.pend.kind, len(legal)-1)
	}
	for i := 1; i < len(legal); i++ {
		if compareIntents(legal[i-1], legal[i]) >= 0 {
			return fmt.Errorf("legal commands not in canonical order: %s before %s", formatIntent(legal[i-1]), formatIntent(legal[i]))
		}
	}
	return nil
}

// checkRejections sends commands that must be refused and checks that they
// leave no trace: the wrong player, Concede, and mutated commands.
func (h *harness) checkRejections(d int, legal []protocol.Intent) error {
	e := h.e
	pick := legal[h.r.IntN(len(legal)-1)]
	if err := h.expectReject(1-d, pick, ErrNotYourTurn); err != nil {
		return fmt.Errorf("wrong player: %w", err)
	}
	if err := h.expectReject(d, protocol.Concede{}, ErrIllegal); err != nil {
		return fmt.Errorf("concede: %w", err)
	}
	for range h.opts.mutations {
		m := mutateIntent(h.r, pick, e)
		if inList(m, legal) {
			continue
		}
		if err := h.expectReject(d, m, ErrIllegal); err != nil {
			return fmt.Errorf("mutated %s (from %s): %w", formatIntent(m), formatIntent(pick), err)
		}
	}
	return nil
}

func (h *harness) expectReject(p int, in protocol.Intent, want error) error {
	e := h.e
	seq := e.LastSeq()
	evs, err := e.Execute(p, in)
	if err == nil {
		return fmt.Errorf("%s accepted (%d events)", formatIntent(in), len(evs))
	}
	var rej *Rejection
	if !errors.As(err, &rej) || !errors.Is(err, want) {
		return fmt.Errorf("%s: got %v, want %v", formatIntent(in), err, want)
	}
	if len(evs) != 0 || e.LastSeq() != seq {
		return fmt.Errorf("%s rejected but produced events", formatIntent(in))
	}
	if !sameState(e, h.snap) {
		return fmt.Errorf("%s rejected but changed the state", formatIntent(in))
	}
	return nil
}

// cloneEngine is a deep copy of e (no shared slices).
func cloneEngine(e *Engine) *Engine {
	return copyEngine(nil, e)
}

// copyEngine makes dst a deep copy of e, reusing dst's zones when it has them.
func copyEngine(dst, e *Engine) *Engine {
	if dst == nil {
		dst = &Engine{}
		dst.allocZones()
	}
	zones, queues, opts := dst.pl, dst.queue, dst.pend.options
	c := dst
	*c = *e
	for p := range c.pl {
		src, z := &e.pl[p], &zones[p]
		c.pl[p] = player{deck: z.deck[:0], hand: z.hand[:0], soul: z.soul[:0], gc: z.gc[:0], drop: z.drop[:0], damage: z.damage[:0],
			vc: src.vc, rc: src.rc, trig: src.trig}
	}
	c.queue = [2][]activation{append(queues[0][:0], e.queue[0]...), append(queues[1][:0], e.queue[1]...)}
	c.pend.options = append(opts[:0], e.pend.options...)
	c.out = nil
	for p := range e.pl {
		src, dst := &e.pl[p], &c.pl[p]
		dst.deck = append(dst.deck, src.deck...)
		dst.hand = append(dst.hand, src.hand...)
		dst.soul = append(dst.soul, src.soul...)
		dst.gc = append(dst.gc, src.gc...)
		dst.drop = append(dst.drop, src.drop...)
		dst.damage = append(dst.damage, src.damage...)
	}
	return c
}

// sameState compares every field of two engines; TestSameStateCoversEngine
// keeps it in step with the Engine struct. It is much cheaper than comparing
// MarshalState bytes, which matters under -race.
func sameState(a, b *Engine) bool {
	if a.rng != b.rng || a.seq != b.seq || !cardsEqual(&a.cards, &b.cards) || a.first != b.first || a.tp != b.tp ||
		a.turn != b.turn || a.phase != b.phase || a.step != b.step || a.stage != b.stage ||
		a.mullDone != b.mullDone || a.battle != b.battle || a.check != b.check || a.finished != b.finished ||
		a.winner != b.winner || a.reason != b.reason {
		return false
	}
	for p := range a.pl {
		x, y := &a.pl[p], &b.pl[p]
		if x.vc != y.vc || x.rc != y.rc || x.trig != y.trig || !bytes.Equal(x.deck, y.deck) || !bytes.Equal(x.hand, y.hand) ||
			!bytes.Equal(x.soul, y.soul) || !bytes.Equal(x.gc, y.gc) || !bytes.Equal(x.drop, y.drop) || !bytes.Equal(x.damage, y.damage) {
			return false
		}
		if !slices.Equal(a.queue[p], b.queue[p]) {
			return false
		}
	}
	pa, pb := &a.pend, &b.pend
	return pa.kind == pb.kind && pa.player == pb.player && pa.act == pb.act && pa.choice == pb.choice &&
		slices.Equal(pa.options, pb.options)
}

// checkOnCopy executes a random legal command on a restored copy.
func (h *harness) checkOnCopy(d int, choices []protocol.Intent) error {
	before := h.e.appendState(nil)
	c, err := UnmarshalState(before)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if !sameState(c, h.e) {
		return fmt.Errorf("Unmarshal(Marshal(state)) differs from the state")
	}
	if got := c.appendState(nil); !bytes.Equal(got, before) {
		return fmt.Errorf("Marshal(Unmarshal(state)) differs")
	}
	if err := sameViews(h.e, c); err != nil {
		return fmt.Errorf("restored copy: %w", err)
	}
	in := choices[h.r.IntN(len(choices))]
	evs, err := c.Execute(d, in)
	if err != nil {
		return fmt.Errorf("legal %s refused on a restored copy: %w", formatIntent(in), err)
	}
	if len(evs) > 0 && evs[0].Seq != h.e.LastSeq()+1 {
		return fmt.Errorf("copy's events start at %d, want %d", evs[0].Seq, h.e.LastSeq()+1)
	}
	return nil
}

// observe checks a batch of events and feeds the model and the battle facts.
func (h *harness) observe(evs []protocol.EventEnvelope) error {
	h.attacks, h.boosts = h.attacks[:0], h.boosts[:0]
	for _, env := range evs {
		if err := h.observeOne(env); err != nil {
			return fmt.Errorf("event %d %s: %w", env.Seq, formatEvent(env.Event), err)
		}
	}
	if h.seq != h.e.LastSeq() {
		return fmt.Errorf("LastSeq %d, events end at %d", h.e.LastSeq(), h.seq)
	}
	return nil
}

func (h *harness) observeOne(env protocol.EventEnvelope) error {
	if h.ended {
		return errors.New("event after GameFinished")
	}
	if env.Seq != h.seq+1 {
		return fmt.Errorf("seq %d after %d", env.Seq, h.seq)
	}
	h.seq = env.Seq
	ev := env.Event
	if (env.Seq == 1) != (ev.EventKind() == protocol.EventGameStarted) {
		return errors.New("GameStarted must be exactly seq 1")
	}
	// Projection and hidden information, for both viewers.
	refs := eventRefs(ev)
	var before [8]mzone
	for i, r := range refs {
		if i < len(before) && r.InstanceID >= 1 && r.InstanceID <= maxCards {
			before[i] = h.m.zone[r.InstanceID]
		}
	}
	if err := h.m.apply(ev); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if d, ok := ev.(*protocol.DecisionEvent); ok {
		h.decision = d
	}
	owner := eventOwner(ev)
	for viewer := range 2 {
		proj, ok := ProjectEvent(viewer, ev)
		vis := protocol.EventVisibility(ev.EventKind())
		switch {
		case vis == protocol.OwnerOnly && owner != viewer:
			if ok {
				return fmt.Errorf("owner-only event of player %d shown to %d", owner, viewer)
			}
			continue
		case !ok:
			return fmt.Errorf("event hidden from player %d", viewer)
		case ev.EventKind() == protocol.EventDecision:
			continue // checkDecision checked both copies against the views
		case vis == protocol.Redacted && owner != viewer:
			if len(eventRefs(proj)) != 0 || redactedCount(proj) != redactedCount(ev) {
				return fmt.Errorf("redacted event for %d keeps cards or loses its count", viewer)
			}
			continue
		case proj != ev:
			return fmt.Errorf("event for %d changed", viewer)
		}
		for i, r := range eventRefs(proj) {
			if r.InstanceID < 1 || r.InstanceID > maxCards || int(h.m.owner[r.InstanceID]) == viewer {
				continue
			}
			after := h.m.zone[r.InstanceID]
			if i < len(before) && !before[i].public() && !after.public() {
				return fmt.Errorf("player %d sees card %d of the opponent moving %v→%v", viewer, r.InstanceID, before[i], after)
			}
		}
	}
	return h.facts(ev)
}

// eventOwner is the player an owner-only or redacted event belongs to.
func eventOwner(ev protocol.Event) int {
	switch v := ev.(type) {
	case *protocol.CardsDrawnEvent:
		return v.Player
	case *protocol.ReturnedToDeckEvent:
		return v.Player
	case *protocol.CardSearchedViewEvent:
		return v.Player
	case *protocol.SearchFailedViewEvent:
		return v.Player
	case *protocol.DecisionEvent:
		return v.Player
	}
	return -1
}

func redactedCount(ev protocol.Event) int {
	switch v := ev.(type) {
	case *protocol.CardsDrawnEvent:
		return v.Count
	case *protocol.ReturnedToDeckEvent:
		return v.Count
	}
	return -1
}

// facts rebuilds the battle facts of docs/rules.md §14.4-5 from the event stream.
func (h *harness) facts(ev protocol.Event) error {
	a := &h.atk
	switch v := ev.(type) {
	case *protocol.TurnStartedEvent:
		if v.TurnNumber != h.turn+1 {
			return fmt.Errorf("turn %d after %d", v.TurnNumber, h.turn)
		}
		h.turn, h.tp, h.rides = v.TurnNumber, v.Player, 0
		h.critBonus = [maxCards + 1]int{}
		h.moved = [maxCards + 1]bool{}
	case *protocol.CallEvent:
		h.moved[v.Card.InstanceID] = false // a new unit
	case *protocol.MoveEvent:
		for _, c := range eventRefs(v) {
			if h.moved[c.InstanceID] {
				return fmt.Errorf("unit %d moved twice this turn (D9)", c.InstanceID)
			}
			h.moved[c.InstanceID] = true
		}
	case *protocol.RideEvent:
		h.rides++
		if h.rides > 1 {
			return errors.New("second ride this turn")
		}
		g := gradeOf(v.Card.PrintingID)
		if g < h.vgGrade[v.Player] || g > h.vgGrade[v.Player]+1 {
			return fmt.Errorf("ride grade %d onto grade %d", g, h.vgGrade[v.Player])
		}
		h.vgGrade[v.Player] = g
		h.critBonus[v.Previous.InstanceID] = 0
	case *protocol.AttackEvent:
		if h.turn == 1 {
			return errors.New("attack on the first player's turn 1")
		}
		if a.active {
			return errors.New("attack while a battle is open")
		}
		*a = attackFacts{active: true, vanguard: v.AttackerSlot == slotVC, attacker: v.Attacker.InstanceID,
			grade: gradeOf(v.Attacker.PrintingID), targetVC: v.TargetSlot == slotVC}
		h.attacks = append(h.attacks, v)
	case *protocol.BoostEvent:
		h.boosts = append(h.boosts, v)
	case *protocol.DriveCheckEvent:
		a.drives++
		if want := driveTotal(a); !a.vanguard || v.Index != a.drives || v.Total != want {
			return fmt.Errorf("drive check %d/%d, expected check %d of %d", v.Index, v.Total, a.drives, want)
		}
	case *protocol.PhaseStartedEvent:
		if v.Phase == protocol.PhaseBattle && v.Step == protocol.StepDamage && a.drives != driveTotal(a) {
			return fmt.Errorf("%d drive checks, want %d", a.drives, driveTotal(a))
		}
		if v.Phase == protocol.PhaseBattle && v.Step == protocol.StepClose {
			if a.hitVC && a.dmgChecks != a.expectDmg {
				return fmt.Errorf("%d damage checks, want %d", a.dmgChecks, a.expectDmg)
			}
			*a = attackFacts{}
		}
	case *protocol.BattleResolvedEvent:
		if v.Hit != (v.AttackerPower >= v.DefenderPower && !v.PerfectGuard) {
			return fmt.Errorf("hit=%v with %d vs %d, perfect=%v", v.Hit, v.AttackerPower, v.DefenderPower, v.PerfectGuard)
		}
		if v.Hit && a.targetVC {
			a.hitVC = true
			a.expectDmg = 1 + h.critBonus[a.attacker]
		}
	case *protocol.DamageCheckEvent:
		a.dmgChecks++
		if !a.hitVC || v.Index != a.dmgChecks || v.Total != a.expectDmg {
			return fmt.Errorf("damage check %d/%d, expected check %d of %d", v.Index, v.Total, a.dmgChecks, a.expectDmg)
		}
	case *protocol.TriggerResolvedEvent:
		switch v.Trigger {
		case protocol.TriggerCritical:
			if u := h.modelUnit(v.Player, v.EffectTarget); u != 0 {
				h.critBonus[u]++
			} else {
				return fmt.Errorf("critical onto empty circle %d", v.EffectTarget)
			}
		case protocol.TriggerHeal:
			// The model has already applied the heal: count it back.
			own, opp := h.damageCount(v.Player), h.damageCount(1-v.Player)
			if v.Healed != nil {
				own++
			}
			allowed := own >= 1 && own >= opp
			if (v.Healed != nil) != allowed {
				return fmt.Errorf("heal=%v with damage %d vs %d", v.Healed != nil, own, opp)
			}
		}
	case *protocol.RetireEvent:
		h.critBonus[v.Card.InstanceID] = 0
	case *protocol.GuardEvent:
		h.critBonus[v.Card.InstanceID] = 0
	case *protocol.GameFinishedEvent:
		h.ended = true
		if a.hitVC && a.dmgChecks > a.expectDmg {
			return fmt.Errorf("%d damage checks, want at most %d", a.dmgChecks, a.expectDmg)
		}
		if v.Winner == protocol.NoWinner && v.Reason == protocol.FinishDraw {
			// docs/rules.md §9: the starter catalog cannot reach a check-point draw.
			return errors.New("check-point draw reached")
		}
	}
	return nil
}

func driveTotal(a *attackFacts) int {
	switch {
	case !a.vanguard:
		return 0
	case a.grade == 3:
		return 2
	}
	return 1
}

func gradeOf(printingID string) int {
	p, ok := catalog.LookupPrinting(printingID)
	if !ok {
		return -1
	}
	return p.Grade
}

// modelUnit is the unit the model has on p's circle slot.
func (h *harness) modelUnit(p, slot int) int {
	if slot == slotVC {
		return int(h.m.vc[p])
	}
	if slot >= 0 && slot < 5 {
		return int(h.m.rc[p][slot])
	}
	return 0
}

func (h *harness) damageCount(p int) int {
	n := 0
	for id := 1; id <= maxCards; id++ {
		if int(h.m.owner[id]) == p && (h.m.zone[id] == mDamageUp || h.m.zone[id] == mDamageDown) {
			n++
		}
	}
	return n
}

// checkState checks the state invariants of docs/rules.md §14 after a command.
func (h *harness) checkState() error {
	e := h.e
	if err := e.validate(); err != nil {
		return err
	}
	if err := h.m.agrees(e); err != nil {
		return err
	}
	if e.IsFinished() != h.ended {
		return fmt.Errorf("finished=%v but GameFinished seen=%v", e.IsFinished(), h.ended)
	}
	running := !e.IsFinished()
	for p := range e.pl {
		pl := &e.pl[p]
		vg := e.vgGrade(p)
		if e.cards[pl.vc].faceUp() && vg != h.vgGrade[p] {
			return fmt.Errorf("player %d vanguard grade %d, events say %d", p, vg, h.vgGrade[p])
		}
		if running {
			if len(pl.damage) >= lossDamage {
				return fmt.Errorf("player %d has %d damage in a running game", p, len(pl.damage))
			}
			if len(pl.gc) > 0 && (!e.battle.open || p == int(e.tp) || e.stage < stGuardStep || e.stage > stCloseStep) {
				return fmt.Errorf("player %d's guardian circle used outside a guard-close window", p)
			}
			if pl.trig != 0 && e.pend.kind != pendTrigger {
				return fmt.Errorf("trigger zone holds a card outside a trigger decision")
			}
		}
		for s := slotVC; s < 5; s++ {
			u := e.unitAt(p, s)
			if u == 0 {
				continue
			}
			c := &e.cards[u]
			pw, cr := e.power(p, s), e.critical(u)
			if pw < 0 || cr < 0 {
				return fmt.Errorf("negative power %d or critical %d", pw, cr)
			}
			if s >= 0 && e.grade(u) > vg {
				return fmt.Errorf("rear-guard grade %d above vanguard grade %d", e.grade(u), vg)
			}
			boosted := e.battle.open && p == int(e.tp) && s == int(e.battle.attackerSlot) && e.battle.booster != 0
			cont := s >= 0 && e.abOf(u).key == protocol.AbilityGrade3Power && vg == 3
			if c.powTurn == 0 && c.powBattle == 0 && !boosted && !cont && pw != e.prOf(u).Power {
				return fmt.Errorf("unmodified unit %d has power %d, base %d", u, pw, e.prOf(u).Power)
			}
			if c.critTurn == 0 && cr != e.prOf(u).Critical {
				return fmt.Errorf("unmodified unit %d has critical %d", u, cr)
			}
		}
	}
	for _, a := range h.attacks {
		u := e.unitAt(a.Player, a.AttackerSlot)
		if !isFrontSlot(a.AttackerSlot) || u != uint8(a.Attacker.InstanceID) || !e.cards[u].rested() {
			return fmt.Errorf("attacker %d is not a rested front-row unit on %d", a.Attacker.InstanceID, a.AttackerSlot)
		}
	}
	for i, b := range h.boosts {
		u := e.unitAt(b.Player, b.BoosterSlot)
		if i >= len(h.attacks) || b.BoosterSlot != boosterSlotOf(h.attacks[i].AttackerSlot) ||
			u != uint8(b.Booster.InstanceID) || !e.cards[u].rested() || e.grade(u) > 1 {
			return fmt.Errorf("booster %d is not a rested grade 0-1 unit behind the attacker", b.Booster.InstanceID)
		}
	}
	h.legal = nil
	if d := e.Decider(); d >= 0 {
		h.legal = e.LegalCommands(d)
	}
	if h.opts.views {
		for viewer := range 2 {
			if err := h.checkView(viewer); err != nil {
				return fmt.Errorf("view of player %d: %w", viewer, err)
			}
		}
	}
	return nil
}

// checkView checks one player's view against the state and the hidden-information rules.
func (h *harness) checkView(viewer int) error {
	e := h.e
	v := e.View(viewer)
	d := e.Decider()
	if v.EventSeq != e.LastSeq() || v.You != viewer || v.ActivePlayer != d || v.IsFinished != e.IsFinished() || v.Winner != e.Winner() {
		return errors.New("header fields disagree with the engine")
	}
	if viewer != d {
		if len(v.LegalIntents) != 1 || v.LegalIntents[0].IntentKind() != protocol.IntentConcede {
			if !(e.IsFinished() && len(v.LegalIntents) == 0) {
				return errors.New("a non-decider's legalIntents is not [Concede]")
			}
		}
	} else if h.legal != nil && !slices.EqualFunc(v.LegalIntents, h.legal, protocol.IntentsEqual) {
		return errors.New("legalIntents differ from LegalCommands")
	}
	opp := 1 - viewer
	pv := &v.Players[opp]
	if len(pv.Hand) != 0 || pv.HandCount != len(e.pl[opp].hand) || pv.DeckCount != len(e.pl[opp].deck) ||
		pv.FaceDownDamage != e.faceDownCount(opp) {
		return errors.New("opponent's counts wrong or hand shown")
	}
	own := &v.Players[viewer]
	if len(own.Hand) != len(e.pl[viewer].hand) {
		return errors.New("own hand incomplete")
	}
	for i, c := range own.Hand {
		if c.InstanceID != int(e.pl[viewer].hand[i]) {
			return errors.New("own hand out of order")
		}
	}
	if !e.cards[e.pl[opp].vc].faceUp() && *pv.Vanguard != (protocol.CardView{}) {
		return errors.New("face-down starter shown to the opponent")
	}
	var bad error
	for p := range 2 {
		scanPlayerView(&v.Players[p], func(c *protocol.CardView, z mzone) {
			if c.InstanceID == 0 && p == opp && z == mVC {
				return // the face-down starter
			}
			id := c.InstanceID
			switch {
			case id < 1 || id > maxCards:
				bad = fmt.Errorf("card view with instance %d", id)
			case h.m.zone[id] != z && !(z == mVC && h.m.zone[id] == mVCDown):
				bad = fmt.Errorf("card %d shown in %v, it is in %v", id, z, h.m.zone[id])
			case p == opp && !h.m.zone[id].public():
				bad = fmt.Errorf("opponent's hidden card %d shown", id)
			case int(h.m.owner[id]) != p || c.PrintingID != h.m.printID[id]:
				bad = fmt.Errorf("card %d shown as %s of player %d", id, c.PrintingID, p)
			case c.BasePower != e.prOf(uint8(id)).Power || c.BaseCritical != e.prOf(uint8(id)).Critical:
				bad = fmt.Errorf("card %d base stats differ from the catalog", id)
			case c.Power < 0 || c.Critical < 0:
				bad = fmt.Errorf("card %d negative power or critical", id)
			}
		})
	}
	if bad != nil {
		return bad
	}
	mine := d == viewer
	choosing := false
	switch e.pend.kind {
	case pendChoice, pendAbility, pendOrder:
		choosing = true
	}
	if !mine && (v.Choice != nil || v.Ability != nil || v.Order != nil) {
		return errors.New("another player's choice details shown")
	}
	if mine && choosing && v.Choice == nil && v.Ability == nil && v.Order == nil {
		return errors.New("the decider's pending decision is missing")
	}
	if v.OpponentChoosing != (!e.IsFinished() && d == opp && choosing) {
		return fmt.Errorf("opponentChoosing=%v", v.OpponentChoosing)
	}
	if (v.Trigger != nil) != (!e.IsFinished() && e.pend.kind == pendTrigger) {
		return errors.New("trigger view present iff a trigger decision is open")
	}
	if v.Trigger != nil && h.m.zone[v.Trigger.Card.InstanceID] != mTrigger {
		return errors.New("trigger view names a card outside the trigger zone")
	}
	if (v.Battle != nil) != (!e.IsFinished() && e.battle.open) {
		return errors.New("battle view present iff a battle is open")
	}
	return h.checkDecision(viewer, &v)
}

// scanPlayerView calls f for every card view in pv with the zone it claims.
func scanPlayerView(pv *protocol.PlayerView, f func(*protocol.CardView, mzone)) {
	for i := range pv.Hand {
		f(&pv.Hand[i], mHand)
	}
	if pv.Vanguard != nil {
		f(pv.Vanguard, mVC)
	}
	for _, c := range pv.RearGuards {
		if c != nil {
			f(c, mRC)
		}
	}
	for i := range pv.Guardian {
		f(&pv.Guardian[i], mGC)
	}
	for i := range pv.Soul {
		f(&pv.Soul[i], mSoul)
	}
	for i := range pv.Drop {
		f(&pv.Drop[i], mDrop)
	}
	if pv.Trigger != nil {
		f(pv.Trigger, mTrigger)
	}
	for i := range pv.FaceUpDamage {
		f(&pv.FaceUpDamage[i], mDamageUp)
	}
}

// checkEnded checks the finished match: no decider, no commands, no second end.
func (h *harness) checkEnded() error {
	e := h.e
	if !h.ended {
		return errors.New("finished without GameFinished")
	}
	if e.Decider() != -1 || len(e.LegalCommands(0)) != 0 || len(e.LegalCommands(1)) != 0 {
		return errors.New("a finished match still has a decider or commands")
	}
	h.snap = cloneEngine(e)
	for p := range 2 {
		for _, in := range []protocol.Intent{protocol.EndTurn{}, protocol.PassGuard{}, protocol.Concede{}} {
			if err := h.expectReject(p, in, ErrMatchFinished); err != nil {
				return fmt.Errorf("after the end: %w", err)
			}
		}
	}
	if evs := e.Finish(0, protocol.FinishConceded); evs != nil {
		return errors.New("Finish after the end produced events")
	}
	return h.checkState()
}

// inList reports whether in is one of legal (a mulligan's indexes as a set).
func inList(in protocol.Intent, legal []protocol.Intent) bool {
	if m, ok := valueIntent(in).(protocol.Mulligan); ok {
		s := slices.Clone(m.HandIndexes)
		slices.Sort(s)
		in = protocol.Mulligan{HandIndexes: s}
	}
	for _, l := range legal {
		if protocol.IntentsEqual(in, l) {
			return true
		}
	}
	return false
}

// compareIntents is the canonical order of docs/rules.md §8: by intent key, then by
// fields ascending, nil before values, strings in byte order.
func compareIntents(a, b protocol.Intent) int {
	a, b = valueIntent(a), valueIntent(b)
	if c := cmp.Compare(a.IntentKind(), b.IntentKind()); c != 0 {
		return c
	}
	switch x := a.(type) {
	case protocol.Mulligan:
		return slices.Compare(x.HandIndexes, b.(protocol.Mulligan).HandIndexes)
	case protocol.Ride:
		return cmp.Compare(x.PrintingID, b.(protocol.Ride).PrintingID)
	case protocol.Call:
		y := b.(protocol.Call)
		return cmp.Or(cmp.Compare(x.PrintingID, y.PrintingID), cmp.Compare(x.Slot, y.Slot))
	case protocol.Move:
		y := b.(protocol.Move)
		return cmp.Or(cmp.Compare(x.FromSlot, y.FromSlot), cmp.Compare(x.ToSlot, y.ToSlot))
	case protocol.Attack:
		y := b.(protocol.Attack)
		return cmp.Or(cmp.Compare(x.AttackerSlot, y.AttackerSlot), cmp.Compare(x.TargetSlot, y.TargetSlot), compareOpt(x.BoosterSlot, y.BoosterSlot))
	case protocol.Guard:
		y := b.(protocol.Guard)
		return cmp.Or(cmp.Compare(x.PrintingID, y.PrintingID), compareOpt(x.DiscardPrintingID, y.DiscardPrintingID))
	case protocol.Intercept:
		return cmp.Compare(x.Slot, b.(protocol.Intercept).Slot)
	case protocol.ResolveTrigger:
		y := b.(protocol.ResolveTrigger)
		return cmp.Or(cmp.Compare(x.PowerTarget, y.PowerTarget), cmp.Compare(x.EffectTarget, y.EffectTarget))
	case protocol.SelectTrigger:
		return cmp.Compare(x.Index, b.(protocol.SelectTrigger).Index)
	case protocol.ResolveAbility:
		y := b.(protocol.ResolveAbility)
		return cmp.Compare(boolInt(x.Accept), boolInt(y.Accept))
	case protocol.Choose:
		return cmp.Compare(x.Index, b.(protocol.Choose).Index)
	case protocol.ActivateAbility:
		y := b.(protocol.ActivateAbility)
		return cmp.Or(cmp.Compare(x.InstanceID, y.InstanceID), compareOpt(x.DiscardPrintingID, y.DiscardPrintingID))
	}
	return 0
}

func compareOpt[T cmp.Ordered](a, b *T) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmp.Compare(*a, *b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mutateIntent returns a damaged variant of in: a wrong slot, an unknown or
// absent printing, an out-of-range index, or a command of another kind.
func mutateIntent(r *rand.Rand, in protocol.Intent, e *Engine) protocol.Intent {
	badSlot := func() int { return []int{-3, -2, -1, 0, 1, 2, 3, 4, 5, 99}[r.IntN(10)] }
	badPrinting := func() string {
		if r.IntN(3) == 0 {
			return []string{"", "S9-999", "s1-001", "S1-0010", "x"}[r.IntN(5)]
		}
		return printings[r.IntN(len(printings))].ID
	}
	badIndex := func() int { return []int{-1, 0, 1, 2, 3, 5, 16, 1 << 20}[r.IntN(8)] }
	switch v := in.(type) {
	case protocol.Mulligan:
		idx := slices.Clone(v.HandIndexes)
		switch r.IntN(3) {
		case 0:
			idx = append(idx, badIndex())
		case 1:
			idx = append(idx, idx[0])
		default:
			idx = nil
		}
		return protocol.Mulligan{HandIndexes: idx}
	case protocol.Ride:
		return protocol.Ride{PrintingID: badPrinting()}
	case protocol.Call:
		if r.IntN(2) == 0 {
			v.Slot = badSlot()
		} else {
			v.PrintingID = badPrinting()
		}
		return v
	case protocol.Move:
		return protocol.Move{FromSlot: badSlot(), ToSlot: badSlot()}
	case protocol.Attack:
		switch r.IntN(3) {
		case 0:
			v.AttackerSlot = badSlot()
		case 1:
			v.TargetSlot = badSlot()
		default:
			v.BoosterSlot = protocol.IntPtr(badSlot())
		}
		return v
	case protocol.Guard:
		if r.IntN(2) == 0 {
			v.PrintingID = badPrinting()
		} else {
			v.DiscardPrintingID = protocol.StringPtr(badPrinting())
		}
		return v
	case protocol.Intercept:
		return protocol.Intercept{Slot: badSlot()}
	case protocol.ResolveTrigger:
		return protocol.ResolveTrigger{PowerTarget: badSlot(), EffectTarget: badSlot()}
	case protocol.SelectTrigger:
		return protocol.SelectTrigger{Index: badIndex()}
	case protocol.Choose:
		return protocol.Choose{Index: badIndex()}
	case protocol.ActivateAbility:
		if r.IntN(2) == 0 {
			v.InstanceID = []int{-1, 0, 101, 255, 1 + r.IntN(maxCards)}[r.IntN(5)]
		} else if v.DiscardPrintingID == nil {
			v.DiscardPrintingID = protocol.StringPtr(badPrinting())
		} else {
			v.DiscardPrintingID = nil
		}
		return v
	}
	// Bodyless commands: a command of another kind.
	others := []protocol.Intent{
		protocol.FinishMulligan{}, protocol.SkipRide{}, protocol.EnterBattle{}, protocol.PassGuard{},
		protocol.EndTurn{}, protocol.ResolveAbility{Accept: r.IntN(2) == 0}, protocol.Choose{Index: badIndex()},
		protocol.Ride{PrintingID: badPrinting()}, protocol.Intercept{Slot: badSlot()},
		protocol.Attack{AttackerSlot: badSlot(), TargetSlot: badSlot()}, protocol.Mulligan{HandIndexes: []int{badIndex()}},
		protocol.ResolveTrigger{PowerTarget: badSlot(), EffectTarget: badSlot()}, protocol.SelectTrigger{Index: badIndex()},
		protocol.UnknownIntent{Key: 99},
	}
	return others[r.IntN(len(others))]
}

// cardsEqual compares the card tables as memory: the generated == walks
// every field of every card, which is slow under -race. Padding is always
// zero (Go zeroes memory and copies whole structs), so it cannot differ.
func cardsEqual(a, b *[maxCards + 1]card) bool {
	n := int(unsafe.Sizeof(*a))
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), n), unsafe.Slice((*byte)(unsafe.Pointer(b)), n))
}

// TestSameStateCoversEngine fails when a field is added to Engine (or its
// parts) without teaching sameState, cloneEngine and MarshalState about it.
func TestSameStateCoversEngine(t *testing.T) {
	want := map[string][]string{
		"Engine":     {"rng", "seq", "cards", "pl", "first", "tp", "turn", "phase", "step", "stage", "mullDone", "battle", "check", "queue", "pend", "finished", "winner", "reason", "out"},
		"player":     {"deck", "hand", "soul", "gc", "drop", "damage", "vc", "rc", "trig"},
		"card":       {"pr", "flags", "critTurn", "powTurn", "powBattle"},
		"battle":     {"open", "perfect", "hit", "attackerSlot", "targetSlot", "boosterSlot", "attacker", "target", "booster", "driveTotal", "driveDone", "dmgTotal", "dmgDone"},
		"checkState": {"kind", "owner"},
		"activation": {"source", "key", "target"},
		"pending":    {"kind", "player", "act", "choice", "options"},
	}
	// cardsEqual compares bytes, so a card must have no padding; and 12
	// bytes is what keeps a match's 101 cards small (BenchmarkEngineMemory).
	if n := unsafe.Sizeof(card{}); n != 12 {
		t.Errorf("a card is %d bytes, want 12 (no padding)", n)
	}
	for _, v := range []any{Engine{}, player{}, card{}, battle{}, checkState{}, activation{}, pending{}} {
		typ := reflect.TypeOf(v)
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, want[typ.Name()]) {
			t.Errorf("%s fields are %v; update sameState, cloneEngine, appendState and this list (%v)", typ.Name(), got, want[typ.Name()])
		}
	}
}

// sameViews checks that two states at the same eventSeq (the live engine
// and a restored copy of it) project to byte-identical views for both seats:
// with "every accepted command advances the seq" (batchShape), a view is a
// function of (match, eventSeq, seat).
func sameViews(a, b *Engine) error {
	if a.LastSeq() != b.LastSeq() {
		return fmt.Errorf("eventSeq %d and %d", a.LastSeq(), b.LastSeq())
	}
	for viewer := range 2 {
		x, err := protocol.EncodeServerFrame(&protocol.ServerSnapshot{View: a.View(viewer)})
		if err != nil {
			return fmt.Errorf("encode view of %d: %w", viewer, err)
		}
		y, err := protocol.EncodeServerFrame(&protocol.ServerSnapshot{View: b.View(viewer)})
		if err != nil {
			return fmt.Errorf("encode view of %d: %w", viewer, err)
		}
		if !bytes.Equal(x, y) {
			return fmt.Errorf("views of player %d differ at eventSeq %d", viewer, a.LastSeq())
		}
	}
	return nil
}

// checkDecision checks a Decision (the batch's last event but a
// GameFinished, so the engine state is the one it describes) against both
// seats' views: each seat's copy carries exactly the view's derived parts.
func (h *harness) checkDecision(viewer int, v *protocol.MatchView) error {
	e, d := h.e, h.decision
	if d == nil {
		return errors.New("no Decision in the batch")
	}
	if d.Player != e.Decider() {
		return fmt.Errorf("decision of %d, decider %d", d.Player, e.Decider())
	}
	{
		pe, ok := ProjectEvent(viewer, d)
		if !ok {
			return fmt.Errorf("decision hidden from %d", viewer)
		}
		p := pe.(*protocol.DecisionEvent)
		want := v.LegalIntents
		if viewer != d.Player {
			want = nil
		}
		switch {
		case !reflect.DeepEqual(p.Battle, v.Battle):
			return fmt.Errorf("decision for %d: battle %+v, view %+v", viewer, p.Battle, v.Battle)
		case !reflect.DeepEqual(p.Trigger, v.Trigger):
			return fmt.Errorf("decision for %d: trigger differs from the view", viewer)
		case !reflect.DeepEqual(p.Choice, v.Choice), !reflect.DeepEqual(p.Ability, v.Ability), !reflect.DeepEqual(p.Order, v.Order):
			return fmt.Errorf("decision for %d: choice/ability/order differ from the view", viewer)
		case (p.Pending && d.Player == 1-viewer) != v.OpponentChoosing:
			return fmt.Errorf("decision for %d: pending=%v, view opponentChoosing=%v", viewer, p.Pending, v.OpponentChoosing)
		case !slices.EqualFunc(p.LegalIntents, want, protocol.IntentsEqual):
			return fmt.Errorf("decision for %d: %d legal intents, view %d", viewer, len(p.LegalIntents), len(v.LegalIntents))
		}
		listed := map[[2]int]protocol.UnitState{}
		for _, u := range p.Units {
			if !u.FaceUp && u.Player != viewer {
				return fmt.Errorf("decision for %d shows the other seat's face-down unit", viewer)
			}
			listed[[2]int{u.Player, u.Slot}] = u
		}
		for pl := range 2 {
			pv := &v.Players[pl]
			units := append([]*protocol.CardView{pv.Vanguard}, pv.RearGuards[:]...)
			for i, c := range units {
				slot := i - 1
				if c == nil || (c.InstanceID == 0 && pl != viewer) {
					if _, ok := listed[[2]int{pl, slot}]; ok {
						return fmt.Errorf("decision for %d lists an empty or hidden circle %d/%d", viewer, pl, slot)
					}
					continue
				}
				u, ok := listed[[2]int{pl, slot}]
				if !ok {
					u = protocol.UnitState{Player: pl, Slot: slot, Card: protocol.CardRef{InstanceID: c.InstanceID, PrintingID: c.PrintingID},
						FaceUp: true, Power: c.BasePower, Critical: c.BaseCritical}
				}
				if u.Card.InstanceID != c.InstanceID || u.Card.PrintingID != c.PrintingID || u.Rested != c.Rested ||
					u.FaceUp != c.FaceUp || u.Power != c.Power || u.Critical != c.Critical {
					return fmt.Errorf("decision for %d: unit %d/%d %+v, view %+v", viewer, pl, slot, u, *c)
				}
			}
		}
	}
	return nil
}
