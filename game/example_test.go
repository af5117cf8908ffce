package game_test

import (
	"fmt"

	"github.com/matchgrain/matchgrain/game"
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// A match from setup to the first turn: both players keep their hands, then
// the first player (drawn from the seed) rides.
func Example() {
	s1, _ := catalog.DeckList(catalog.DeckEmberwing)
	s2, _ := catalog.DeckList(catalog.DeckTidewarden)
	e, events, err := game.New(7, [2][]string{s1, s2})
	if err != nil {
		panic(err)
	}
	fmt.Println("setup events:", len(events), "decider:", e.Decider())
	for range 2 {
		if _, err := e.Execute(e.Decider(), protocol.FinishMulligan{}); err != nil {
			panic(err)
		}
	}
	v := e.View(e.Decider())
	fmt.Println("turn", v.TurnNumber, "phase", v.Phase, "hand", v.Players[v.You].HandCount)
	// The opponent only sees that a decision is pending.
	fmt.Println("opponent may:", len(e.View(1-e.Decider()).LegalIntents), "intent (Concede)")
	_, err = e.Execute(1-e.Decider(), protocol.SkipRide{})
	fmt.Println(err)
	// Output:
	// setup events: 4 decider: 0
	// turn 1 phase Ride hand 6
	// opponent may: 1 intent (Concede)
	// game: rejected (NotYourTurn): player 0 decides
}
