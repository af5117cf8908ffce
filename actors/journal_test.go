package actors

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/protocol"
)

func sampleIntentEntry(t testing.TB) logEntry {
	t.Helper()
	frame, err := protocol.EncodeClientFrame(&protocol.ClientIntent{IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", BasedOnSeq: 412,
		Intent: protocol.Attack{AttackerSlot: protocol.SlotVanguard, TargetSlot: protocol.SlotVanguard, BoosterSlot: protocol.IntPtr(protocol.SlotBackCentre)}})
	if err != nil {
		t.Fatal(err)
	}
	return logEntry{Kind: entryIntent, At: 1764685932123, Seat: 1, IntentID: "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", Frame: frame}
}

// TestEncodeLogEntryMatchesMarshal pins encodeLogEntry to the durable log's
// format: byte for byte what msgpack.Marshal writes, and decodable back.
func TestEncodeLogEntryMatchesMarshal(t *testing.T) {
	intent := sampleIntentEntry(t)
	entries := []logEntry{
		intent,
		{},
		{Kind: entryIntent, At: 1, Seat: 0, IntentID: "a", Frame: []byte{0x90}},
		{Kind: entryIntent, At: -5, Seat: 1, IntentID: strings.Repeat("x", 31), Frame: bytes.Repeat([]byte{7}, 255)},
		{Kind: entryIntent, At: 1 << 40, Seat: 1, IntentID: strings.Repeat("y", 256), Frame: bytes.Repeat([]byte{8}, 70000)},
		{Kind: entryFinish, At: 1764685932123, Loser: -1, Reason: int(protocol.FinishTimeout)},
		{Kind: entryFinish, At: 1764685932123, Loser: 1, Reason: 200},
		{Kind: entryFinish, At: 1764685932123, Loser: 70000, Reason: -40000},
		{Kind: entryPresence, At: 1764685932123, Seat: 1, Present: true},
		{Kind: entryPresence, At: 1764685932123, Seat: 0, Present: false},
		{Kind: 255, At: -1 << 62, Seat: -129, Loser: 128, Reason: 1 << 33, Present: true, IntentID: "z", Frame: []byte{1}},
	}
	for i, e := range entries {
		want, err := msgpack.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeLogEntry(e)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("entry %d %+v:\n got  %x\n want %x", i, e, got, want)
		}
		var back logEntry
		if err := decodeInternal(got, &back); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	// The returned slice is the caller's: a later encoding must not reuse it.
	a, _ := encodeLogEntry(intent)
	keep := bytes.Clone(a)
	if _, err := encodeLogEntry(entries[5]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, keep) {
		t.Fatal("an earlier payload changed after the next encoding")
	}
}

// BenchmarkEncodeLogEntry is the grain's per-intent encoding of its durable
// log entry (persist): reflection (msgpack.Marshal) against encodeLogEntry.
func BenchmarkEncodeLogEntry(b *testing.B) {
	e := sampleIntentEntry(b)
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeInternal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeLogEntry(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestIntentJournal(t *testing.T) {
	j := intentJournal{}
	j.add(1, "b", 7)
	j.add(0, "b", 5)
	j.add(0, "a", 3)
	if seq, ok := j.lookup(0, "b"); !ok || seq != 5 {
		t.Fatalf("lookup(0, b) = %d, %v; want 5", seq, ok)
	}
	if _, ok := j.lookup(1, "a"); ok {
		t.Fatal("seat 1 found seat 0's intent id")
	}
	want := []journalEntry{{0, "a", 3}, {0, "b", 5}, {1, "b", 7}}
	if got := j.entries(); !slices.Equal(got, want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
	long := strings.Repeat("x", protocol.MaxIntentIDLen)
	j.add(1, long, 9)
	if seq, ok := j.lookup(1, long); !ok || seq != 9 {
		t.Fatalf("lookup of a %d-byte id = %d, %v", len(long), seq, ok)
	}
	if n := testing.AllocsPerRun(100, func() { j.lookup(0, "b") }); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
}
