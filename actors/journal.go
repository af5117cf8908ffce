package actors

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
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
