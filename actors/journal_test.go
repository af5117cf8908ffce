package actors

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
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
		{Kind: entryName, At: 1764685932123, Seat: 1, Name: "Bea"},
		{Kind: entryName, At: 1764685932123, Seat: 1, Name: strings.Repeat("é", 100)},
		{Kind: 255, At: -1 << 62, Seat: -129, Loser: 128, Reason: 1 << 33, Present: true, IntentID: "z", Frame: []byte{1}, Name: "n"},
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
		if back.Name != e.Name {
			t.Fatalf("entry %d: name %q decoded as %q", i, e.Name, back.Name)
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
	// A snapshot's journal reads back whole, and equal journals encode alike
	// whatever order they were filled in.
	back, err := decodeJournal(j.encode())
	if err != nil || !sameJournal(back, j) {
		t.Fatalf("journal round trip: %v, %v; want %v", back, err, j)
	}
	other := intentJournal{}
	other.add(0, "a", 3)
	other.add(0, "b", 5)
	other.add(1, "b", 7)
	if !bytes.Equal(other.encode(), j.encode()) {
		t.Fatal("equal journals encode differently")
	}
	long := strings.Repeat("x", protocol.MaxIntentIDLen)
	j.add(1, long, 9)
	if seq, ok := j.lookup(1, long); !ok || seq != 9 {
		t.Fatalf("lookup of a %d-byte id = %d, %v", len(long), seq, ok)
	}
	if n := testing.AllocsPerRun(100, func() { j.lookup(0, "b") }); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
	// A seq past 32 bits, which no game reaches, is kept whole, and so is an
	// entry that moves between the two widths.
	const far = int64(math.MaxUint32) + 5
	j.add(0, "far", far)
	j.add(1, "b", far+1)
	back, err = decodeJournal(j.encode())
	for _, c := range []struct {
		seat int
		id   string
		want int64
	}{{0, "far", far}, {1, "b", far + 1}, {0, "b", 5}, {1, long, 9}} {
		for name, jj := range map[string]*intentJournal{"journal": &j, "decoded": &back} {
			if seq, ok := jj.lookup(c.seat, c.id); !ok || seq != c.want {
				t.Errorf("%s: lookup(%d, %s) = %d, %v; want %d", name, c.seat, c.id, seq, ok, c.want)
			}
		}
	}
	if err != nil || j.len() != 5 || back.len() != 5 {
		t.Fatalf("journal of 5 entries: %d, decoded %d (%v)", j.len(), back.len(), err)
	}
}

// sameJournal reports whether two journals hold the same entries.
func sameJournal(a, b intentJournal) bool { return bytes.Equal(a.encode(), b.encode()) }

// A snapshot's journal that is not exactly what encode writes is refused: a
// journal that lost an entry would let a duplicate be applied twice.
func TestDecodeJournalRefusesDamage(t *testing.T) {
	j := intentJournal{}
	j.add(0, "a", 3)
	j.add(1, "b", 7)
	good := j.encode()
	swapped := append(bytes.Clone(good[digestLen:]), good[:digestLen]...)
	zeroSeq := bytes.Clone(good)
	clear(zeroSeq[len(intentDigest{}):digestLen])
	for name, b := range map[string][]byte{
		"truncated":    good[:len(good)-1],
		"out of order": swapped,
		"repeated":     append(bytes.Clone(good[:digestLen]), good[:digestLen]...),
		"seq 0":        zeroSeq,
	} {
		if got, err := decodeJournal(b); err == nil {
			t.Errorf("%s: decoded %v, want an error", name, got)
		}
	}
	if got, err := decodeJournal(nil); err != nil || got.len() != 0 {
		t.Errorf("empty journal: %v, %v", got, err)
	}
}

// A version 1 snapshot (intent ids) reads into the same journal as the
// version 2 one written today, and unknown versions are refused.
func TestSnapshotJournalVersions(t *testing.T) {
	v1 := grainSnapshot{Version: 1, Journal: []journalEntry{{0, "a", 3}, {1, "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", 7}}}
	data, err := msgpack.Marshal(v1)
	if err != nil {
		t.Fatal(err)
	}
	var back grainSnapshot
	if err := msgpack.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.journal()
	if err != nil {
		t.Fatalf("version 1 journal: %v", err)
	}
	want := intentJournal{}
	want.add(0, "a", 3)
	want.add(1, "3f2b8c1e-7d4a-4e55-9a10-2b6f0c9d8e71", 7)
	if !sameJournal(got, want) {
		t.Fatalf("version 1 journal = %v, want %v", got, want)
	}
	v2 := newSnapshot(nil, decisionClock{}, absence{}, [2]string{}, want)
	if v2.Version != 2 || v2.Journal != nil {
		t.Fatalf("new snapshot: version %d, %d id entries", v2.Version, len(v2.Journal))
	}
	if got, err := v2.journal(); err != nil || !sameJournal(got, want) {
		t.Fatalf("version 2 journal = %v, %v; want %v", got, err, want)
	}
	if _, err := (&grainSnapshot{Version: 3}).journal(); err == nil {
		t.Fatal("a version 3 snapshot was read")
	}
}

// BenchmarkIntentJournalMemory reports the live heap per journal entry
// (B/entry) for journals of 200 accepted intents with the 36-character ids
// clients send, a match's worth at the open-loop measurement
// (docs/performance.md).
func BenchmarkIntentJournalMemory(b *testing.B) {
	const journals, entries = 1000, 200
	ids := make([]string, entries)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-7d4a-4e55-9a10-%012x", i, i*7919)
	}
	var perEntry float64
	for b.Loop() {
		before := liveHeap()
		js := make([]intentJournal, journals)
		for m := range js {
			js[m] = intentJournal{}
			for i, id := range ids {
				js[m].add(i%2, id, int64(i+1))
			}
		}
		perEntry = float64(liveHeap()-before) / (journals * entries)
		runtime.KeepAlive(js)
	}
	b.ReportMetric(perEntry, "B/entry")
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
