package web

import (
	"encoding/json"
	"fmt"

	"github.com/matchgrain/matchgrain/game/catalog"
)

// card is what the page shows of a printing: enough to explain it to a
// player who has never read docs/rules.md.
type card struct {
	Name     string `json:"name"`
	Clan     string `json:"clan"`
	Grade    int    `json:"grade"`
	Power    int    `json:"power"`
	Shield   int    `json:"shield"`
	Critical int    `json:"critical"`
	Trigger  int    `json:"trigger"`
	Sentinel bool   `json:"sentinel,omitempty"`
	// Skill is what the grade gives (boost, intercept, twin drive).
	Skill string `json:"skill"`
	// Ability is the card's text in plain words, empty for a vanilla unit.
	Ability string `json:"ability,omitempty"`
}

func cardCatalog() []byte {
	m := map[string]card{}
	for _, p := range catalog.Printings() {
		m[p.ID] = card{
			Name: p.Name, Clan: p.Clan, Grade: p.Grade, Power: p.Power, Shield: p.Shield, Critical: p.Critical,
			Trigger: int(p.Trigger), Sentinel: p.Sentinel, Skill: skillText(p.Grade), Ability: abilityText(p),
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return b
}

// skillText is the skill every card of a grade has (docs/rules.md §2).
func skillText(grade int) string {
	switch grade {
	case 0, 1:
		return "Boost: a standing unit behind an attacker may rest to add its power to the attack."
	case 2:
		return "Intercept: from the front row, may guard a battle with its shield."
	default:
		return "Twin drive: as the attacking vanguard, checks two cards instead of one."
	}
}

// abilityText says in a player's words what a printing's ability does and
// what it costs (docs/rules.md §7.1: CB turns face-up damage face down, SB
// moves soul to the drop zone).
func abilityText(p catalog.Printing) string {
	if p.Sentinel {
		return "Sentinel: when you guard with it, discard another card of its clan: this attack cannot hit."
	}
	switch a := p.Ability.(type) {
	case catalog.RiddenUpon:
		if a.Effect == catalog.RiddenDraw1 {
			return "When you ride another card on top of it: draw 1 card."
		}
		return "When you ride another card on top of it: soul charge 1 (the top card of your deck goes into your soul)."
	case catalog.RideSearch:
		return fmt.Sprintf("When you ride it (you may): search your deck for a grade %d card and put it into your hand, then shuffle.", a.Grade)
	case catalog.CallModes:
		return "When you call it to a rear-guard circle, choose one: it gets +5000 this turn; or soul charge 1; or counter charge 1 (turn a face-down damage card face up)."
	case catalog.AttackPower:
		return fmt.Sprintf("When it attacks from a rear-guard circle (you may): counter blast %d (turn face-up damage face down) to give it +%d for this battle.", a.CounterBlast, a.Power)
	case catalog.BoostBonus:
		return fmt.Sprintf("When it boosts from a rear-guard circle: the boosted unit gets another +%d for this battle.", a.Power)
	case catalog.HitRetire:
		return fmt.Sprintf("When its attack as your vanguard hits their vanguard (you may): counter blast %d to retire one of their rear-guards.", a.CounterBlast)
	case catalog.HitDraw:
		return fmt.Sprintf("When its attack as your vanguard hits (you may): soul blast %d (soul to drop zone) to draw 1 card.", a.SoulBlast)
	case catalog.ActDiscardPower:
		return fmt.Sprintf("Once per turn, in your main phase, on a circle: discard a card from your hand to give one of your front-row units +%d this turn.", a.Power)
	case catalog.ActRally:
		return fmt.Sprintf("Once per turn, in your main phase, as your vanguard: soul blast %d to give each of your front-row rear-guards +%d this turn.", a.SoulBlast, a.Power)
	case catalog.Grade3Power:
		return fmt.Sprintf("On a rear-guard circle: +%d while your vanguard is grade 3.", a.Power)
	}
	return ""
}
