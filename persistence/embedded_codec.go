package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// errCorrupt marks a stored value that does not decode: the file was
// damaged or written by an incompatible version.
var errCorrupt = errors.New("persistence: corrupt embedded record")

// matchRecord is the mutable part of a match in the embedded store. Meta is
// kept apart because it never changes and appends rewrite this record.
type matchRecord struct {
	epoch     int64
	lastSeq   int64
	finished  bool
	createdAt time.Time
	updatedAt time.Time
	owner     string
}

// matchRecordV1 layout: version(1) epoch(8) lastSeq(8) finished(1)
// createdAt(8, unix ns) updatedAt(8, unix ns) owner(rest).
const (
	matchRecordV1     = 1
	matchRecordHeader = 1 + 8 + 8 + 1 + 8 + 8
)

func (m matchRecord) encode() []byte {
	b := make([]byte, matchRecordHeader, matchRecordHeader+len(m.owner))
	b[0] = matchRecordV1
	binary.BigEndian.PutUint64(b[1:], uint64(m.epoch))
	binary.BigEndian.PutUint64(b[9:], uint64(m.lastSeq))
	if m.finished {
		b[17] = 1
	}
	binary.BigEndian.PutUint64(b[18:], uint64(m.createdAt.UnixNano()))
	binary.BigEndian.PutUint64(b[26:], uint64(m.updatedAt.UnixNano()))
	return append(b, m.owner...)
}

func decodeMatchRecord(b []byte) (matchRecord, error) {
	if len(b) < matchRecordHeader {
		return matchRecord{}, fmt.Errorf("match record of %d bytes, want at least %d: %w", len(b), matchRecordHeader, errCorrupt)
	}
	if b[0] != matchRecordV1 {
		return matchRecord{}, fmt.Errorf("match record version %d, want %d: %w", b[0], matchRecordV1, errCorrupt)
	}
	return matchRecord{
		epoch:     int64(binary.BigEndian.Uint64(b[1:])),
		lastSeq:   int64(binary.BigEndian.Uint64(b[9:])),
		finished:  b[17] == 1,
		createdAt: time.Unix(0, int64(binary.BigEndian.Uint64(b[18:]))),
		updatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b[26:]))),
		owner:     string(b[matchRecordHeader:]),
	}, nil
}

// snapshotHeader: seq(8) then the data.
const snapshotHeader = 8

func encodeSnapshot(s Snapshot) []byte {
	b := make([]byte, snapshotHeader, snapshotHeader+len(s.Data))
	binary.BigEndian.PutUint64(b, uint64(s.Seq))
	return append(b, s.Data...)
}

// decodeSnapshot copies the data out of b, which belongs to the transaction.
func decodeSnapshot(b []byte) (Snapshot, error) {
	if len(b) < snapshotHeader {
		return Snapshot{}, fmt.Errorf("snapshot record of %d bytes, want at least %d: %w", len(b), snapshotHeader, errCorrupt)
	}
	data := make([]byte, len(b)-snapshotHeader)
	copy(data, b[snapshotHeader:])
	return Snapshot{Seq: int64(binary.BigEndian.Uint64(b)), Data: data}, nil
}

// seqKey is a log key: big-endian so byte order is seq order.
func seqKey(seq int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(seq))
}

// decodeSeq reads a log key; keys are only ever written by seqKey.
func decodeSeq(k []byte) int64 {
	if len(k) != 8 {
		return -1 // checkTail then reports the log as inconsistent
	}
	return int64(binary.BigEndian.Uint64(k))
}

// timeKeyLen is the length of timeKey's output.
const timeKeyLen = 8

// timeKey encodes t so that byte order is time order. Times before 1970 are
// clamped to 1970: tickets are never that old.
func timeKey(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(max(t.UnixNano(), 0)))
}
