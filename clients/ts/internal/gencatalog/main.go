// Command gencatalog prints the bundled game's card catalog (catalog.Printings)
// as JSON for the TypeScript client's generator (clients/ts/scripts/
// gen-catalog.mjs): the TypeScript view keeper needs each printing's power
// and critical, and a page needs names, grades and triggers to draw cards.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/matchgrain/matchgrain/game/catalog"
)

// printing is the part of catalog.Printing a client uses; abilities are named
// by their key only (the rules live on the server).
type printing struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Clan       string `json:"clan"`
	Grade      int    `json:"grade"`
	Power      int    `json:"power"`
	Shield     int    `json:"shield"`
	Critical   int    `json:"critical"`
	Trigger    int    `json:"trigger"`
	Starter    bool   `json:"starter"`
	Sentinel   bool   `json:"sentinel"`
	AbilityKey int    `json:"abilityKey"`
}

func main() {
	var out []printing
	for _, p := range catalog.Printings() {
		q := printing{
			ID: p.ID, Name: p.Name, Clan: p.Clan, Grade: p.Grade, Power: p.Power, Shield: p.Shield,
			Critical: p.Critical, Trigger: int(p.Trigger), Starter: p.Starter, Sentinel: p.Sentinel,
		}
		if p.Ability != nil {
			q.AbilityKey = int(p.Ability.Key())
		}
		out = append(out, q)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
}
