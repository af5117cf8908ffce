package protocol

import (
	"bytes"
	"fmt"
	"testing"
)

// Benchmarks behind docs/performance.md §3.3 (the protocol codec):
//
//	go test ./protocol -run '^$' -bench . -benchmem

// benchEvents is a typical ServerEvents: one boosted vanguard attack, guarded,
// with a drive check that hits — ten events.
func benchEvents() *ServerEvents {
	evs := []Event{
		&AttackEvent{Player: 0, Attacker: card(17, "S1-013"), AttackerSlot: SlotVanguard, Target: card(90, "S2-014"), TargetSlot: SlotVanguard},
		&BoostEvent{Player: 0, Booster: card(31, "S1-005"), BoosterSlot: SlotBackCentre},
		&AbilityTriggeredEvent{Player: 0, Source: card(31, "S1-005"), AbilityKey: AbilityBoostBonus},
		&AbilityResolvedEvent{Player: 0, Source: card(31, "S1-005"), AbilityKey: AbilityBoostBonus, Outcome: OutcomeResolved},
		&PhaseStartedEvent{Phase: PhaseBattle, Step: StepGuard},
		&GuardEvent{Player: 1, Card: card(72, "S2-003"), FromZone: ZoneHand, Shield: 15000},
		&DriveCheckEvent{Player: 0, Card: card(44, "S1-002"), Trigger: TriggerCritical, Index: 1, Total: 2},
		&TriggerResolvedEvent{Player: 0, Card: card(44, "S1-002"), Trigger: TriggerCritical, PowerTarget: SlotVanguard, EffectTarget: SlotVanguard},
		&CardToHandEvent{Player: 0, Card: card(44, "S1-002"), FromZone: ZoneTrigger},
		&BattleResolvedEvent{Hit: true, AttackerPower: 36000, DefenderPower: 28000},
	}
	f := &ServerEvents{FromSeq: 301, ToSeq: 310}
	for i, ev := range evs {
		f.Events = append(f.Events, EventEnvelope{Seq: int64(301 + i), Event: ev})
	}
	return f
}

// benchSnapshot is a realistic full snapshot: both players with hands of 6
// (on the wire the opponent's hand is empty, so this is an upper bound), all 5
// rear-guards, soul 3, drop 8, damage 4 face up, an open battle and 20 legal
// intents.
func benchSnapshot() *ServerSnapshot {
	cards := func(first, n int, printing string) []CardView {
		out := make([]CardView, n)
		for i := range out {
			out[i] = cardView(first+i, printing, 8000)
		}
		return out
	}
	player := func(idx, base int, clan string) PlayerView {
		p := PlayerView{
			Index: idx, Name: fmt.Sprintf("player-%d", idx), HandCount: 6, DeckCount: 23,
			Hand:     cards(base, 6, clan+"-005"),
			Vanguard: &CardView{InstanceID: base + 10, PrintingID: clan + "-013", FaceUp: true, Rested: true, BasePower: 13000, Power: 23000, BaseCritical: 1, Critical: 2},
			Guardian: []CardView{}, Soul: cards(base+20, 3, clan+"-009"), Drop: cards(base+30, 8, clan+"-002"),
			FaceDownDamage: 0, FaceUpDamage: cards(base+40, 4, clan+"-003"),
		}
		for i := range p.RearGuards {
			c := cardView(base+50+i, clan+"-007", 10000)
			p.RearGuards[i] = &c
		}
		return p
	}
	v := MatchView{
		MatchID: "m_01HZX3QK7Y", EventSeq: 412, You: 0, ActivePlayer: 0, TurnNumber: 9,
		Phase: PhaseMain, Step: StepNone, Winner: NoWinner,
		Players: [2]PlayerView{player(0, 1, "S1"), player(1, 101, "S2")},
		Battle:  &BattleView{AttackerSlot: SlotVanguard, TargetSlot: SlotVanguard, BoosterSlot: IntPtr(1), AttackerPower: 23000, TargetPower: 13000, DriveTotal: 2},
		Clock:   sampleClock(),
	}
	for i := 0; i < 19; i++ {
		v.LegalIntents = append(v.LegalIntents, Call{PrintingID: fmt.Sprintf("S1-%03d", 5+i%4), Slot: i % 5})
	}
	v.LegalIntents = append(v.LegalIntents, EndTurn{})
	return &ServerSnapshot{View: v}
}

func benchIntent() *ClientIntent {
	return &ClientIntent{IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", BasedOnSeq: 412,
		Intent: Attack{AttackerSlot: SlotVanguard, TargetSlot: SlotVanguard, BoosterSlot: IntPtr(SlotBackCentre)}}
}

func BenchmarkCodec(b *testing.B) {
	server := []struct {
		name string
		f    ServerFrame
	}{
		{"ServerEvents10", benchEvents()},
		{"ServerSnapshot", benchSnapshot()},
	}
	for _, s := range server {
		enc, err := EncodeServerFrame(s.f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.name+"/Encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeServerFrame(s.f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "frame-bytes")
		})
		b.Run(s.name+"/Append", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(enc))
			for b.Loop() {
				var err error
				if buf, err = AppendServerFrame(buf[:0], s.f); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/Decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := DecodeServerFrame(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	ci := benchIntent()
	enc, err := EncodeClientFrame(ci)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ClientIntent/Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeClientFrame(ci); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(enc)), "frame-bytes")
	})
	b.Run("ClientIntent/Decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeClientFrame(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReject measures how cheaply hostile frames are refused.
func BenchmarkReject(b *testing.B) {
	inputs := nastyInputs(b)
	for _, name := range []string{"str32 claims 4 GiB", "depth bomb 100000", "300 KiB frame", "random garbage"} {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeClientFrame(in); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

func BenchmarkFrameReader(b *testing.B) {
	payload, err := EncodeServerFrame(benchEvents())
	if err != nil {
		b.Fatal(err)
	}
	stream := bytes.Repeat(framed(payload), 64)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	r := bytes.NewReader(stream)
	fr := NewFrameReader(r, 0)
	for b.Loop() {
		if _, err := fr.ReadFrame(); err != nil {
			r.Reset(stream)
			if _, err := fr.ReadFrame(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
