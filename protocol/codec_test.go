package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// unhex decodes a hex string with optional spaces, for hand-written frames.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// mpStr returns the hex of a MessagePack str of s in its smallest form.
func mpStr(s string) string {
	var buf bytes.Buffer
	if err := msgpack.NewEncoder(&buf).EncodeString(s); err != nil {
		panic(err)
	}
	return hex.EncodeToString(buf.Bytes())
}

func TestRoundTripClientFrames(t *testing.T) {
	for _, f := range allClientFrames() {
		t.Run(reflect.TypeOf(f).Elem().Name(), func(t *testing.T) {
			b, err := EncodeClientFrame(f)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, err := DecodeClientFrame(b)
			if err != nil {
				t.Fatalf("decode %x: %v", b, err)
			}
			if !jsonEqual(t, mustJSON(t, got), mustJSON(t, f)) {
				t.Fatalf("decoded %s\nwant    %s", mustJSON(t, got), mustJSON(t, f))
			}
			again, err := EncodeClientFrame(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs (%v):\n%x\n%x", err, again, b)
			}
			// Independent check: the library's generic decoder reads it as one value.
			var generic any
			if err := msgpack.Unmarshal(b, &generic); err != nil {
				t.Fatalf("msgpack.Unmarshal: %v", err)
			}
		})
	}
}

func TestRoundTripServerFrames(t *testing.T) {
	for _, f := range allServerFrames() {
		t.Run(reflect.TypeOf(f).Elem().Name(), func(t *testing.T) {
			b, err := EncodeServerFrame(f)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, err := DecodeServerFrame(b)
			if err != nil {
				t.Fatalf("decode %x: %v", b, err)
			}
			if !jsonEqual(t, mustJSON(t, got), mustJSON(t, f)) {
				t.Fatalf("decoded %s\nwant    %s", mustJSON(t, got), mustJSON(t, f))
			}
			again, err := EncodeServerFrame(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs (%v):\n%x\n%x", err, again, b)
			}
			var generic any
			if err := msgpack.Unmarshal(b, &generic); err != nil {
				t.Fatalf("msgpack.Unmarshal: %v", err)
			}
		})
	}
}

// Filled values have no nil-vs-empty ambiguity, so they must come back
// deep-equal, pointers and all.
func TestRoundTripFilledDeepEqual(t *testing.T) {
	for _, f := range sampleClientFrames() {
		want := filled(f)
		b, err := EncodeClientFrame(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeClientFrame(b)
		if err != nil {
			t.Fatalf("%T: %v", f, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got %#v\nwant %#v", f, got, want)
		}
	}
	for _, f := range sampleServerFrames() {
		want := filled(f)
		b, err := EncodeServerFrame(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeServerFrame(b)
		if err != nil {
			t.Fatalf("%T: %v", f, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got %#v\nwant %#v", f, got, want)
		}
	}
	for _, it := range sampleIntents() {
		want := filled(it)
		b, err := AppendIntent(nil, want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeIntent(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got %#v, %v; want %#v", it, got, err, want)
		}
	}
	for _, ev := range sampleEvents() {
		want := filled(ev)
		b, err := AppendEvent([]byte{0xff}, want)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != 0xff {
			t.Fatalf("AppendEvent overwrote dst")
		}
		got, err := DecodeEvent(b[1:])
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got %#v, %v; want %#v", ev, got, err, want)
		}
	}
}

func TestCanonicalIntegers(t *testing.T) {
	tests := []struct {
		v    int64
		want string
	}{
		{0, "00"}, {127, "7f"}, {128, "cc80"}, {255, "ccff"}, {256, "cd0100"}, {65535, "cdffff"},
		{65536, "ce00010000"}, {math.MaxUint32, "ceffffffff"}, {math.MaxUint32 + 1, "cf0000000100000000"},
		{-1, "ff"}, {-32, "e0"}, {-33, "d0df"}, {-128, "d080"}, {-129, "d1ff7f"}, {-32768, "d18000"},
		{-32769, "d2ffff7fff"}, {math.MinInt32, "d280000000"}, {math.MinInt32 - 1, "d3ffffffff7fffffff"},
		{math.MaxInt64, "cf7fffffffffffffff"}, {math.MinInt64, "d38000000000000000"},
	}
	for _, tt := range tests {
		b, err := EncodeClientFrame(&ClientPong{Nonce: tt.v})
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b[3:]); got != tt.want {
			t.Errorf("%d encodes as %s, want %s", tt.v, got, tt.want)
		}
		f, err := DecodeClientFrame(b)
		if err != nil || f.(*ClientPong).Nonce != tt.v {
			t.Errorf("%d decodes as %v, %v", tt.v, f, err)
		}
	}
}

func TestNilAndEmptySlicesEncodeAlike(t *testing.T) {
	a, errA := EncodeClientFrame(&ClientIntent{IntentID: "x", Intent: Mulligan{}})
	b, errB := EncodeClientFrame(&ClientIntent{IntentID: "x", Intent: Mulligan{HandIndexes: []int{}}})
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("nil %x (%v) vs empty %x (%v)", a, errA, b, errB)
	}
	if !bytes.HasSuffix(a, []byte{0x92, 0x00, 0x91, 0x90}) {
		t.Errorf("Mulligan{nil} = %x, want an empty array, never nil", a)
	}
}

func TestDecodeTolerant(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want ClientFrame
	}{
		{"short body", "92 00 91 01", &ClientHello{ProtocolVersion: 1}},
		{"empty body", "92 03 90", &ClientPing{}},
		{"long body skips extra fields", "92 04 94 05 " + mpStr("extra") + " 81 a1 6b 01 92 c3 cb 3ff0000000000000", &ClientPong{Nonce: 5}},
		{"extra bin and ext", "92 04 93 05 c4 02 abcd d6 01 00000000", &ClientPong{Nonce: 5}},
		{"wide unsigned ints", "92 03 92 cf 0000000000000007 ce 00000008", &ClientPing{Nonce: 7, ClientTimeMs: 8}},
		{"wide signed ints", "92 02 92 d3 0000000000000009 c2", &ClientResync{FromSeq: 9}},
		{"array16 header", "dc 0002 00 dc 0001 01", &ClientHello{ProtocolVersion: 1}},
		{"str8 for a short string", "92 05 91 d9 03 616263", &ClientLeave{Reason: "abc"}},
		{"str32 for a short string", "92 05 91 db 00000003 616263", &ClientLeave{Reason: "abc"}},
		{"negative int64 slot, nil booster", "92 01 93 a1 61 00 92 07 93 d3 ffffffffffffffff cd 0003 c0",
			&ClientIntent{IntentID: "a", Intent: Attack{AttackerSlot: -1, TargetSlot: 3}}},
		{"intent body short", "92 01 93 a1 61 00 92 04 91 " + mpStr("S1-005"),
			&ClientIntent{IntentID: "a", Intent: Call{PrintingID: "S1-005"}}},
		{"intent body long", "92 01 93 a1 61 00 92 09 92 03 c0", &ClientIntent{IntentID: "a", Intent: Intercept{Slot: 3}}},
		{"client intent long", "92 01 94 a1 61 05 92 10 90 c0", &ClientIntent{IntentID: "a", BasedOnSeq: 5, Intent: EndTurn{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeClientFrame(unhex(t, tt.hex))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !jsonEqual(t, mustJSON(t, got), mustJSON(t, tt.want)) {
				t.Fatalf("got  %s\nwant %s", mustJSON(t, got), mustJSON(t, tt.want))
			}
		})
	}
}

// errClass is the answer the edge gives to a decode error (errors.go).
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUnknownIntent):
		return "NotSupported"
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrMalformed):
		return "MalformedFrame"
	}
	return "untyped: " + err.Error()
}

func TestDecodeClientRejects(t *testing.T) {
	long := func(n int) string { return mpStr(strings.Repeat("x", n)) }
	tests := []struct {
		name   string
		hex    string
		limit  bool // wraps ErrStringLimit too
		substr string
	}{
		{"empty", "", false, "0 left"},
		{"never-used code", "c1", false, "want array"},
		{"not an array", "a3 616263", false, "want array"},
		{"map frame", "81 00 90", false, "want array"},
		{"union of one", "91 00", false, "union"},
		{"union of three", "93 00 90 90", false, "union"},
		{"key is a string", "92 a1 30 90", false, "want integer"},
		{"unknown frame key", "92 06 90", false, "unknown client frame key 6"},
		{"negative frame key", "92 ff 90", false, "unknown client frame key -1"},
		{"trailing byte", "92 04 91 05 00", false, "trailing"},
		{"body is nil", "92 04 c0", false, "want array"},
		{"nil for int", "92 04 91 c0", false, "want integer, got nil"},
		{"float for int", "92 04 91 ca 3f800000", false, "got float"},
		{"bool for int", "92 04 91 c3", false, "got bool"},
		{"uint64 over int64", "92 04 91 cf ffffffffffffffff", false, "does not fit int64"},
		{"truncated int", "92 04 91 cd 00", false, "left"},
		{"int for bool", "92 02 92 01 01", false, "want bool"},
		{"bin for string", "92 05 91 c4 01 61", false, "want string"},
		{"invalid utf-8", "92 05 91 a2 c328", false, "UTF-8"},
		{"empty intentId", "92 01 93 a0 00 92 10 90", true, "intentId is 0 bytes"},
		{"intentId too long", "92 01 93 " + long(65) + " 00 92 10 90", true, "intentId is 65 bytes"},
		{"intentId nil", "92 01 93 c0 00 92 10 90", false, "want string, got nil"},
		{"ticket too long", "92 00 94 01 " + long(1025) + " a0 00", true, "ticket is 1025 bytes"},
		{"clientBuild too long", "92 00 94 01 a0 " + long(129) + " 00", true, "clientBuild is 129"},
		{"reason too long", "92 05 91 " + long(257), true, "reason is 257"},
		{"printingId too long", "92 01 93 a1 61 00 92 02 91 " + long(33), true, "printingId is 33"},
		{"discardPrintingId too long", "92 01 93 a1 61 00 92 08 92 a0 " + long(33), true, "discardPrintingId is 33"},
		{"str32 claims 4 GiB (limit)", "92 00 94 01 db ffffffff", true, "ticket is 4294967295"},
		{"str16 claims more than left", "92 05 91 da 00ff 61", false, "255 bytes, 1 left"},
		{"array32 claims 4 Gi elements", "92 04 dd ffffffff", false, "limit 256"},
		{"array over MaxArrayLen", "92 01 93 a1 61 00 92 00 91 dc 0101", false, "257 elements, limit 256"},
		{"array over bytes left", "92 04 9f 01", false, "15 elements, 1 bytes left"},
		{"map32 in skipped field", "92 04 92 01 df ffffffff", false, "skipped map"},
		{"depth bomb", "92 04 92 01" + strings.Repeat(" 91", 40) + " 00", false, "deeper than 16"},
		{"intent missing", "92 01 92 a1 61 00", false, "got 2 fields"},
		{"intent nil", "92 01 93 a1 61 00 c0", false, "want array, got nil"},
		{"intent key is nil", "92 01 93 a1 61 00 92 c0 90", false, "got nil"},
		{"handIndexes nil", "92 01 93 a1 61 00 92 00 91 c0", false, "want array, got nil"},
		{"handIndexes element float", "92 01 93 a1 61 00 92 00 91 91 cb 0000000000000000", false, "float"},
		{"unknown intent then trailing byte", "92 01 93 a1 61 00 92 18 90 00", false, "trailing"},
		{"unknown intent with depth bomb body", "92 01 93 a1 61 00 92 18" + strings.Repeat(" 91", 20) + " 90", false, "deeper"},
		{"unknown intent with truncated body", "92 01 93 a1 61 00 92 18 a5 61", false, "left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DecodeClientFrame(unhex(t, tt.hex))
			if err == nil {
				t.Fatalf("accepted: %#v", f)
			}
			if f != nil {
				t.Errorf("returned a frame with a malformed error: %#v", f)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			if got := errors.Is(err, ErrStringLimit); got != tt.limit {
				t.Errorf("errors.Is(ErrStringLimit) = %v, want %v (%v)", got, tt.limit, err)
			}
			if !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("error %q does not mention %q", err, tt.substr)
			}
		})
	}
}

func TestDecodeClientFrameTooLarge(t *testing.T) {
	b := make([]byte, MaxFrameBytes+1)
	f, err := DecodeClientFrame(b)
	if f != nil || !errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, %v; want ErrFrameTooLarge only", f, err)
	}
	if _, err := DecodeServerFrame(b); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("server: %v", err)
	}
	// Exactly MaxFrameBytes is allowed through to the decoder (and is garbage here).
	if _, err := DecodeClientFrame(b[:MaxFrameBytes]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("at the limit: %v", err)
	}
}

func TestDecodeUnknownIntent(t *testing.T) {
	id := mpStr("secret-7")
	tests := []struct {
		name string
		hex  string
		key  int64
	}{
		{"key 18 empty body", "92 01 93 " + id + " 07 92 12 90", 18},
		{"key 200 with a body", "92 01 93 " + id + " 07 92 cc c8 93 01 " + mpStr("S1-001") + " 81 a1 6b c0", 200},
		{"negative key", "92 01 93 " + id + " 07 92 ff 90", -1},
		{"body is not an array", "92 01 93 " + id + " 07 92 19 c3", 25},
		{"long ClientIntent", "92 01 94 " + id + " 07 92 19 90 c0", 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DecodeClientFrame(unhex(t, tt.hex))
			if !errors.Is(err, ErrUnknownIntent) || errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrUnknownIntent only", err)
			}
			var ue *UnknownIntentError
			if !errors.As(err, &ue) || ue.Key != tt.key || ue.IntentID != "secret-7" {
				t.Fatalf("err = %#v", err)
			}
			ci, ok := f.(*ClientIntent)
			if !ok || ci.IntentID != "secret-7" || ci.BasedOnSeq != 7 || ci.Intent != nil {
				t.Fatalf("frame = %#v", f)
			}
			if strings.Contains(err.Error(), "secret-7") {
				t.Errorf("error text carries client data: %v", err)
			}
		})
	}
	if _, err := DecodeIntent(unhex(t, "92 12 90")); !errors.Is(err, ErrUnknownIntent) {
		t.Errorf("DecodeIntent: %v", err)
	}
}

// Concurrent encoders share the pool; each result must be its own bytes.
func TestEncodeConcurrently(t *testing.T) {
	frames := allServerFrames()
	want := make([][]byte, len(frames))
	for i, f := range frames {
		b, err := EncodeServerFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
	}
	errc := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			var buf []byte
			for n := 0; n < 50; n++ {
				for i, f := range frames {
					b, err := EncodeServerFrame(f)
					if err == nil {
						buf, err = AppendServerFrame(buf[:0], f)
					}
					if err != nil {
						errc <- err
						return
					}
					if !bytes.Equal(b, want[i]) || !bytes.Equal(buf, want[i]) {
						errc <- errors.New("concurrent encoding differs")
						return
					}
				}
			}
			errc <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestDecodeServerForwardCompatible(t *testing.T) {
	// ServerEvents with an unknown event 99 (its body skipped) between two known ones.
	known, err := EncodeServerFrame(&ServerEvents{FromSeq: 1, ToSeq: 3, Events: []EventEnvelope{
		{Seq: 1, Event: &DeckShuffledEvent{Player: 1}},
		{Seq: 2, Event: &UnknownEvent{Key: 99}},
		{Seq: 3, Event: &GameFinishedEvent{Winner: 0, Reason: FinishConceded}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Replace the unknown event's empty body (the 0x90 after key 99) with a real one.
	i := bytes.Index(known, []byte{0x63, 0x90})
	if i < 0 {
		t.Fatalf("no unknown event in %x", known)
	}
	body := unhex(t, "94 01 92 05 a2 5331 81 a1 6b c3 c0")
	withBody := append(append(append([]byte{}, known[:i+1]...), body...), known[i+2:]...)
	f, err := DecodeServerFrame(withBody)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	evs := f.(*ServerEvents).Events
	if len(evs) != 3 || !reflect.DeepEqual(evs[1].Event, &UnknownEvent{Key: 99}) {
		t.Fatalf("events = %#v", evs)
	}
	if g, ok := evs[2].Event.(*GameFinishedEvent); !ok || g.Reason != FinishConceded {
		t.Fatalf("event after the unknown one: %#v", evs[2].Event)
	}
	// An unknown intent in legalIntents decodes to UnknownIntent.
	snap := &ServerSnapshot{View: MatchView{LegalIntents: []Intent{UnknownIntent{Key: 40}, Concede{}}}}
	sb, err := EncodeServerFrame(snap)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeServerFrame(sb)
	if err != nil {
		t.Fatal(err)
	}
	if li := got.(*ServerSnapshot).View.LegalIntents; !IntentsEqual(li[0], UnknownIntent{Key: 40}) || !IntentsEqual(li[1], Concede{}) {
		t.Fatalf("legalIntents = %#v", li)
	}
}

func TestDecodeServerRejects(t *testing.T) {
	tests := []struct{ name, hex, substr string }{
		{"unknown frame key", "92 09 90", "unknown server frame key 9"},
		{"events claim more than fit", "92 02 93 01 02 dc 0100 " + strings.Repeat("00", 300), "cannot fit"},
		{"envelope without event", "92 02 93 01 01 91 91 01 00 00 00 00", "got 1 fields"},
		{"nil event", "92 02 93 01 01 91 92 01 c0 00 00 00", "got nil"},
		{"deckSize of one", "92 02 93 01 01 91 92 01 92 00 92 00 91 31", "want 2 elements, got 1"},
		{"rearGuards of four", "92 01 91 9a a0 00 00 00 00 00 00 c2 00 92 9e 00 a0 00 00 90 c0 94 c0 c0 c0 c0 00 00 00 00 00 00 00 00", "want 5 elements, got 4"},
		{"players nil", "92 01 91 9a a0 00 00 00 00 00 00 c2 00 c0", "MatchView.players: want array, got nil"},
		{"hit is an int", "92 01 91 9b a0 00 00 00 00 00 00 c2 00 92 90 90 9a 00 00 c0 00 00 00 c2 00 00 01", "BattleView.hit: want bool"},
		{"trailing", "92 05 92 01 02 c0", "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DecodeServerFrame(unhex(t, tt.hex))
			if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("got %#v, %v; want ErrMalformed mentioning %q", f, err, tt.substr)
			}
		})
	}
}

func TestEncodeRejectsInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		enc  func() ([]byte, error)
		want error
	}{
		{"nil client frame", func() ([]byte, error) { return EncodeClientFrame(nil) }, ErrInvalidValue},
		{"typed nil client frame", func() ([]byte, error) { return EncodeClientFrame((*ClientHello)(nil)) }, ErrInvalidValue},
		{"nil intent", func() ([]byte, error) { return EncodeClientFrame(&ClientIntent{IntentID: "a"}) }, ErrInvalidValue},
		{"typed nil intent", func() ([]byte, error) { return EncodeClientFrame(&ClientIntent{IntentID: "a", Intent: (*Call)(nil)}) }, ErrInvalidValue},
		{"nil server frame", func() ([]byte, error) { return EncodeServerFrame((*ServerEvents)(nil)) }, ErrInvalidValue},
		{"nil event", func() ([]byte, error) {
			return EncodeServerFrame(&ServerEvents{Events: []EventEnvelope{{Seq: 1}}})
		}, ErrInvalidValue},
		{"typed nil event", func() ([]byte, error) { return AppendEvent(nil, (*CallEvent)(nil)) }, ErrInvalidValue},
		{"handIndexes over MaxArrayLen", func() ([]byte, error) {
			return EncodeClientFrame(&ClientIntent{IntentID: "a", Intent: Mulligan{HandIndexes: make([]int, MaxArrayLen+1)}})
		}, ErrInvalidValue},
		{"frame over MaxFrameBytes", func() ([]byte, error) {
			return EncodeServerFrame(&ServerError{Message: strings.Repeat("x", MaxFrameBytes)})
		}, ErrFrameTooLarge},
		{"appended frame over MaxFrameBytes", func() ([]byte, error) {
			return AppendServerFrame(make([]byte, 3), &ServerError{Message: strings.Repeat("x", MaxFrameBytes)})
		}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.enc()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if len(b) > 3 {
				t.Errorf("returned %d bytes with an error", len(b))
			}
		})
	}
	// Many events may exceed MaxArrayLen: ServerEvents.events is exempt.
	evs := make([]EventEnvelope, MaxArrayLen+10)
	for i := range evs {
		evs[i] = EventEnvelope{Seq: int64(i + 1), Event: &DeckShuffledEvent{}}
	}
	b, err := EncodeServerFrame(&ServerEvents{FromSeq: 1, ToSeq: int64(len(evs)), Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeServerFrame(b)
	if err != nil || len(f.(*ServerEvents).Events) != len(evs) {
		t.Fatalf("decode %d events: %v", len(evs), err)
	}
}

func TestPointerIntentsEncodeLikeValues(t *testing.T) {
	for _, it := range sampleIntents() {
		p := reflect.New(reflect.TypeOf(it))
		p.Elem().Set(reflect.ValueOf(it))
		a, errA := AppendIntent(nil, it)
		b, errB := AppendIntent(nil, p.Interface().(Intent))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%T: value %x (%v), pointer %x (%v)", it, a, errA, b, errB)
		}
	}
}

func TestAppendServerFrameKeepsPrefix(t *testing.T) {
	f := sampleServerFrames()[2]
	want, err := EncodeServerFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, FrameHeaderLen, 64)
	buf, err = AppendServerFrame(buf, f)
	if err != nil {
		t.Fatal(err)
	}
	PutFrameHeader(buf, len(buf)-FrameHeaderLen)
	fr := NewFrameReader(bytes.NewReader(buf), 0)
	got, err := fr.ReadFrame()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %x, %v; want %x", got, err, want)
	}
	c, err := AppendClientFrame([]byte("ab"), sampleClientFrames()[0])
	if err != nil || string(c[:2]) != "ab" {
		t.Fatalf("AppendClientFrame: %x, %v", c, err)
	}
}

func TestDecodedFrameDoesNotAliasInput(t *testing.T) {
	b, err := EncodeClientFrame(&ClientLeave{Reason: "bye"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeClientFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'z'
	}
	if got := f.(*ClientLeave).Reason; got != "bye" {
		t.Fatalf("reason changed with the input buffer: %q", got)
	}
}
