package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/matchgrain/matchgrain/protocol"
)

// Errors callers branch on; the engine (package game) returns them too.
var (
	// ErrInvalidDeck: a deck list breaks the construction rules (docs/rules.md §1 (D2)).
	ErrInvalidDeck = errors.New("game: invalid deck")
	// ErrUnknownDeck: no starter deck has the requested id.
	ErrUnknownDeck = errors.New("game: unknown deck")
)

// DeckID names a starter deck ("S1", "S2").
type DeckID string

// Starter deck ids.
const (
	DeckEmberwing  DeckID = "S1"
	DeckTidewarden DeckID = "S2"
)

// DeckSize is the exact number of cards in a deck, starter included (docs/rules.md §1 (D2)).
const DeckSize = 50

// Construction limits of docs/rules.md §1 (D2).
const (
	deckTriggers     = 16
	maxHeal          = 4
	maxSentinel      = 4
	maxEachTrigger   = 8 // critical, draw and front each
	maxCopies        = 4
	maxPrintingIDLen = protocol.MaxPrintingIDLen
)

// Ability is the typed parameter block of one ability template (docs/rules.md §7.1).
// Each template is its own struct, so a wrong parameter fails to compile.
type Ability interface {
	// Key is the template's key (A1..A10).
	Key() protocol.AbilityKey
}

// RiddenEffect is what A1 does when its card is ridden upon.
type RiddenEffect int

// A1 effects.
const (
	RiddenDraw1       RiddenEffect = 1
	RiddenSoulCharge1 RiddenEffect = 2
)

// RiddenUpon is A1: AUTO, when a ride puts another card on top of this vanguard.
type RiddenUpon struct{ Effect RiddenEffect }

// RideSearch is A2: AUTO(VC), optional; on being ridden, search the deck for a card of Grade.
type RideSearch struct{ Grade int }

// CallModes is A3: AUTO(RC), on being called; choose +5000, soul charge 1 or counter charge 1.
type CallModes struct{}

// AttackPower is A4: AUTO(RC), optional; when attacking, pay CB n for +Power until end of battle.
type AttackPower struct {
	CounterBlast int
	Power        int
}

// BoostBonus is A5: AUTO(RC); when boosting, the boosted unit gets +Power until end of battle.
type BoostBonus struct{ Power int }

// HitRetire is A6: AUTO(VC), optional; when hitting a vanguard, pay CB n to retire a rear-guard.
type HitRetire struct{ CounterBlast int }

// HitDraw is A7: AUTO(VC), optional; when hitting, pay SB n to draw 1.
type HitDraw struct{ SoulBlast int }

// ActDiscardPower is A8: ACT(VC or RC), 1/turn; discard 1 to give a front-row unit +Power.
type ActDiscardPower struct{ Power int }

// ActRally is A9: ACT(VC), 1/turn; pay SB n to give each front-row rear-guard +Power.
type ActRally struct {
	SoulBlast int
	Power     int
}

// Grade3Power is A10: CONT(RC); +Power while its owner's vanguard is grade 3.
type Grade3Power struct{ Power int }

// Key implements Ability.
func (RiddenUpon) Key() protocol.AbilityKey { return protocol.AbilityRiddenUpon }

// Key implements Ability.
func (RideSearch) Key() protocol.AbilityKey { return protocol.AbilityRideSearch }

// Key implements Ability.
func (CallModes) Key() protocol.AbilityKey { return protocol.AbilityCallModes }

// Key implements Ability.
func (AttackPower) Key() protocol.AbilityKey { return protocol.AbilityAttackPower }

// Key implements Ability.
func (BoostBonus) Key() protocol.AbilityKey { return protocol.AbilityBoostBonus }

// Key implements Ability.
func (HitRetire) Key() protocol.AbilityKey { return protocol.AbilityHitRetire }

// Key implements Ability.
func (HitDraw) Key() protocol.AbilityKey { return protocol.AbilityHitDraw }

// Key implements Ability.
func (ActDiscardPower) Key() protocol.AbilityKey { return protocol.AbilityActDiscardPower }

// Key implements Ability.
func (ActRally) Key() protocol.AbilityKey { return protocol.AbilityActRally }

// Key implements Ability.
func (Grade3Power) Key() protocol.AbilityKey { return protocol.AbilityGrade3Power }

// Printing is one card design of the catalog (docs/rules.md §12). Skills follow the
// grade: grades 0-1 boost, grade 2 intercepts, grade 3 twin-drives.
type Printing struct {
	ID       string               // printingId, e.g. "S1-001"; sorts the catalog
	Name     string               // display name (original, invented)
	Clan     string               // one clan per deck
	Grade    int                  // 0..3
	Power    int                  // printed power
	Shield   int                  // shield when guarding; 0 = none
	Critical int                  // printed critical (1 for every starter card)
	Trigger  protocol.TriggerType // trigger icon; TriggerNone for a normal unit
	Starter  bool                 // the deck's first vanguard
	Sentinel bool                 // the perfect-guard keyword (docs/rules.md §7.1 SEN)
	// Ability is nil for a vanilla unit; the sentinel keyword is Sentinel, not an Ability.
	Ability Ability
	// Copies is how many the printing's starter deck holds.
	Copies int
}

// DeckInfo describes one starter deck for GET /api/decks.
type DeckInfo struct {
	ID    DeckID // "S1", "S2"
	Name  string // display name
	Clan  string // the clan of every card
	Cards int    // always DeckSize
}

// Clan names.
const (
	ClanEmberwing  = "Emberwing"
	ClanTidewarden = "Tidewarden"
)

// Common stat lines of docs/rules.md §12.
const (
	g3Power, g2Power, g1Power  = 13000, 10000, 8000
	trigPower, starterPower    = 5000, 6000
	sentinelPower              = 6000
	trigShield, healShield     = 15000, 20000
	smallShield, bigShield     = 5000, 10000
	plus5k, plus10k            = 5000, 10000
	critical1                  = 1
	noShield                   = 0
	noTrig                     = protocol.TriggerNone
	crit, draw, front, healTrg = protocol.TriggerCritical, protocol.TriggerDraw, protocol.TriggerFront, protocol.TriggerHeal
)

// printings is the catalog, sorted by ID (the canonical order of printing ids).
var printings = []Printing{
	// Clan "Emberwing" (deck S1): aggressive, counter-blast.
	{"S1-001", "Emberling Squire", ClanEmberwing, 0, starterPower, bigShield, critical1, noTrig, true, false, RiddenUpon{RiddenDraw1}, 1},
	{"S1-002", "Sparkcrest Finch", ClanEmberwing, 0, trigPower, trigShield, critical1, crit, false, false, nil, 8},
	{"S1-003", "Cinder Courier", ClanEmberwing, 0, trigPower, trigShield, critical1, draw, false, false, nil, 4},
	{"S1-004", "Ashmend Acolyte", ClanEmberwing, 0, trigPower, healShield, critical1, healTrg, false, false, nil, 4},
	{"S1-005", "Flamebrand Lancer", ClanEmberwing, 1, g1Power, smallShield, critical1, noTrig, false, false, BoostBonus{plus5k}, 4},
	{"S1-006", "Kindlepath Herald", ClanEmberwing, 1, g1Power, smallShield, critical1, noTrig, false, false, RideSearch{2}, 3},
	{"S1-007", "Scorchfeather Scout", ClanEmberwing, 1, 7000, bigShield, critical1, noTrig, false, false, CallModes{}, 3},
	{"S1-008", "Bulwark of Embers", ClanEmberwing, 1, sentinelPower, noShield, critical1, noTrig, false, true, nil, 4},
	{"S1-009", "Blazeguard Knight", ClanEmberwing, 2, g2Power, smallShield, critical1, noTrig, false, false, AttackPower{1, plus10k}, 4},
	{"S1-010", "Pyre Strategist", ClanEmberwing, 2, g2Power, smallShield, critical1, noTrig, false, false, ActDiscardPower{plus10k}, 3},
	{"S1-011", "Emberhold Captain", ClanEmberwing, 2, g2Power, smallShield, critical1, noTrig, false, false, RideSearch{3}, 2},
	{"S1-012", "Magma Halberdier", ClanEmberwing, 2, 11000, smallShield, critical1, noTrig, false, false, nil, 2},
	{"S1-013", "Cinderstorm Sovereign", ClanEmberwing, 3, g3Power, noShield, critical1, noTrig, false, false, HitRetire{1}, 4},
	{"S1-014", "Ashwing Marshal Ignar", ClanEmberwing, 3, g3Power, noShield, critical1, noTrig, false, false, HitDraw{1}, 2},
	{"S1-015", "Twinflame Duelist", ClanEmberwing, 3, g3Power, noShield, critical1, noTrig, false, false, Grade3Power{plus5k}, 2},
	// Clan "Tidewarden" (deck S2): soul and defence, uses Front.
	{"S2-001", "Ripple Cadet", ClanTidewarden, 0, starterPower, bigShield, critical1, noTrig, true, false, RiddenUpon{RiddenSoulCharge1}, 1},
	{"S2-002", "Pearlspine Diver", ClanTidewarden, 0, trigPower, trigShield, critical1, crit, false, false, nil, 4},
	{"S2-003", "Current Messenger", ClanTidewarden, 0, trigPower, trigShield, critical1, draw, false, false, nil, 4},
	{"S2-004", "Wavecrest Drummer", ClanTidewarden, 0, trigPower, trigShield, critical1, front, false, false, nil, 4},
	{"S2-005", "Coral Mender", ClanTidewarden, 0, trigPower, healShield, critical1, healTrg, false, false, nil, 4},
	{"S2-006", "Shoalward Aegis", ClanTidewarden, 1, sentinelPower, noShield, critical1, noTrig, false, true, nil, 4},
	{"S2-007", "Tidebound Oarsman", ClanTidewarden, 1, g1Power, smallShield, critical1, noTrig, false, false, BoostBonus{plus5k}, 4},
	{"S2-008", "Kelpglass Seer", ClanTidewarden, 1, 7000, bigShield, critical1, noTrig, false, false, RideSearch{2}, 3},
	{"S2-009", "Brine Duelist", ClanTidewarden, 1, g1Power, smallShield, critical1, noTrig, false, false, CallModes{}, 3},
	{"S2-010", "Undertow Captain", ClanTidewarden, 2, g2Power, smallShield, critical1, noTrig, false, false, AttackPower{1, plus10k}, 4},
	{"S2-011", "Mistweave Channeler", ClanTidewarden, 2, g2Power, smallShield, critical1, noTrig, false, false, ActDiscardPower{plus10k}, 3},
	{"S2-012", "Reefpath Navigator", ClanTidewarden, 2, g2Power, smallShield, critical1, noTrig, false, false, RideSearch{3}, 2},
	{"S2-013", "Harbor Sentry", ClanTidewarden, 2, 9000, bigShield, critical1, noTrig, false, false, nil, 2},
	{"S2-014", "Leviathan Admiral Thessa", ClanTidewarden, 3, g3Power, noShield, critical1, noTrig, false, false, HitDraw{1}, 4},
	{"S2-015", "Maelstrom Oracle", ClanTidewarden, 3, g3Power, noShield, critical1, noTrig, false, false, ActRally{2, plus5k}, 2},
	{"S2-016", "Abyssal Tidecaller", ClanTidewarden, 3, g3Power, noShield, critical1, noTrig, false, false, HitRetire{1}, 2},
}

// decks are the starter decks, sorted by id; each lists its printings' prefix.
var decks = []struct {
	info   DeckInfo
	prefix string
}{
	{DeckInfo{DeckEmberwing, "Emberwing Starter", ClanEmberwing, DeckSize}, "S1-"},
	{DeckInfo{DeckTidewarden, "Tidewarden Starter", ClanTidewarden, DeckSize}, "S2-"},
}

// printingIndex maps a printing id to its index in printings. It is only
// looked up, never iterated.
var printingIndex map[string]uint8

// deckLists[i] is the 50-card list of decks[i], in catalog order.
var deckLists [][]string

func init() {
	if err := buildCatalog(); err != nil {
		// The catalog is a compile-time literal: an inconsistency is a
		// programming error caught by every test run, never input.
		panic("catalog: invalid catalog: " + err.Error())
	}
}

// buildCatalog validates the literal tables and derives the lookup tables.
func buildCatalog() error {
	if len(printings) == 0 || len(printings) > 250 {
		return fmt.Errorf("catalog holds %d printings, want 1..250", len(printings))
	}
	printingIndex = make(map[string]uint8, len(printings))
	for i := range printings {
		p := &printings[i]
		if err := validatePrinting(p); err != nil {
			return err
		}
		if i > 0 && printings[i-1].ID >= p.ID {
			return fmt.Errorf("printing %s is out of id order", p.ID)
		}
		printingIndex[p.ID] = uint8(i)
	}
	deckLists = make([][]string, len(decks))
	for i, d := range decks {
		if i > 0 && decks[i-1].info.ID >= d.info.ID {
			return fmt.Errorf("deck %s is out of id order", d.info.ID)
		}
		var list []string
		for _, p := range printings {
			if strings.HasPrefix(p.ID, d.prefix) {
				for range p.Copies {
					list = append(list, p.ID)
				}
			}
		}
		if err := ValidateDeck(list); err != nil {
			return fmt.Errorf("deck %s: %w", d.info.ID, err)
		}
		if printings[printingIndex[list[0]]].Clan != d.info.Clan {
			return fmt.Errorf("deck %s: clan %q does not match its cards", d.info.ID, d.info.Clan)
		}
		deckLists[i] = list
	}
	return nil
}

// validatePrinting checks one catalog row against the rules of docs/rules.md §2, §7, §12.
func validatePrinting(p *Printing) error {
	switch {
	case p.ID == "" || len(p.ID) > maxPrintingIDLen:
		return fmt.Errorf("printing id %q: length must be 1..%d", p.ID, maxPrintingIDLen)
	case p.Name == "" || p.Clan == "":
		return fmt.Errorf("printing %s: name and clan are required", p.ID)
	case p.Grade < 0 || p.Grade > 3:
		return fmt.Errorf("printing %s: grade %d outside 0..3", p.ID, p.Grade)
	case p.Power <= 0 || p.Shield < 0 || p.Critical != 1:
		return fmt.Errorf("printing %s: power %d, shield %d, critical %d are not a legal stat line", p.ID, p.Power, p.Shield, p.Critical)
	case p.Trigger < protocol.TriggerNone || p.Trigger > protocol.TriggerHeal:
		return fmt.Errorf("printing %s: unknown trigger %d", p.ID, p.Trigger)
	case p.Trigger != protocol.TriggerNone && p.Grade != 0:
		return fmt.Errorf("printing %s: a trigger unit must be grade 0", p.ID)
	case p.Starter && (p.Grade != 0 || p.Trigger != protocol.TriggerNone):
		return fmt.Errorf("printing %s: a starter is grade 0 without a trigger", p.ID)
	case p.Sentinel && (p.Shield != 0 || p.Ability != nil):
		return fmt.Errorf("printing %s: a sentinel has no shield and no other ability", p.ID)
	case p.Copies < 1 || p.Copies > copyLimit(p):
		return fmt.Errorf("printing %s: %d copies outside 1..%d", p.ID, p.Copies, copyLimit(p))
	}
	return validateAbility(p)
}

// validateAbility checks an ability's parameters and that its zone fits the grade.
func validateAbility(p *Printing) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("printing %s: "+format, append([]any{p.ID}, args...)...)
	}
	switch a := p.Ability.(type) {
	case nil:
		return nil
	case RiddenUpon:
		if a.Effect != RiddenDraw1 && a.Effect != RiddenSoulCharge1 {
			return bad("A1 effect %d unknown", a.Effect)
		}
	case RideSearch:
		if a.Grade < 0 || a.Grade > 3 {
			return bad("A2 grade %d outside 0..3", a.Grade)
		}
	case CallModes:
	case AttackPower:
		if a.CounterBlast < 1 || a.CounterBlast > 5 || a.Power <= 0 {
			return bad("A4 needs CB 1..5 and a positive power, got %+v", a)
		}
	case BoostBonus:
		if a.Power <= 0 || p.Grade > 1 {
			return bad("A5 needs a positive power on a grade 0-1 unit")
		}
	case HitRetire:
		if a.CounterBlast < 1 || a.CounterBlast > 5 {
			return bad("A6 needs CB 1..5, got %d", a.CounterBlast)
		}
	case HitDraw:
		if a.SoulBlast < 1 || a.SoulBlast > 5 {
			return bad("A7 needs SB 1..5, got %d", a.SoulBlast)
		}
	case ActDiscardPower:
		if a.Power <= 0 {
			return bad("A8 needs a positive power")
		}
	case ActRally:
		if a.SoulBlast < 1 || a.SoulBlast > 5 || a.Power <= 0 {
			return bad("A9 needs SB 1..5 and a positive power, got %+v", a)
		}
	case Grade3Power:
		if a.Power <= 0 {
			return bad("A10 needs a positive power")
		}
	default:
		return bad("unknown ability type %T", a)
	}
	return nil
}

// Printings returns a copy of the catalog, sorted by printing id.
func Printings() []Printing { return slices.Clone(printings) }

// LookupPrinting returns the printing with id, or false if the catalog has none.
func LookupPrinting(id string) (Printing, bool) {
	i, ok := printingIndex[id]
	if !ok {
		return Printing{}, false
	}
	return printings[i], true
}

// Index returns the position of the printing with id in Printings, or false.
func Index(id string) (int, bool) {
	i, ok := printingIndex[id]
	return int(i), ok
}

// Decks returns the starter decks sorted by id (for GET /api/decks).
func Decks() []DeckInfo {
	out := make([]DeckInfo, len(decks))
	for i, d := range decks {
		out[i] = d.info
	}
	return out
}

// DeckList returns the 50 printing ids of a starter deck in catalog order, or
// an error wrapping ErrUnknownDeck.
func DeckList(id DeckID) ([]string, error) {
	for i, d := range decks {
		if d.info.ID == id {
			return slices.Clone(deckLists[i]), nil
		}
	}
	return nil, fmt.Errorf("deck %q: %w", id, ErrUnknownDeck)
}

// ValidateDeck checks a deck list against the construction rules of docs/rules.md §1 (D2):
// exactly 50 known cards, exactly one starter, exactly 16 triggers (at most 4
// heal, at most 8 each of critical, draw and front), at most 4 sentinels, at
// most 4 copies of a non-trigger printing, one clan (see copyLimit). The error wraps ErrInvalidDeck.
func ValidateDeck(list []string) error {
	if len(list) != DeckSize {
		return fmt.Errorf("%w: %d cards, want %d", ErrInvalidDeck, len(list), DeckSize)
	}
	var copies [256]int
	var byTrigger [protocol.TriggerHeal + 1]int
	starters, sentinels := 0, 0
	clan := ""
	for _, id := range list {
		i, ok := printingIndex[id]
		if !ok {
			return fmt.Errorf("%w: unknown printing %q", ErrInvalidDeck, truncate(id))
		}
		p := &printings[i]
		if clan == "" {
			clan = p.Clan
		} else if p.Clan != clan {
			return fmt.Errorf("%w: clans %q and %q mixed", ErrInvalidDeck, clan, p.Clan)
		}
		copies[i]++
		if copies[i] > copyLimit(p) {
			return fmt.Errorf("%w: more than %d copies of %s", ErrInvalidDeck, copyLimit(p), id)
		}
		byTrigger[p.Trigger]++
		if p.Starter {
			starters++
		}
		if p.Sentinel {
			sentinels++
		}
	}
	triggers := len(list) - byTrigger[protocol.TriggerNone]
	switch {
	case starters != 1:
		return fmt.Errorf("%w: %d starters, want exactly 1", ErrInvalidDeck, starters)
	case triggers != deckTriggers:
		return fmt.Errorf("%w: %d triggers, want exactly %d", ErrInvalidDeck, triggers, deckTriggers)
	case byTrigger[protocol.TriggerHeal] > maxHeal:
		return fmt.Errorf("%w: %d heal triggers, at most %d", ErrInvalidDeck, byTrigger[protocol.TriggerHeal], maxHeal)
	case sentinels > maxSentinel:
		return fmt.Errorf("%w: %d sentinels, at most %d", ErrInvalidDeck, sentinels, maxSentinel)
	}
	for _, t := range []protocol.TriggerType{protocol.TriggerCritical, protocol.TriggerDraw, protocol.TriggerFront} {
		if byTrigger[t] > maxEachTrigger {
			return fmt.Errorf("%w: %d triggers of type %d, at most %d", ErrInvalidDeck, byTrigger[t], t, maxEachTrigger)
		}
	}
	return nil
}

// copyLimit is how many copies of p a deck may hold. docs/rules.md §1 (D2) says 4 per
// printing, but its own deck S1 (§12.1) holds 8 copies of the critical trigger
// S1-002 and must be accepted (§15.10). The engine therefore exempts trigger
// units from the 4-copy limit; they stay capped by the per-type trigger limits.
func copyLimit(p *Printing) int {
	if p.Trigger != protocol.TriggerNone {
		return maxEachTrigger
	}
	return maxCopies
}

// truncate bounds an untrusted string before it goes into an error message.
func truncate(s string) string {
	if len(s) > maxPrintingIDLen {
		return s[:maxPrintingIDLen] + "…"
	}
	return s
}
