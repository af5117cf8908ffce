package botpolicy

import (
	"math/rand/v2"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// TestChooseNeverConcedes: with Concede the only legal intent the bot
// waits (nil); with others, it never picks Concede.
func TestChooseNeverConcedes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if in := Choose([]protocol.Intent{protocol.Concede{}}, rng); in != nil {
		t.Fatalf("chose %T with only Concede legal", in)
	}
	if in := Choose(nil, rng); in != nil {
		t.Fatalf("chose %T from nothing", in)
	}
	legal := []protocol.Intent{protocol.Concede{}, protocol.EndTurn{}}
	for range 1000 {
		if _, ok := Choose(legal, rng).(protocol.EndTurn); !ok {
			t.Fatal("conceded although it could end its turn")
		}
	}
}

// TestWeights: a bot would rather play than pass, and boost than not.
func TestWeights(t *testing.T) {
	if Weight(protocol.Ride{}) <= Weight(protocol.SkipRide{}) ||
		Weight(protocol.Attack{BoosterSlot: protocol.IntPtr(1)}) <= Weight(protocol.Attack{}) ||
		Weight(protocol.Attack{}) <= Weight(protocol.EndTurn{}) {
		t.Fatal("bots would rather pass than play")
	}
}

// TestChooseFollowsWeights: over many draws each intent comes up in
// proportion to its weight (Ride 20 : EndTurn 2 : SkipRide 1).
func TestChooseFollowsWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	legal := []protocol.Intent{protocol.Ride{}, protocol.EndTurn{}, protocol.SkipRide{}}
	counts := map[protocol.IntentKind]int{}
	const n = 23000
	for range n {
		counts[Choose(legal, rng).IntentKind()]++
	}
	for _, in := range legal {
		want := n * Weight(in) / 23
		if got := counts[in.IntentKind()]; got < want*9/10 || got > want*11/10 {
			t.Errorf("%s chosen %d times of %d, want about %d", in.IntentKind(), got, n, want)
		}
	}
}

// TestSourceIsAFunctionOfThePosition: the grain's generator depends on
// seed, position and seat only, and differs between them.
func TestSourceIsAFunctionOfThePosition(t *testing.T) {
	a, b := Source(7, 12, 1).Uint64(), Source(7, 12, 1).Uint64()
	if a != b {
		t.Fatal("two sources of the same position differ")
	}
	for _, other := range []uint64{Source(8, 12, 1).Uint64(), Source(7, 13, 1).Uint64(), Source(7, 12, 0).Uint64()} {
		if other == a {
			t.Fatal("sources of different seeds, positions or seats agree")
		}
	}
}
