package game

import (
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// abilityData is the flat form of a printing's ability the engine reads on
// its hot paths (no interface type switches per command).
type abilityData struct {
	key      protocol.AbilityKey
	optional bool
	cb, sb   int
	discard  bool
	power    int
	grade    int                  // A2
	ridden   catalog.RiddenEffect // A1
}

// The engine's tables, from the catalog when the package loads: printings
// is catalog.Printings (sorted by id, indexed by a card's uint8 printing
// number), printingIndex maps an id to that number, abilities[i] is the
// flat ability of printings[i].
var (
	printings     = catalog.Printings()
	printingIndex = func() map[string]uint8 {
		m := make(map[string]uint8, len(printings))
		for i, p := range printings {
			m[p.ID] = uint8(i) // the catalog holds at most 250 printings
		}
		return m
	}()
	abilities = func() []abilityData {
		a := make([]abilityData, len(printings))
		for i, p := range printings {
			a[i] = flatten(p.Ability)
		}
		return a
	}()
)

// flatten turns a typed ability into the engine's flat form.
func flatten(a catalog.Ability) abilityData {
	switch a := a.(type) {
	case catalog.RiddenUpon:
		return abilityData{key: a.Key(), ridden: a.Effect}
	case catalog.RideSearch:
		return abilityData{key: a.Key(), optional: true, grade: a.Grade}
	case catalog.CallModes:
		return abilityData{key: a.Key()}
	case catalog.AttackPower:
		return abilityData{key: a.Key(), optional: true, cb: a.CounterBlast, power: a.Power}
	case catalog.BoostBonus:
		return abilityData{key: a.Key(), power: a.Power}
	case catalog.HitRetire:
		return abilityData{key: a.Key(), optional: true, cb: a.CounterBlast}
	case catalog.HitDraw:
		return abilityData{key: a.Key(), optional: true, sb: a.SoulBlast}
	case catalog.ActDiscardPower:
		return abilityData{key: a.Key(), discard: true, power: a.Power}
	case catalog.ActRally:
		return abilityData{key: a.Key(), sb: a.SoulBlast, power: a.Power}
	case catalog.Grade3Power:
		return abilityData{key: a.Key(), power: a.Power}
	}
	return abilityData{}
}
