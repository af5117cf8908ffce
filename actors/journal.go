package actors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
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
	// Guests marks the seats left for a player who joins later through an
	// invite (a friend match): the decision clock waits for each one's
	// first attach. Matches created before it have none.
	Guests [2]bool `msgpack:"g,omitempty"`
}

// entryKind tells what a command-log entry records.
type entryKind uint8

const (
	entryIntent   entryKind = 1 // a player's accepted intent (Concede included)
	entryFinish   entryKind = 2 // a server-decided end: timeout or absence
	entryPresence entryKind = 3 // a seat gained or lost its transport
	entryName     entryKind = 4 // a guest named its seat (NameSeat)
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
	Name     string    `msgpack:"n,omitempty"`
}

// journalEntry is an accepted intent's result as snapshot version 1 stored
// it; version 2 stores digests (intentJournal.encode), and version 1 snapshots are
// still read.
type journalEntry struct {
	Seat     int    `msgpack:"p"`
	IntentID string `msgpack:"i"`
	EventSeq int64  `msgpack:"e"`
}

// grainSnapshot is the grain state written every Timing.SnapshotEvery entries.
type grainSnapshot struct {
	Version int           `msgpack:"v"`
	Engine  []byte        `msgpack:"e"`
	Clock   decisionClock `msgpack:"c"`
	Absent  absence       `msgpack:"a"`
	// Journal is the idempotency journal of a version 1 snapshot.
	Journal []journalEntry `msgpack:"j,omitempty"`
	// Digests is the idempotency journal of a version 2 snapshot, as
	// intentJournal.encode writes it.
	Digests []byte `msgpack:"d,omitempty"`
	// Names are the names guests chose for their seats ("" where none did).
	Names [2]string `msgpack:"n,omitempty"`
}

// snapshotVersion is the version written. 2 stores the idempotency journal
// as digests; 1 (read still) stored intent ids. A member of a release before
// version 2 refuses to activate a match from a version 2 snapshot
// (docs/operations.md, "Snapshot format").
const snapshotVersion = 2

// newSnapshot is the snapshot of g's durable state, in the current format.
func newSnapshot(engine []byte, clock decisionClock, absent absence, names [2]string, j intentJournal) grainSnapshot {
	return grainSnapshot{Version: snapshotVersion, Engine: engine, Clock: clock, Absent: absent, Names: names, Digests: j.encode()}
}

// journal returns the snapshot's idempotency journal, from either version.
func (ss *grainSnapshot) journal() (intentJournal, error) {
	switch ss.Version {
	case 1:
		j := newIntentJournal(len(ss.Journal))
		for _, e := range ss.Journal {
			j.add(e.Seat, e.IntentID, e.EventSeq)
		}
		return j, nil
	case 2:
		return decodeJournal(ss.Digests)
	default:
		return intentJournal{}, fmt.Errorf("snapshot version %d, want 1 or 2", ss.Version)
	}
}

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
	for _, set := range [...]bool{e.IntentID != "", len(e.Frame) > 0, e.Loser != 0, e.Reason != 0, e.Present, e.Name != ""} {
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
	if e.Name != "" {
		if err := encodeField(enc, "n", func() error { return enc.EncodeString(e.Name) }); err != nil {
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
// intent produced, by seat and intent id. A grain holds one entry per
// accepted intent of the whole match (a duplicate is recognised however late
// it comes), so the key is a fixed 16-byte digest of the seat and the id
// (intentDigest) rather than the id: a map slot then holds the whole entry,
// where a string key cost a slot and a separate allocation of the id, about
// three times the memory for the 36-character ids clients send. The seq is
// held in 32 bits, a 20-byte slot instead of 24 (BenchmarkIntentJournalMemory);
// a seq past that, which no game reaches (its events are bounded by its
// decks), goes to a second map rather than be lost.
type intentJournal struct {
	seqs map[intentDigest]uint32
	wide map[intentDigest]int64 // seqs over math.MaxUint32; nil in practice
}

// newIntentJournal returns a journal with room for n entries.
func newIntentJournal(n int) intentJournal {
	return intentJournal{seqs: make(map[intentDigest]uint32, n)}
}

// intentDigest is the first 128 bits of SHA-256 over the seat's digit and
// the intent id. Two different intents of one seat share a digest only with
// a chance of about 2^-128 per pair (2^-64 after 2^32 intents of one
// match), and a client that wanted to make its own intents collide would need
// about 2^64 SHA-256 evaluations; a collision would only make the client's
// second intent look like a duplicate of its first.
type intentDigest [16]byte

// digestLen is the size of one entry in intentJournal.encode.
const digestLen = len(intentDigest{}) + 8

func digestIntent(seat int, id string) intentDigest {
	var buf [1 + protocol.MaxIntentIDLen]byte
	sum := sha256.Sum256(append(append(buf[:0], byte('0'+seat)), id...))
	return intentDigest(sum[:len(intentDigest{})])
}

// lookup returns the event seq of seat's accepted intent id.
func (j *intentJournal) lookup(seat int, id string) (int64, bool) {
	return j.get(digestIntent(seat, id))
}

func (j *intentJournal) get(d intentDigest) (int64, bool) {
	if seq, ok := j.seqs[d]; ok {
		return int64(seq), true
	}
	seq, ok := j.wide[d]
	return seq, ok
}

// add records seat's accepted intent id and the event seq it produced.
func (j *intentJournal) add(seat int, id string, eventSeq int64) {
	j.put(digestIntent(seat, id), eventSeq)
}

func (j *intentJournal) put(d intentDigest, seq int64) {
	if seq >= 0 && seq <= math.MaxUint32 {
		if j.seqs == nil {
			j.seqs = make(map[intentDigest]uint32)
		}
		j.seqs[d] = uint32(seq)
		delete(j.wide, d)
		return
	}
	if j.wide == nil {
		j.wide = make(map[intentDigest]int64)
	}
	j.wide[d] = seq
	delete(j.seqs, d)
}

// len returns the number of entries.
func (j *intentJournal) len() int { return len(j.seqs) + len(j.wide) }

// encode writes the journal for a snapshot: each entry as its digest and its
// event seq (8 bytes, big-endian), sorted by digest so that equal journals
// encode alike.
func (j *intentJournal) encode() []byte {
	keys := slices.AppendSeq(make([]intentDigest, 0, j.len()), maps.Keys(j.seqs))
	keys = slices.AppendSeq(keys, maps.Keys(j.wide))
	slices.SortFunc(keys, func(a, b intentDigest) int { return bytes.Compare(a[:], b[:]) })
	out := make([]byte, 0, len(keys)*digestLen)
	for _, k := range keys {
		seq, _ := j.get(k)
		out = binary.BigEndian.AppendUint64(append(out, k[:]...), uint64(seq))
	}
	return out
}

// decodeJournal reads what encode wrote; anything else is an error, since a
// journal that lost an entry would let a duplicate be applied twice.
func decodeJournal(b []byte) (intentJournal, error) {
	if len(b)%digestLen != 0 {
		return intentJournal{}, fmt.Errorf("intent journal: %d bytes is not a whole number of %d-byte entries", len(b), digestLen)
	}
	j := newIntentJournal(len(b) / digestLen)
	var prev intentDigest
	for i := 0; i < len(b); i += digestLen {
		k := intentDigest(b[i : i+len(intentDigest{})])
		if i > 0 && bytes.Compare(prev[:], k[:]) >= 0 {
			return intentJournal{}, fmt.Errorf("intent journal: entry %d is out of order", i/digestLen)
		}
		seq := int64(binary.BigEndian.Uint64(b[i+len(intentDigest{}) : i+digestLen]))
		if seq < 1 {
			return intentJournal{}, fmt.Errorf("intent journal: entry %d has event seq %d", i/digestLen, seq)
		}
		j.put(k, seq)
		prev = k
	}
	return j, nil
}
