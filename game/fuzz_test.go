package game

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/matchgrain/matchgrain/protocol"
)

// FuzzUnmarshalState: no input makes UnmarshalState panic; whatever it
// accepts is an engine that can be viewed, driven and re-serialised without
// panicking. Run it longer with:
//
//	go test ./game -run '^$' -fuzz FuzzUnmarshalState -fuzztime 60s
func FuzzUnmarshalState(f *testing.F) {
	// Seeds: states of real games at many points (every kind of decision).
	for seed := uint64(1); seed <= 6; seed++ {
		e, _, err := New(seed, decksFor(seed))
		if err != nil {
			f.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 5))
		for n := 0; !e.IsFinished(); n++ {
			if n%25 == 0 || e.pend.kind != pendNone {
				b, _ := e.MarshalState()
				f.Add(b)
			}
			d := e.Decider()
			l := e.LegalCommands(d)
			if _, err := e.Execute(d, l[r.IntN(len(l)-1)]); err != nil {
				f.Fatal(err)
			}
		}
		b, _ := e.MarshalState()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{stateVersion})
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnmarshalState(b)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error does not wrap ErrBadState: %v", err)
			}
			return
		}
		again, _ := e.MarshalState()
		e2, err := UnmarshalState(again)
		if err != nil || e2.StateHash() != e.StateHash() {
			t.Fatalf("re-serialised state does not restore: %v", err)
		}
		for p := -1; p <= 2; p++ {
			e.View(p)
			e.LegalCommands(p)
		}
		// Drive a few commands (each on a fresh copy) without panicking.
		d := e.Decider()
		if d < 0 {
			return
		}
		for i, in := range e.LegalCommands(d) {
			if i >= 8 {
				break
			}
			c, _ := UnmarshalState(again)
			c.Execute(d, in)
			c.View(0)
			c.View(1)
		}
	})
}

// TestUnmarshalStateRejects covers the corruptions a store could hand back:
// every truncation, a wrong version, trailing bytes, and inconsistent states
// that decode structurally (a card in two zones, a missing vanguard, a
// decision without its context).
func TestUnmarshalStateRejects(t *testing.T) {
	tb := newTable(t, 31)
	good, _ := tb.e.MarshalState()
	if _, err := UnmarshalState(good); err != nil {
		t.Fatalf("good state: %v", err)
	}
	for n := range len(good) {
		if _, err := UnmarshalState(good[:n]); !errors.Is(err, ErrBadState) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	bad := func(name string, edit func(e *Engine)) {
		t.Helper()
		c := cloneEngine(tb.e)
		edit(c)
		b, _ := c.MarshalState()
		_, err := UnmarshalState(b)
		if !errors.Is(err, ErrBadState) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	raw := func(name string, b []byte) {
		t.Helper()
		if _, err := UnmarshalState(b); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	raw("version 2", append([]byte{2}, good[1:]...))
	raw("trailing byte", append(append([]byte(nil), good...), 0))
	bad("card in two zones", func(e *Engine) { e.pl[0].hand = append(e.pl[0].hand, e.pl[0].deck[0]) })
	bad("card missing", func(e *Engine) { e.pl[0].deck = e.pl[0].deck[1:] })
	bad("no vanguard", func(e *Engine) { e.pl[1].deck = append(e.pl[1].deck, e.pl[1].vc); e.pl[1].vc = 0 })
	bad("foreign card", func(e *Engine) { e.pl[0].hand[0], e.pl[1].hand[0] = e.pl[1].hand[0], e.pl[0].hand[0] })
	bad("finished without stage", func(e *Engine) { e.finished = true })
	bad("winner while running", func(e *Engine) { e.winner = 1 })
	bad("stage without decision", func(e *Engine) { e.stage = stDriveCheck })
	bad("guard step without battle", func(e *Engine) { e.stage = stGuardWait })
	bad("trigger decision without check", func(e *Engine) { e.pend = pending{kind: pendTrigger} })
	bad("order over one ability", func(e *Engine) {
		e.pend = pending{kind: pendOrder}
		e.queue[0] = []activation{{source: e.pl[0].vc, key: protocol.AbilityRiddenUpon}}
	})
	bad("ability of another card", func(e *Engine) {
		e.pend = pending{kind: pendAbility, act: activation{source: e.pl[0].vc, key: protocol.AbilityHitRetire}}
	})
	bad("choice out of range", func(e *Engine) {
		var id uint8
		for i, c := range e.pl[0].deck {
			if e.prOf(c).ID == "S1-013" {
				id = c
				e.pl[0].deck = removeAt(e.pl[0].deck, i)
				e.pl[0].drop = append(e.pl[0].drop, id)
				break
			}
		}
		e.pend = pending{kind: pendChoice, act: activation{source: id, key: protocol.AbilityHitRetire},
			choice: protocol.ChoiceTarget, options: []int16{0, 7}}
	})
	bad("trigger zone outside a check", func(e *Engine) { e.pl[0].trig = e.pl[0].deck[0]; e.pl[0].deck = e.pl[0].deck[1:] })
}
