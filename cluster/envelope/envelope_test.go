package envelope_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/proto"

	"github.com/matchgrain/matchgrain/cluster/envelope"
)

type Ping struct {
	N    int
	Note string
}

type Pong struct {
	N    int
	Seen string
}

type Big struct{ Data []byte }

type NeverRegistered struct{ A int }

func init() {
	envelope.Register("test.Ping", func() any { return new(Ping) })
	envelope.Register("test.Pong", func() any { return new(Pong) })
	envelope.Register("test.Big", func() any { return new(Big) })
}

func roundTrip(t *testing.T, m *envelope.Msg) *envelope.Msg {
	t.Helper()
	wire, err := m.Serialize()
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	back, err := wire.Deserialize()
	if err != nil {
		t.Fatalf("Deserialize returned an error (would close the remote stream): %v", err)
	}
	out, ok := back.(*envelope.Msg)
	if !ok {
		t.Fatalf("Deserialize gave %T, want *envelope.Msg", back)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	in := &Ping{N: 42, Note: "héllo"}
	out := roundTrip(t, envelope.Wrap(in))
	got, ok := out.V.(*Ping)
	if !ok || *got != *in || out.Type != "test.Ping" {
		t.Fatalf("round trip gave %+v (%T), want %+v", out, out.V, in)
	}
	if got == in {
		t.Fatal("round trip returned the same pointer; want a fresh value")
	}
}

func TestDeadlineCrossesTheWire(t *testing.T) {
	dl := time.Date(2026, 12, 6, 18, 0, 0, 123456789, time.UTC).UnixNano()
	m := envelope.Wrap(&Ping{N: 1})
	m.Deadline = dl
	if out := roundTrip(t, m); out.Deadline != dl {
		t.Fatalf("deadline %d after the round trip, want %d", out.Deadline, dl)
	}
	if out := roundTrip(t, envelope.Wrap(&Ping{N: 1})); out.Deadline != 0 {
		t.Fatalf("a message without a deadline arrived with %d", out.Deadline)
	}
	// What a member older than the field sends: fields 1 and 2 only. It
	// decodes, with no deadline.
	data, err := msgpack.Marshal(&Ping{N: 3})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(&envelope.Envelope{Type: "test.Ping", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	var in envelope.Envelope
	if err := proto.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	back, _ := in.Deserialize()
	if m := back.(*envelope.Msg); m.Deadline != 0 || m.V.(*Ping).N != 3 {
		t.Fatalf("an old member's envelope decoded to %+v", m)
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	const skew = time.Second
	tests := []struct {
		name     string
		deadline int64
		want     bool
	}{
		{"absent: an older member, or a request within one member", 0, false},
		{"ahead", now.Add(2 * time.Second).UnixNano(), false},
		{"just passed, within the skew", now.Add(-time.Millisecond).UnixNano(), false},
		{"passed by exactly the skew", now.Add(-skew).UnixNano(), false},
		{"passed by more than the skew", now.Add(-skew - time.Nanosecond).UnixNano(), true},
		{"long passed", now.Add(-time.Hour).UnixNano(), true},
		// A receiver whose clock runs 3 s ahead of its sender's reads a
		// fresh 5 s request: by its clock 3 s have gone, so it is served;
		// it only drops those that waited over 3 s for it (5 + 1 - 3).
		{"receiver 3 s ahead, request fresh", now.Add(-3 * time.Second).Add(5 * time.Second).UnixNano(), false},
		{"receiver 3 s ahead, request waited 2.9 s", now.Add(-3 * time.Second).Add(-2900 * time.Millisecond).Add(5 * time.Second).UnixNano(), false},
		{"receiver 3 s ahead, request waited 3.1 s", now.Add(-3 * time.Second).Add(-3100 * time.Millisecond).Add(5 * time.Second).UnixNano(), true},
		{"before 1970 (a hostile peer)", -1 << 62, true},
		{"far future (a hostile peer)", 1<<63 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &envelope.Msg{Type: "test.Ping", V: &Ping{}, Deadline: tt.deadline}
			if got := m.Expired(now, skew); got != tt.want {
				t.Fatalf("Expired = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSerializeIgnoresALyingType(t *testing.T) {
	out := roundTrip(t, &envelope.Msg{Type: "test.Pong", V: &Ping{N: 1}})
	if _, ok := out.V.(*Ping); !ok || out.Type != "test.Ping" {
		t.Fatalf("got %+v, want the Ping V actually carried", out)
	}
}

func TestSerializeErrors(t *testing.T) {
	tests := []struct {
		name string
		msg  *envelope.Msg
		want error
	}{
		{"unregistered type", envelope.Wrap(&NeverRegistered{1}), envelope.ErrUnregistered},
		{"value instead of pointer", envelope.Wrap(Ping{N: 1}), envelope.ErrUnregistered},
		{"nil payload", &envelope.Msg{}, envelope.ErrUnregistered},
		{"too large", envelope.Wrap(&Big{Data: make([]byte, envelope.MaxDataBytes)}), envelope.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.msg.Serialize(); !errors.Is(err, tt.want) {
				t.Fatalf("Serialize = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeNeverFails(t *testing.T) {
	good, err := msgpack.Marshal(&Ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		typeName string
		data     []byte
		want     error // nil: decodes
	}{
		{"known", "test.Ping", good, nil},
		{"unknown name", "test.Nope", good, envelope.ErrUnknownType},
		{"empty name", "", good, envelope.ErrUnknownType},
		{"garbage", "test.Ping", []byte{0xc1, 0xff, 0x00}, envelope.ErrDecode},
		{"wrong shape", "test.Ping", []byte{0xa3, 'a', 'b', 'c'}, envelope.ErrDecode},
		{"over the limit", "test.Big", make([]byte, envelope.MaxDataBytes+1), envelope.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back, err := (&envelope.Envelope{Type: tt.typeName, Data: tt.data}).Deserialize()
			if err != nil {
				t.Fatalf("Deserialize returned %v; it must never fail", err)
			}
			m := back.(*envelope.Msg)
			u, unknown := m.V.(*envelope.Unknown)
			if tt.want == nil {
				if unknown {
					t.Fatalf("decoded to Unknown: %v", u.Err)
				}
				return
			}
			if !unknown || !errors.Is(u.Err, tt.want) || u.Type != tt.typeName || m.Type != tt.typeName {
				t.Fatalf("got %#v (%v), want Unknown{%q, %v}", m.V, m.V, tt.typeName, tt.want)
			}
		})
	}
}

func TestUnknownIsLoggedRateLimited(t *testing.T) {
	var buf bytes.Buffer
	envelope.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	defer envelope.SetLogger(nil)
	// Whatever other tests logged, the window they opened is over.
	envelope.ShiftWarnWindow(2 * envelope.WarnEvery)
	for range 50 {
		envelope.Decode("test.RateLimited", nil)
	}
	if n := strings.Count(buf.String(), "ignoring undecodable message"); n != 1 {
		t.Fatalf("%d warnings for 50 unknown messages in one window, want exactly 1:\n%s", n, buf.String())
	}
	// The next window's warning says how many were left out.
	envelope.ShiftWarnWindow(envelope.WarnEvery)
	envelope.Decode("test.RateLimited", nil)
	out := buf.String()
	if n := strings.Count(out, "ignoring undecodable message"); n != 2 {
		t.Fatalf("%d warnings after the window passed, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "suppressed_since_last=49") {
		t.Fatalf("the second window's warning does not count the 49 suppressed messages:\n%s", out)
	}
}

func TestRegisterRejectsProgrammingErrors(t *testing.T) {
	tests := []struct {
		name  string
		reg   func()
		panic string
	}{
		{"empty name", func() { envelope.Register("", func() any { return new(Ping) }) }, "needs a name"},
		{"nil constructor", func() { envelope.Register("x.nil", nil) }, "needs a name"},
		{"non-pointer", func() { envelope.Register("x.value", func() any { return Ping{} }) }, "non-nil pointer"},
		{"nil pointer", func() { envelope.Register("x.nilptr", func() any { return (*Ping)(nil) }) }, "non-nil pointer"},
		{"duplicate name", func() { envelope.Register("test.Ping", func() any { return new(NeverRegistered) }) }, "registered twice"},
		{"duplicate type", func() { envelope.Register("test.Ping2", func() any { return new(Ping) }) }, "already registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.panic) {
					t.Fatalf("panic %v, want one mentioning %q", r, tt.panic)
				}
			}()
			tt.reg()
		})
	}
	if _, ok := envelope.NameOf(&NeverRegistered{}); ok {
		t.Fatal("a failed Register left a registration behind")
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := msgpack.Marshal(&Ping{N: 7, Note: "x"})
	f.Add("test.Ping", good)
	f.Add("test.Big", []byte{0x81, 0xa4, 'D', 'a', 't', 'a', 0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Add("nope", []byte{})
	f.Fuzz(func(t *testing.T, typeName string, data []byte) {
		back, err := (&envelope.Envelope{Type: typeName, Data: data}).Deserialize()
		if err != nil {
			t.Fatalf("Deserialize failed: %v", err)
		}
		if m, ok := back.(*envelope.Msg); !ok || m.V == nil {
			t.Fatalf("Deserialize gave %#v", back)
		}
	})
}

// FuzzEnvelopeBytes feeds arbitrary bytes to the protobuf decoding an
// inbound envelope goes through, then to Deserialize and the deadline
// check: whatever a peer sends, none of it may fail or panic.
func FuzzEnvelopeBytes(f *testing.F) {
	good, _ := msgpack.Marshal(&Ping{N: 7, Note: "x"})
	for _, e := range []*envelope.Envelope{
		{Type: "test.Ping", Data: good},
		{Type: "test.Ping", Data: good, Deadline: time.Now().UnixNano()},
		{Type: "nope", Deadline: -1},
	} {
		raw, err := proto.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e envelope.Envelope
		if proto.Unmarshal(raw, &e) != nil {
			return // protoactor drops what is not protobuf before it gets here
		}
		back, err := e.Deserialize()
		if err != nil {
			t.Fatalf("Deserialize failed: %v", err)
		}
		m, ok := back.(*envelope.Msg)
		if !ok || m.V == nil || m.Deadline != e.Deadline {
			t.Fatalf("Deserialize gave %#v from %v", back, &e)
		}
		m.Expired(time.Now(), time.Second)
	})
}

func BenchmarkSerialize(b *testing.B) {
	m := envelope.Wrap(&Ping{N: 42, Note: "a short note"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Serialize(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeserialize(b *testing.B) {
	wire, err := envelope.Wrap(&Ping{N: 42, Note: "a short note"}).Serialize()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.Deserialize(); err != nil {
			b.Fatal(err)
		}
	}
}
