package client_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/game"
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// boardGames is how many in-process games TestBoardKeepsTheWholeView plays
// (boardGamesRace under the race detector).
const (
	boardGames     = 120
	boardGamesRace = 12
)

// TestBoardKeepsTheWholeView plays random games with the rules engine in
// process, both seats choosing only from their Board's legal intents (no
// snapshot), and compares each seat's Board with the engine's view after
// every batch. Every tenth game one seat starts from a mid-game snapshot
// instead of seq 0, as after a resync, and some games end by a server
// decision (concession, timeout). A spectator's Board (seat 2, nobody's
// projection) is compared with the spectator's view the same way.
func TestBoardKeepsTheWholeView(t *testing.T) {
	s1, _ := catalog.DeckList(catalog.DeckEmberwing)
	s2, _ := catalog.DeckList(catalog.DeckTidewarden)
	decks := [][]string{s1, s2}
	batches, games := 0, boardGames
	if raceEnabled {
		games = boardGamesRace
	}
	for g := range games {
		seed := uint64(g + 1)
		r := rand.New(rand.NewPCG(seed, 99))
		e, evs, err := game.New(seed, [2][]string{decks[g%2], decks[(g/2)%2]})
		if err != nil {
			t.Fatal(err)
		}
		boards := [3]client.Board{client.NewBoard(0), client.NewBoard(1), client.NewBoard(protocol.SeatSpectator)}
		late := -1 // a seat that joins from a snapshot
		if g%10 == 3 {
			late = r.IntN(2)
		}
		joinAt := r.IntN(40)
		feed := func(evs []protocol.EventEnvelope) {
			t.Helper()
			batches++
			for seat := range 3 {
				for _, env := range evs {
					if pe, ok := game.ProjectEvent(seat, env.Event); ok {
						boards[seat].Apply(protocol.EventEnvelope{Seq: env.Seq, Event: pe})
					}
				}
				boards[seat].SetSeq(e.LastSeq())
				want := e.View(seat)
				if d := boards[seat].ViewDiff(&want); len(d) > 0 {
					t.Fatalf("game %d seat %d at seq %d: board differs from the view:\n%s", g, seat, e.LastSeq(), strings.Join(d, "\n"))
				}
			}
		}
		feed(evs)
		for n := 0; !e.IsFinished(); n++ {
			if n == joinAt && late >= 0 {
				v := e.View(late)
				boards[late] = client.BoardFromView(&v)
			}
			if r.IntN(300) == 0 {
				feed(e.Finish(r.IntN(2), protocol.FinishTimeout))
				break
			}
			d := e.Decider()
			legal := boards[d].LegalIntents()
			if len(legal) < 2 || legal[len(legal)-1].IntentKind() != protocol.IntentConcede {
				t.Fatalf("game %d: the decider's board offers %v", g, legal)
			}
			if other := boards[1-d].LegalIntents(); len(other) != 1 || other[0].IntentKind() != protocol.IntentConcede {
				t.Fatalf("game %d: the other seat's board offers %v", g, other)
			}
			in := legal[r.IntN(len(legal)-1)]
			before := e.LastSeq()
			evs, err := e.Execute(d, in)
			if err != nil {
				t.Fatalf("game %d: %T from the board refused: %v", g, in, err)
			}
			if e.LastSeq() <= before {
				t.Fatalf("game %d: accepted %T appended no event", g, in)
			}
			feed(evs)
		}
	}
	t.Logf("%d games, %d batches compared for both seats", games, batches)
}
