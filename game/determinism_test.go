package game

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/protocol"
)

// step is one entry of a recorded match: a command, or a server Finish.
type step struct {
	player int
	in     protocol.Intent
	finish bool
	loser  int
	reason protocol.FinishReason
}

// record is what one run of a match produced, as canonical wire bytes.
type record struct {
	events [][]byte // per step (index 0: New), all encoded events
	views  [][]byte // per step, both players' encoded views
	hashes [][32]byte
}

// recordGame plays a random game (with an occasional server Finish) and
// returns its steps.
func recordGame(t *testing.T, seed uint64) []step {
	t.Helper()
	e, _, err := New(seed, decksFor(seed))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 99))
	var steps []step
	for !e.IsFinished() && len(steps) < maxCommands {
		if seed%3 == 0 && r.IntN(300) == 0 {
			s := step{finish: true, loser: r.IntN(2), reason: protocol.FinishTimeout}
			e.Finish(s.loser, s.reason)
			steps = append(steps, s)
			break
		}
		d := e.Decider()
		l := e.LegalCommands(d)
		in := l[r.IntN(len(l)-1)]
		if _, err := e.Execute(d, in); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		steps = append(steps, step{player: d, in: in})
	}
	return steps
}

func encodeEvents(t *testing.T, envs []protocol.EventEnvelope) []byte {
	t.Helper()
	var b []byte
	for _, env := range envs {
		b = fmt.Appendf(b, "%d:", env.Seq)
		var err error
		if b, err = protocol.AppendEvent(b, env.Event); err != nil {
			t.Fatalf("encode %s: %v", formatEvent(env.Event), err)
		}
	}
	return b
}

func encodeViews(t *testing.T, e *Engine) []byte {
	t.Helper()
	var b []byte
	for p := range 2 {
		v, err := protocol.EncodeServerFrame(&protocol.ServerSnapshot{View: e.View(p)})
		if err != nil {
			t.Fatalf("encode view: %v", err)
		}
		b = append(b, v...)
	}
	return b
}

// replay runs steps[from:] on e and records everything.
func replay(t *testing.T, e *Engine, steps []step, from int) record {
	t.Helper()
	var rec record
	for _, s := range steps[from:] {
		var envs []protocol.EventEnvelope
		if s.finish {
			envs = e.Finish(s.loser, s.reason)
		} else {
			var err error
			if envs, err = e.Execute(s.player, s.in); err != nil {
				t.Fatalf("replay %s: %v", formatIntent(s.in), err)
			}
		}
		rec.events = append(rec.events, encodeEvents(t, envs))
		rec.views = append(rec.views, encodeViews(t, e))
		rec.hashes = append(rec.hashes, e.StateHash())
	}
	return rec
}

func fresh(t *testing.T, seed uint64) (*Engine, []byte) {
	t.Helper()
	e, envs, err := New(seed, decksFor(seed))
	if err != nil {
		t.Fatal(err)
	}
	return e, encodeEvents(t, envs)
}

func compareRecords(t *testing.T, seed uint64, from int, a, b record) {
	t.Helper()
	for i := range a.events {
		if !bytes.Equal(a.events[i], b.events[i]) || !bytes.Equal(a.views[i], b.views[i]) || a.hashes[i] != b.hashes[i] {
			t.Fatalf("seed %d: replay diverges at step %d", seed, from+i)
		}
	}
}

// TestDeterminism: (seed, decks, commands) replayed from scratch, and from a
// snapshot taken at a random point, gives byte-identical events (canonical
// wire encoding), views and state hashes.
func TestDeterminism(t *testing.T) {
	for seed := uint64(100); seed < 120; seed++ {
		steps := recordGame(t, seed)
		e1, first1 := fresh(t, seed)
		e2, first2 := fresh(t, seed)
		if !bytes.Equal(first1, first2) {
			t.Fatalf("seed %d: New differs", seed)
		}
		r1 := replay(t, e1, steps, 0)
		r2 := replay(t, e2, steps, 0)
		compareRecords(t, seed, 0, r1, r2)

		// Snapshot at a random point, restore, continue.
		k := int(seed*7919) % len(steps)
		e3, _ := fresh(t, seed)
		replay(t, e3, steps[:k], 0)
		b, err := e3.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != stateVersion {
			t.Fatalf("state starts with %d, want the version %d", b[0], stateVersion)
		}
		e4, err := UnmarshalState(b)
		if err != nil {
			t.Fatalf("seed %d: restore at step %d: %v", seed, k, err)
		}
		if e4.StateHash() != e3.StateHash() || e4.LastSeq() != e3.LastSeq() {
			t.Fatalf("seed %d: restored state differs", seed)
		}
		r4 := replay(t, e4, steps, k)
		compareRecords(t, seed, k, record{r1.events[k:], r1.views[k:], r1.hashes[k:]}, r4)
	}
}

// TestSeedsDiffer guards against a seed being ignored.
func TestSeedsDiffer(t *testing.T) {
	a, _ := fresh(t, 1)
	b, _ := fresh(t, 2)
	if a.StateHash() == b.StateHash() {
		t.Errorf("seeds 1 and 2 give the same match")
	}
}

// TestRNGVectors pins the RNG of docs/rules.md §13 (PCG seeded (seed, 0), Lemire
// bounded integers, Fisher–Yates), so that a change in math/rand/v2 or here
// that would break replays of stored matches fails loudly.
func TestRNGVectors(t *testing.T) {
	r := newRNG(42)
	var got []uint64
	for _, n := range []uint64{2, 6, 100, 1 << 40, 3} {
		got = append(got, r.bounded(n))
	}
	s := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	shuffle(&r, s)
	gotS := fmt.Sprint(got, s)
	const want = "[1 5 13 97316373224 0] [1 3 0 6 7 5 4 2 8 9]"
	if gotS != want {
		t.Errorf("RNG vectors changed:\n got %s\nwant %s", gotS, want)
	}
	// Independently: bounded(n) is the high word of x·n for the next raw
	// Uint64 x (a rejection has probability n/2^64 here).
	raw := rand.NewPCG(42, 0)
	for i, n := range []uint64{2, 6, 100, 1 << 40, 3} {
		x := new(big.Int).SetUint64(raw.Uint64())
		x.Mul(x, new(big.Int).SetUint64(n)).Rsh(x, 64)
		if x.Uint64() != got[i] {
			t.Errorf("bounded(%d) = %d, want %d", n, got[i], x.Uint64())
		}
	}
	// One-element and empty shuffles consume nothing.
	a, b := newRNG(7), newRNG(7)
	shuffle(&a, []int{1})
	shuffle(&a, []int{})
	if a != b {
		t.Errorf("a shuffle of ≤1 element used the RNG")
	}
	// Bounded values stay in range and cover it.
	var seen [7]int
	for range 7000 {
		seen[r.bounded(7)]++
	}
	for v, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("bounded(7) gave %d %d times in 7000", v, n)
		}
	}
}

// TestSetupVector pins the first events of one seed: the first-player bit,
// the instance ids and the opening hands follow docs/rules.md §13 exactly.
func TestSetupVector(t *testing.T) {
	e, envs, err := New(1, decksFor(0))
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, env := range envs {
		s += fmt.Sprintf("%d %s\n", env.Seq, formatEvent(env.Event))
	}
	// Recompute by hand with the same RNG: first-player bit, permutation, shuffles.
	r := newRNG(1)
	first := int(r.bounded(2))
	ids := make([]uint8, maxCards)
	for i := range ids {
		ids[i] = uint8(i + 1)
	}
	shuffle(&r, ids)
	var deck [2][]uint8
	for p, list := range decksFor(0) {
		for k, pid := range list {
			id := ids[p*catalog.DeckSize+k]
			if pr, _ := catalog.LookupPrinting(pid); !pr.Starter {
				deck[p] = append(deck[p], id)
			}
		}
		shuffle(&r, deck[p])
	}
	want := fmt.Sprintf("1 GameStarted first=p%d deck=[49 49]\n", first)
	for _, p := range []int{first, 1 - first} {
		want += fmt.Sprintf("%d CardsDrawn p%d n=5 %s\n", 2+btoi(p != first), p, cardsText(refsOf(e, deck[p][:5])))
	}
	// The batch ends with the Decision: the first player mulligans; both
	// starters are face down (listed as units), 31 mulligans + FinishMulligan + Concede.
	want += fmt.Sprintf("4 Decision p%d pending=no units=2 legal=33\n", first)
	if s != want {
		t.Errorf("setup:\n%s\nwant:\n%s", s, want)
	}
	if e.rng != r {
		t.Errorf("setup consumed a different amount of randomness")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func refsOf(e *Engine, ids []uint8) []protocol.CardRef {
	out := make([]protocol.CardRef, len(ids))
	for i, id := range ids {
		out[i] = e.ref(id)
	}
	return out
}
