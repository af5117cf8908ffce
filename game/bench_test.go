package game

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// recorded is a pre-played random game: the commands and the decider of each.
type recorded struct {
	seed    uint64
	players []int
	cmds    []protocol.Intent
}

func recordForBench(b *testing.B, games int) []recorded {
	b.Helper()
	out := make([]recorded, games)
	for g := range out {
		seed := uint64(g + 1)
		e, _, err := New(seed, decksFor(seed))
		if err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 3))
		rec := recorded{seed: seed}
		for !e.IsFinished() {
			d := e.Decider()
			l := e.LegalCommands(d)
			in := l[r.IntN(len(l)-1)]
			if _, err := e.Execute(d, in); err != nil {
				b.Fatal(err)
			}
			rec.players = append(rec.players, d)
			rec.cmds = append(rec.cmds, in)
		}
		out[g] = rec
	}
	return out
}

// BenchmarkExecute measures Execute alone, replaying recorded random games
// (New included once per game): ns/op and allocs/op are per command.
func BenchmarkExecute(b *testing.B) {
	games := recordForBench(b, 50)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		for _, g := range games {
			e, _, _ := New(g.seed, decksFor(g.seed))
			for i, in := range g.cmds {
				if _, err := e.Execute(g.players[i], in); err != nil {
					b.Fatal(err)
				}
				n++
				if n >= b.N {
					return
				}
			}
		}
	}
}

// BenchmarkRandomPlay measures what a bot loop costs: LegalCommands of the
// decider, a uniform choice, Execute. Per command.
func BenchmarkRandomPlay(b *testing.B) {
	b.ReportAllocs()
	r := rand.New(rand.NewPCG(1, 2))
	var e *Engine
	seed := uint64(0)
	for b.Loop() {
		if e == nil || e.IsFinished() {
			seed++
			e, _, _ = New(seed, decksFor(seed))
		}
		d := e.Decider()
		l := e.LegalCommands(d)
		if _, err := e.Execute(d, l[r.IntN(len(l)-1)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGame plays whole random games: ns/op is per game.
func BenchmarkGame(b *testing.B) {
	b.ReportAllocs()
	r := rand.New(rand.NewPCG(1, 2))
	seed := uint64(0)
	cmds := 0
	for b.Loop() {
		seed++
		e, _, _ := New(seed, decksFor(seed))
		for !e.IsFinished() {
			d := e.Decider()
			l := e.LegalCommands(d)
			if _, err := e.Execute(d, l[r.IntN(len(l)-1)]); err != nil {
				b.Fatal(err)
			}
			cmds++
		}
	}
	b.ReportMetric(float64(cmds)/float64(b.N), "commands/game")
}

// statesForBench collects engines at every command of a few games.
func statesForBench(b *testing.B) []*Engine {
	b.Helper()
	var out []*Engine
	for _, g := range recordForBench(b, 20) {
		e, _, _ := New(g.seed, decksFor(g.seed))
		for i, in := range g.cmds {
			e.Execute(g.players[i], in)
			c, _ := UnmarshalState(e.appendState(nil))
			out = append(out, c)
		}
	}
	return out
}

// BenchmarkView measures one player's view over states across whole games.
func BenchmarkView(b *testing.B) {
	states := statesForBench(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := states[i%len(states)]
		e.View(i & 1)
		i++
	}
}

// BenchmarkLegalCommands measures the decider's command list.
func BenchmarkLegalCommands(b *testing.B) {
	states := statesForBench(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := states[i%len(states)]
		e.LegalCommands(e.Decider())
		i++
	}
}

// stateSink keeps MarshalState's result alive so the benchmark counts its allocation.
var stateSink []byte

// BenchmarkMarshalState measures snapshots and reports their size in bytes
// (typical = median over every state of 20 games, max = the largest).
func BenchmarkMarshalState(b *testing.B) {
	states := statesForBench(b)
	sizes := make([]int, len(states))
	for i, e := range states {
		s, _ := e.MarshalState()
		sizes[i] = len(s)
	}
	slices.Sort(sizes)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		stateSink, _ = states[i%len(states)].MarshalState()
		i++
	}
	b.ReportMetric(float64(sizes[len(sizes)/2]), "bytes-median")
	b.ReportMetric(float64(sizes[len(sizes)-1]), "bytes-max")
}

// BenchmarkUnmarshalState measures restoring a snapshot (validation included).
func BenchmarkUnmarshalState(b *testing.B) {
	states := statesForBench(b)
	raw := make([][]byte, len(states))
	for i, e := range states {
		raw[i], _ = e.MarshalState()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := UnmarshalState(raw[i%len(raw)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEngineMemory reports the live heap of a new match's engine (a
// running match keeps one in its grain), measured over 1,000 of them.
func BenchmarkEngineMemory(b *testing.B) {
	const engines = 1000
	var perEngine float64
	for b.Loop() {
		before := liveHeap()
		es := make([]*Engine, engines)
		for i := range es {
			seed := uint64(i + 1)
			e, _, err := New(seed, decksFor(seed))
			if err != nil {
				b.Fatal(err)
			}
			es[i] = e
		}
		perEngine = float64(liveHeap()-before) / engines
		runtime.KeepAlive(es)
	}
	b.ReportMetric(perEngine, "B/engine")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
