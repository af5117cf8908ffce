package catalog

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

func TestStarterDecks(t *testing.T) {
	infos := Decks()
	if len(infos) != 2 || infos[0].ID != "S1" || infos[1].ID != "S2" {
		t.Fatalf("Decks() = %+v", infos)
	}
	for _, tc := range []struct {
		id        DeckID
		clan      string
		grades    [4]int
		printings int
		triggers  [protocol.TriggerHeal + 1]int
	}{
		{"S1", ClanEmberwing, [4]int{17, 14, 11, 8}, 15, [5]int{34, 8, 4, 0, 4}},
		{"S2", ClanTidewarden, [4]int{17, 14, 11, 8}, 16, [5]int{34, 4, 4, 4, 4}},
	} {
		list, err := DeckList(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		var grades [4]int
		var triggers [protocol.TriggerHeal + 1]int
		distinct := map[string]bool{}
		sentinels := 0
		for _, id := range list {
			p, ok := LookupPrinting(id)
			if !ok || p.Clan != tc.clan {
				t.Fatalf("%s: %s unknown or of another clan", tc.id, id)
			}
			grades[p.Grade]++
			triggers[p.Trigger]++
			distinct[id] = true
			if p.Sentinel {
				sentinels++
			}
		}
		if len(list) != 50 || grades != tc.grades || len(distinct) != tc.printings || triggers != tc.triggers || sentinels != 4 {
			t.Errorf("%s: %d cards, grades %v, %d printings, triggers %v, %d sentinels", tc.id, len(list), grades, len(distinct), triggers, sentinels)
		}
		if !slices.IsSorted(list) {
			t.Errorf("%s is not in catalog order", tc.id)
		}
		if err := ValidateDeck(list); err != nil {
			t.Errorf("%s: %v", tc.id, err)
		}
	}
	if _, err := DeckList("S3"); !errors.Is(err, ErrUnknownDeck) {
		t.Errorf("DeckList(S3): %v", err)
	}
	// DeckList returns a copy.
	a, _ := DeckList("S1")
	a[0] = "x"
	if b, _ := DeckList("S1"); b[0] != "S1-001" {
		t.Errorf("DeckList shares its slice")
	}
}

func TestValidateDeck(t *testing.T) {
	s1, _ := DeckList("S1")
	s2, _ := DeckList("S2")
	replace := func(list []string, from, to string, n int) []string {
		out := slices.Clone(list)
		for i := range out {
			if n > 0 && out[i] == from {
				out[i] = to
				n--
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		list []string
	}{
		{"49 cards", s1[:49]},
		{"51 cards", append(slices.Clone(s1), "S1-005")},
		{"unknown printing", replace(s1, "S1-012", "S1-999", 1)},
		{"mixed clans", replace(s1, "S1-012", "S2-013", 1)},
		{"no starter", replace(s1, "S1-001", "S1-012", 1)},
		{"17 triggers", replace(s1, "S1-012", "S1-003", 1)},
		{"15 triggers", replace(s1, "S1-003", "S1-012", 1)},
		{"5 heals", replace(replace(s1, "S1-003", "S1-004", 1), "S1-012", "S1-012", 0)},
		{"9 criticals", replace(s1, "S1-003", "S1-002", 1)},
		{"5 copies", replace(s1, "S1-012", "S1-005", 1)},
		{"5 sentinels", replace(s2, "S2-007", "S2-006", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateDeck(tc.list); !errors.Is(err, ErrInvalidDeck) {
				t.Errorf("ValidateDeck: %v", err)
			}
		})
	}
}

func TestCatalogRowsAreValidated(t *testing.T) {
	good := printings[4] // S1-005
	for _, tc := range []struct {
		name string
		edit func(p *Printing)
	}{
		{"grade 4", func(p *Printing) { p.Grade = 4 }},
		{"trigger above grade 0", func(p *Printing) { p.Trigger = protocol.TriggerDraw }},
		{"starter of grade 1", func(p *Printing) { p.Starter = true }},
		{"sentinel with shield", func(p *Printing) { p.Sentinel = true; p.Ability = nil }},
		{"critical 2", func(p *Printing) { p.Critical = 2 }},
		{"no name", func(p *Printing) { p.Name = "" }},
		{"long id", func(p *Printing) { p.ID = strings.Repeat("x", 40) }},
		{"boost bonus on grade 2", func(p *Printing) { p.Grade = 2 }},
		{"A4 without cost", func(p *Printing) { p.Ability = AttackPower{Power: 1} }},
		{"A2 grade 5", func(p *Printing) { p.Ability = RideSearch{Grade: 5} }},
		{"A1 unknown effect", func(p *Printing) { p.Ability = RiddenUpon{Effect: 9} }},
		{"A9 without soul", func(p *Printing) { p.Ability = ActRally{Power: 5000} }},
		{"too many copies", func(p *Printing) { p.Copies = 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			if err := validatePrinting(&p); err == nil {
				t.Errorf("accepted %+v", p)
			}
		})
	}
	p := good
	if err := validatePrinting(&p); err != nil {
		t.Errorf("the catalog row itself: %v", err)
	}
	if err := buildCatalog(); err != nil {
		t.Errorf("buildCatalog: %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite the catalog section of docs/rules.md")

// describeAbility renders an ability for the catalog tables.
func describeAbility(p Printing) string {
	if p.Sentinel {
		return "SEN perfect guard (discard 1 of the clan)"
	}
	switch a := p.Ability.(type) {
	case RiddenUpon:
		if a.Effect == RiddenDraw1 {
			return "A1 ridden upon: draw 1"
		}
		return "A1 ridden upon: soul charge 1"
	case RideSearch:
		return fmt.Sprintf("A2 on ride (optional): search a grade %d", a.Grade)
	case CallModes:
		return "A3 on call: +5000 / soul charge 1 / counter charge 1"
	case AttackPower:
		return fmt.Sprintf("A4 on attack (RC, optional): CB%d, +%d this battle", a.CounterBlast, a.Power)
	case BoostBonus:
		return fmt.Sprintf("A5 on boost: the boosted unit +%d this battle", a.Power)
	case HitRetire:
		return fmt.Sprintf("A6 on hitting a vanguard (VC, optional): CB%d, retire an opponent rear-guard", a.CounterBlast)
	case HitDraw:
		return fmt.Sprintf("A7 on hit (VC, optional): SB%d, draw 1", a.SoulBlast)
	case ActDiscardPower:
		return fmt.Sprintf("A8 ACT (VC/RC, 1/turn): discard 1, a front-row unit +%d this turn", a.Power)
	case ActRally:
		return fmt.Sprintf("A9 ACT (VC, 1/turn): SB%d, front-row rear-guards +%d this turn", a.SoulBlast, a.Power)
	case Grade3Power:
		return fmt.Sprintf("A10 CONT (RC): +%d while the vanguard is grade 3", a.Power)
	}
	return "—"
}

// catalogMarkdown renders the catalog section of docs/rules.md.
func catalogMarkdown() string {
	var b strings.Builder
	for _, d := range Decks() {
		list, _ := DeckList(d.ID)
		fmt.Fprintf(&b, "### Deck %s \"%s\" (clan %s, %d cards)\n\n", d.ID, d.Name, d.Clan, len(list))
		b.WriteString("| printingId | name | grade | power | shield | trigger | skill | ability | copies |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		var grades [4]int
		for _, p := range Printings() {
			if !slices.Contains(list, p.ID) {
				continue
			}
			grades[p.Grade] += p.Copies
			trig := "—"
			if p.Trigger != protocol.TriggerNone {
				trig = [...]string{"none", "critical", "draw", "front", "heal"}[p.Trigger]
			}
			skill := [...]string{"boost", "boost", "intercept", "twin drive"}[p.Grade]
			ab := describeAbility(p)
			if p.Starter {
				ab = "starter; " + ab
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %s | %s | %d |\n", p.ID, p.Name, p.Grade, p.Power, p.Shield, trig, skill, ab, p.Copies)
		}
		fmt.Fprintf(&b, "\nGrades 0/1/2/3: %d/%d/%d/%d.\n\n", grades[0], grades[1], grades[2], grades[3])
	}
	return b.String()
}

const (
	catalogBegin = "<!-- catalog:begin (generated by `go test ./game/catalog -run TestCatalogDoc -update`; do not edit) -->"
	catalogEnd   = "<!-- catalog:end -->"
)

// TestCatalogDoc keeps the catalog tables of docs/rules.md equal to the Go
// catalog: -update rewrites them, otherwise a difference fails.
func TestCatalogDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "rules.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, catalogBegin), strings.Index(doc, catalogEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no catalog markers", path)
	}
	want := catalogBegin + "\n\n" + catalogMarkdown() + catalogEnd
	got := doc[i : j+len(catalogEnd)]
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("%s: the catalog section differs from the Go catalog; run go test ./game/catalog -run TestCatalogDoc -update", path)
	}
	if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(catalogEnd):]), 0o644); err != nil {
		t.Fatal(err)
	}
}
