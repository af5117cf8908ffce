package game

import (
	"errors"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
)

// TestEngineTables: the engine's tables follow the catalog row by row, and
// every ability is flattened to its own key.
func TestEngineTables(t *testing.T) {
	cat := catalog.Printings()
	if len(printings) != len(cat) || len(abilities) != len(cat) || len(printingIndex) != len(cat) {
		t.Fatalf("%d printings, %d abilities, %d indexed; the catalog has %d", len(printings), len(abilities), len(printingIndex), len(cat))
	}
	for i, pr := range cat {
		if printings[i].ID != pr.ID || printingIndex[pr.ID] != uint8(i) {
			t.Errorf("row %d: engine has %s at index %d, catalog %s", i, printings[i].ID, printingIndex[pr.ID], pr.ID)
		}
		if pr.Ability != nil && abilities[i].key != pr.Ability.Key() {
			t.Errorf("%s: flat key %d, typed %d", pr.ID, abilities[i].key, pr.Ability.Key())
		}
	}
}

// TestNewRefusesInvalidDecks: New checks both lists with the catalog's
// construction rules and changes nothing for a bad one.
func TestNewRefusesInvalidDecks(t *testing.T) {
	s1, _ := catalog.DeckList(catalog.DeckEmberwing)
	s2, _ := catalog.DeckList(catalog.DeckTidewarden)
	for _, bad := range [][]string{s1[:49], append(append([]string(nil), s1[:49]...), "S2-013")} {
		if _, _, err := New(1, [2][]string{s2, bad}); !errors.Is(err, ErrInvalidDeck) {
			t.Errorf("New with a %d-card deck: %v, want ErrInvalidDeck", len(bad), err)
		}
	}
}
