package persistence

import (
	"errors"
	"testing"
	"time"
)

func TestMatchRecordRoundTrip(t *testing.T) {
	cases := []matchRecord{
		{},
		{epoch: 7, lastSeq: 1 << 40, finished: true, owner: "node-\x00-ü",
			createdAt: time.Unix(1, 2), updatedAt: time.Unix(1_800_000_000, 999)},
	}
	for _, want := range cases {
		got, err := decodeMatchRecord(want.encode())
		if err != nil {
			t.Fatalf("decode %+v: %v", want, err)
		}
		if got.epoch != want.epoch || got.lastSeq != want.lastSeq || got.finished != want.finished || got.owner != want.owner ||
			got.createdAt.UnixNano() != want.createdAt.UnixNano() || got.updatedAt.UnixNano() != want.updatedAt.UnixNano() {
			t.Fatalf("round trip = %+v, want %+v", got, want)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	cases := map[string][]byte{
		"Empty":        nil,
		"Short":        {matchRecordV1, 1, 2},
		"WrongVersion": append([]byte{9}, make([]byte, matchRecordHeader)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeMatchRecord(b); !errors.Is(err, errCorrupt) {
				t.Fatalf("err = %v, want errCorrupt", err)
			}
		})
	}
	if _, err := decodeSnapshot([]byte{1, 2}); !errors.Is(err, errCorrupt) {
		t.Fatalf("short snapshot: err = %v, want errCorrupt", err)
	}
}

// FuzzDecodeEmbedded feeds arbitrary bytes to the record decoders: a damaged
// file must give an error, never a panic.
func FuzzDecodeEmbedded(f *testing.F) {
	f.Add(matchRecord{epoch: 3, owner: "x"}.encode())
	f.Add(encodeSnapshot(Snapshot{Seq: 4, Data: []byte("s")}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if rec, err := decodeMatchRecord(b); err == nil {
			if again, err := decodeMatchRecord(rec.encode()); err != nil || again.owner != rec.owner || again.epoch != rec.epoch {
				t.Fatalf("re-encoding a decoded record changed it: %+v -> %+v (%v)", rec, again, err)
			}
		}
		if snap, err := decodeSnapshot(b); err == nil && len(snap.Data) != len(b)-snapshotHeader {
			t.Fatalf("snapshot data has %d bytes from a %d-byte record", len(snap.Data), len(b))
		}
		_ = decodeSeq(b) // any length: must not panic
	})
}
