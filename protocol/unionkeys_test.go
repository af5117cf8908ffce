package protocol

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// unionKeys are the wire keys of every union member, written down by hand
// from docs/protocol.md §3 and docs/rules.md §10, not taken from the
// encoder: testdata/vectors.json is rewritten by -update from the encoder's
// own output, so a renumbered key would pass there. Keys are permanent: a
// failure here means a deployed client would misread the wire. Add new
// members with new keys; never change a line.
var unionKeys = map[string]map[string]int{
	"client frame": {
		"ClientHello": 0, "ClientIntent": 1, "ClientResync": 2, "ClientPing": 3, "ClientPong": 4, "ClientLeave": 5,
	},
	"server frame": {
		"ServerHello": 0, "ServerSnapshot": 1, "ServerEvents": 2, "ServerIntentResult": 3,
		"ServerClock": 4, "ServerPing": 5, "ServerPong": 6, "ServerError": 7, "ServerResumeTicket": 8,
	},
	"intent": {
		"Mulligan": 0, "FinishMulligan": 1, "Ride": 2, "SkipRide": 3, "Call": 4, "Move": 5,
		"EnterBattle": 6, "Attack": 7, "Guard": 8, "Intercept": 9, "PassGuard": 10,
		"ResolveTrigger": 11, "SelectTrigger": 12, "ResolveAbility": 13, "Choose": 14,
		"ActivateAbility": 15, "EndTurn": 16, "Concede": 17,
	},
	"event": {
		"GameStartedEvent": 0, "TurnStartedEvent": 1, "PhaseStartedEvent": 2, "CardsDrawnEvent": 3,
		"ReturnedToDeckEvent": 4, "DeckShuffledEvent": 5, "StandUpEvent": 6, "RideEvent": 7,
		"SoulEvent": 8, "CallEvent": 9, "MoveEvent": 10, "AttackEvent": 11, "BoostEvent": 12,
		"GuardEvent": 13, "DriveCheckEvent": 14, "DamageCheckEvent": 15, "TriggerResolvedEvent": 16,
		"BattleResolvedEvent": 17, "DamageEvent": 18, "RetireEvent": 19, "DiscardEvent": 20,
		"CardToHandEvent": 21, "DamageFlippedEvent": 22, "AbilityTriggeredEvent": 23,
		"AbilityResolvedEvent": 24, "CardSearchedViewEvent": 25, "SearchFailedViewEvent": 26,
		"GameFinishedEvent": 27, "DecisionEvent": 28,
	},
}

// TestUnionKeysPinned encodes a sample of every union member and checks the
// key the encoder writes against unionKeys, and that every member of the
// table was seen and no sample is missing from it.
func TestUnionKeysPinned(t *testing.T) {
	seen := map[string]map[string]bool{}
	check := func(union string, v any, b []byte, err error) {
		t.Helper()
		name := reflect.Indirect(reflect.ValueOf(v)).Type().Name()
		if err != nil {
			t.Errorf("%s %s: encode: %v", union, name, err)
			return
		}
		var pair []msgpack.RawMessage
		if err := msgpack.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
			t.Errorf("%s %s: not a [key, body] pair (%d elements, %v)", union, name, len(pair), err)
			return
		}
		var key int
		if err := msgpack.Unmarshal(pair[0], &key); err != nil {
			t.Errorf("%s %s: key: %v", union, name, err)
			return
		}
		want, ok := unionKeys[union][name]
		switch {
		case !ok:
			t.Errorf("%s %s (key %d) is missing from unionKeys: add it by hand", union, name, key)
		case key != want:
			t.Errorf("%s %s is encoded with key %d, want %d: union keys are permanent", union, name, key, want)
		}
		if seen[union] == nil {
			seen[union] = map[string]bool{}
		}
		seen[union][name] = true
	}
	for _, f := range sampleClientFrames() {
		b, err := EncodeClientFrame(f)
		check("client frame", f, b, err)
	}
	for _, f := range sampleServerFrames() {
		b, err := EncodeServerFrame(f)
		check("server frame", f, b, err)
	}
	for _, it := range sampleIntents() {
		b, err := AppendIntent(nil, it)
		check("intent", it, b, err)
	}
	events := append(sampleEvents(), sampleDecision())
	for _, ev := range events {
		b, err := AppendEvent(nil, ev)
		check("event", ev, b, err)
	}
	for union, keys := range unionKeys {
		for name := range keys {
			if !seen[union][name] {
				t.Errorf("%s %s: no sample encodes it, so its key is unchecked", union, name)
			}
		}
	}
	if len(unionKeys["intent"]) != intentKindCount || len(unionKeys["event"]) != eventKindCount {
		t.Errorf("unionKeys holds %d intents and %d events, the package knows %d and %d",
			len(unionKeys["intent"]), len(unionKeys["event"]), intentKindCount, eventKindCount)
	}
}
