package actors

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/protocol"
)

// matchMeta is what CreateMatch stores; with the command log it determines
// the whole match.
type matchMeta struct {
	Names     [2]string `msgpack:"n"`
	Decks     [2]string `msgpack:"d"`
	Seed      uint64    `msgpack:"s"`
	CreatedAt int64     `msgpack:"c"`
	// Bots marks the seats the grain plays itself (training matches).
	Bots [2]bool `msgpack:"b,omitempty"`
	// Version pins the rules (engine and catalog) the match was created
	// with; a member running other rules refuses to activate it. Empty in
	// matches created before pinning: those run anywhere.
	Version string `msgpack:"v,omitempty"`
}

// entryKind tells what a command-log entry records.
type entryKind uint8

const (
	entryIntent   entryKind = 1 // a player's accepted intent (Concede included)
	entryFinish   entryKind = 2 // a server-decided end: timeout or absence
	entryPresence entryKind = 3 // a seat gained or lost its transport
)

// logEntry is one durable command. At is the server time the grain applied
// it: clocks and absence are recomputed from it on replay, never from the
// wall clock.
type logEntry struct {
	Kind     entryKind `msgpack:"k"`
	At       int64     `msgpack:"t"`
	Seat     int       `msgpack:"p"`
	IntentID string    `msgpack:"i,omitempty"`
	Frame    []byte    `msgpack:"f,omitempty"`
	Loser    int       `msgpack:"l,omitempty"`
	Reason   int       `msgpack:"r,omitempty"`
	Present  bool      `msgpack:"o,omitempty"`
}

// journalEntry is the stored result of an accepted intent.
type journalEntry struct {
	Seat     int    `msgpack:"p"`
	IntentID string `msgpack:"i"`
	EventSeq int64  `msgpack:"e"`
}

// grainSnapshot is the grain state written every Timing.SnapshotEvery entries.
type grainSnapshot struct {
	Version int            `msgpack:"v"`
	Engine  []byte         `msgpack:"e"`
	Clock   decisionClock  `msgpack:"c"`
	Absent  absence        `msgpack:"a"`
	Journal []journalEntry `msgpack:"j"`
}

const snapshotVersion = 1

func encodeInternal(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

func decodeInternal(b []byte, v any) error {
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// encodeLogEntry is encodeInternal(e) without reflection, for the one entry
// every accepted intent writes. The bytes are the durable log's format, so
// they must stay exactly what msgpack.Marshal(e) writes: the same map, keys,
// field order, omitted empty fields and integer widths (a uint8 and an int64
// at their fixed widths, ints compact). TestEncodeLogEntryMatchesMarshal
// checks that over every kind of entry; a field added to logEntry must be
// added here too, and the test fails until it is.
func encodeLogEntry(e logEntry) ([]byte, error) {
	buf := logBufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	err := writeLogEntry(enc, &e)
	enc.Reset(nil) // the pooled encoder must not keep the pooled buffer
	msgpack.PutEncoder(enc)
	var out []byte
	if err == nil {
		out = bytes.Clone(buf.Bytes()) // the store keeps the payload: the buffer goes back
	}
	if buf.Cap() <= maxPooledLogBuf {
		logBufPool.Put(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("encode log entry: %w", err)
	}
	return out, nil
}

// maxPooledLogBuf keeps a rare huge entry's buffer out of the pool.
const maxPooledLogBuf = 16 << 10

var logBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func writeLogEntry(enc *msgpack.Encoder, e *logEntry) error {
	n := 3
	for _, set := range [...]bool{e.IntentID != "", len(e.Frame) > 0, e.Loser != 0, e.Reason != 0, e.Present} {
		if set {
			n++
		}
	}
	errs := [...]error{
		enc.EncodeMapLen(n),
		enc.EncodeString("k"), enc.EncodeUint8(uint8(e.Kind)),
		enc.EncodeString("t"), enc.EncodeInt64(e.At),
		enc.EncodeString("p"), enc.EncodeInt(int64(e.Seat)),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if e.IntentID != "" {
		if err := encodeField(enc, "i", func() error { return enc.EncodeString(e.IntentID) }); err != nil {
			return err
		}
	}
	if len(e.Frame) > 0 {
		if err := encodeField(enc, "f", func() error { return enc.EncodeBytes(e.Frame) }); err != nil {
			return err
		}
	}
	if e.Loser != 0 {
		if err := encodeField(enc, "l", func() error { return enc.EncodeInt(int64(e.Loser)) }); err != nil {
			return err
		}
	}
	if e.Reason != 0 {
		if err := encodeField(enc, "r", func() error { return enc.EncodeInt(int64(e.Reason)) }); err != nil {
			return err
		}
	}
	if e.Present {
		if err := encodeField(enc, "o", func() error { return enc.EncodeBool(true) }); err != nil {
			return err
		}
	}
	return nil
}

func encodeField(enc *msgpack.Encoder, key string, value func() error) error {
	if err := enc.EncodeString(key); err != nil {
		return err
	}
	return value()
}

// intentJournal is the idempotency journal: the event seq each accepted
// intent produced, by seat and intent id. It is keyed by one string, the
// seat's digit and then the id, with only the seq as the value: a grain
// holds one entry per accepted intent of the whole match (a duplicate is
// recognised however late it comes), and a struct key and an entry that
// repeats it took about twice the memory.
type intentJournal map[string]int64

// key builds the lookup key in buf; a lookup with string(key) does not
// allocate.
func (intentJournal) key(buf *[1 + protocol.MaxIntentIDLen]byte, seat int, id string) []byte {
	return append(append(buf[:0], byte('0'+seat)), id...)
}

// lookup returns the event seq of seat's accepted intent id.
func (j intentJournal) lookup(seat int, id string) (int64, bool) {
	var buf [1 + protocol.MaxIntentIDLen]byte
	seq, ok := j[string(j.key(&buf, seat, id))]
	return seq, ok
}

// add records seat's accepted intent id and the event seq it produced.
func (j intentJournal) add(seat int, id string, eventSeq int64) {
	var buf [1 + protocol.MaxIntentIDLen]byte
	j[string(j.key(&buf, seat, id))] = eventSeq
}

// entries lists the journal for a snapshot, sorted by seat and id so that
// equal journals encode alike.
func (j intentJournal) entries() []journalEntry {
	out := make([]journalEntry, 0, len(j))
	for k, seq := range j {
		out = append(out, journalEntry{Seat: int(k[0] - '0'), IntentID: k[1:], EventSeq: seq})
	}
	slices.SortFunc(out, func(a, b journalEntry) int {
		if c := cmp.Compare(a.Seat, b.Seat); c != 0 {
			return c
		}
		return strings.Compare(a.IntentID, b.IntentID)
	})
	return out
}
