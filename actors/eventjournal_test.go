package actors

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// The journal keeps events encoded: whatever a seat is sent from it must be
// byte-identical to what it would be sent from the events as the engine made
// them, for every event of whole random games of the real rules, both seats.
func TestEventJournalKeepsRealGamesExactly(t *testing.T) {
	rules := GameRules{}
	for game := range 20 {
		seed := uint64(1000 + game)
		eng, evs, err := rules.New(seed, [2]string{"S1", "S2"})
		if err != nil {
			t.Fatalf("new game: %v", err)
		}
		var j eventJournal
		j.reset(1)
		all := append([]protocol.EventEnvelope(nil), evs...)
		if err := j.add(evs); err != nil {
			t.Fatalf("add setup: %v", err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		for steps := 0; !eng.IsFinished() && steps < 2000; steps++ {
			p := eng.Decider()
			var legal []protocol.Intent
			for _, in := range eng.View(p).LegalIntents {
				if in.IntentKind() != protocol.IntentConcede { // the grain's, not the engine's
					legal = append(legal, in)
				}
			}
			if len(legal) == 0 {
				t.Fatalf("game %d: no legal intent for the decider", game)
			}
			batch, err := eng.Execute(p, legal[rng.IntN(len(legal))])
			if err != nil {
				t.Fatalf("game %d: execute a legal intent: %v", game, err)
			}
			all = append(all, batch...)
			if err := j.add(batch); err != nil {
				t.Fatalf("game %d: add: %v", game, err)
			}
		}
		got, err := j.since(1)
		if err != nil {
			t.Fatalf("game %d: since(1): %v", game, err)
		}
		if len(got) != len(all) {
			t.Fatalf("game %d: %d events back, %d kept", game, len(got), len(all))
		}
		for i := range all {
			if got[i].Seq != all[i].Seq {
				t.Fatalf("game %d: event %d has seq %d, want %d", game, i, got[i].Seq, all[i].Seq)
			}
			for seat := range 2 {
				want, wok := rules.Project(seat, all[i].Event)
				have, hok := rules.Project(seat, got[i].Event)
				if wok != hok {
					t.Fatalf("game %d: event %d visible to seat %d: %v from the engine, %v from the journal", game, all[i].Seq, seat, wok, hok)
				}
				if !wok {
					continue
				}
				a, err1 := protocol.AppendEvent(nil, want)
				b, err2 := protocol.AppendEvent(nil, have)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("game %d: event %d as seat %d sees it differs (%v, %v):\n%x\n%x", game, all[i].Seq, seat, err1, err2, a, b)
				}
			}
		}
	}
}

// toyEvents is n events from seq from.
func toyEvents(from int64, n int) []protocol.EventEnvelope {
	evs := make([]protocol.EventEnvelope, n)
	for i := range evs {
		evs[i] = protocol.EventEnvelope{Seq: from + int64(i), Event: &protocol.PhaseStartedEvent{Phase: protocol.Phase(i % 5)}}
	}
	return evs
}

func TestEventJournalTrimAndSince(t *testing.T) {
	var j eventJournal
	j.reset(1)
	next := int64(1)
	for range 40 { // batches of 3
		if err := j.add(toyEvents(next, 3)); err != nil {
			t.Fatalf("add: %v", err)
		}
		next += 3
		j.trim(10)
		// At least the 10 newest (all while there are fewer), at most a
		// quarter more and a batch.
		if j.events < min(10, int(next-1)) || j.events > 10+10/4+3 || j.first() != next-int64(j.events) {
			t.Fatalf("after trim: %d events from %d, next %d", j.events, j.first(), next)
		}
	}
	if _, err := j.since(j.first() - 1); !errors.Is(err, errNotJournaled) {
		t.Fatalf("since before the journal: %v, want errNotJournaled", err)
	}
	evs, err := j.since(next - 5)
	if err != nil || len(evs) != 5 || evs[0].Seq != next-5 || evs[4].Seq != next-1 {
		t.Fatalf("since(next-5): %d events, %v", len(evs), err)
	}
	if evs, err := j.since(next); err != nil || len(evs) != 0 {
		t.Fatalf("since(next): %v, %v; want none", evs, err)
	}
	if err := j.add(toyEvents(next+1, 2)); err == nil {
		t.Fatal("a gap in seqs was accepted")
	}
	// A gap inside a batch is refused too, and what went before it in the
	// batch is not kept.
	held := bytes.Clone(j.data)
	gap := append(toyEvents(next, 2), toyEvents(next+3, 1)...)
	if err := j.add(gap); err == nil {
		t.Fatal("a gap inside a batch was accepted")
	}
	if !bytes.Equal(j.data, held) || j.next != next {
		t.Fatalf("a refused batch changed the journal: %d bytes, next %d", len(j.data), j.next)
	}
	j.trim(0)
	if j.events != 0 || j.data != nil || j.first() != next {
		t.Fatalf("trim(0): %d events in %d bytes from %d", j.events, len(j.data), j.first())
	}
}

// TestEventJournalTrimReleasesRoom checks that a journal does not keep, for
// the rest of its match, the array its largest events once grew it to: after
// large events are trimmed away, what it holds is about what it keeps.
func TestEventJournalTrimReleasesRoom(t *testing.T) {
	var j eventJournal
	j.reset(1)
	next := int64(1)
	cards := make([]protocol.CardRef, 40)
	for i := range cards {
		cards[i] = protocol.CardRef{InstanceID: 100 + i, PrintingID: "E-01"}
	}
	for range 20 { // large events: the array grows to hold them
		ev := protocol.EventEnvelope{Seq: next, Event: &protocol.CardsDrawnEvent{Player: 1, Count: len(cards), Cards: cards}}
		if err := j.add([]protocol.EventEnvelope{ev}); err != nil {
			t.Fatalf("add: %v", err)
		}
		next++
		j.trim(10)
	}
	grown := cap(j.data)
	for range 40 { // small ones push them out
		if err := j.add(toyEvents(next, 1)); err != nil {
			t.Fatalf("add: %v", err)
		}
		next++
		j.trim(10)
	}
	if j.events > 10+10/4 || j.first() < 21 {
		t.Fatalf("%d events from %d held, want only small ones", j.events, j.first())
	}
	// Room for the slack's events and a size class's rounding, no more.
	if limit := 2*len(j.data) + 64; cap(j.data) > limit {
		t.Fatalf("%d bytes held in an array of %d (it had grown to %d), want at most %d", len(j.data), cap(j.data), grown, limit)
	}
}

// BenchmarkEventJournalMemory reports the live heap of a grain's event
// journal (B/journal) trimmed to the default resume window, over 300
// random games of the real rules, each stopped after a seed-chosen number
// of intents: the journals of a node's running matches, part-way through.
func BenchmarkEventJournalMemory(b *testing.B) {
	const games = 300
	keep := DefaultTiming().ResumeWindow
	rules := GameRules{}
	batches := make([][][]protocol.EventEnvelope, games)
	for g := range batches {
		seed := uint64(5000 + g)
		eng, evs, err := rules.New(seed, [2]string{"S1", "S2"})
		if err != nil {
			b.Fatal(err)
		}
		batches[g] = append(batches[g], evs)
		rng := rand.New(rand.NewPCG(seed, 11))
		for steps := 20 + rng.IntN(300); steps > 0 && !eng.IsFinished(); steps-- {
			p := eng.Decider()
			var legal []protocol.Intent
			for _, in := range eng.View(p).LegalIntents {
				if in.IntentKind() != protocol.IntentConcede {
					legal = append(legal, in)
				}
			}
			batch, err := eng.Execute(p, legal[rng.IntN(len(legal))])
			if err != nil {
				b.Fatal(err)
			}
			batches[g] = append(batches[g], batch)
		}
	}
	var perJournal float64
	for b.Loop() {
		before := liveHeap()
		js := make([]eventJournal, games)
		for g := range js {
			js[g].reset(1)
			for _, batch := range batches[g] {
				if err := js[g].add(batch); err != nil {
					b.Fatal(err)
				}
				js[g].trim(keep)
			}
		}
		perJournal = float64(liveHeap()-before) / games
		runtime.KeepAlive(js)
	}
	b.ReportMetric(perJournal, "B/journal")
}
