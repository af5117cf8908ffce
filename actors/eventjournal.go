package actors

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchgrain/matchgrain/protocol"
)

// eventJournal holds a match's latest events, unprojected, for resumes and
// resyncs. They are kept encoded (protocol.AppendEvent), one after the other
// in one byte slice, each a uvarint length and then its encoding: a
// Decision event's Go value, with one allocation per legal intent and per
// unit, is many times its encoding, these events are read back only when a
// client resumes or resyncs, and one slice costs no header or allocation
// per batch (BenchmarkEventJournalMemory). Seqs are contiguous, so the
// journal needs only the next one.
type eventJournal struct {
	next   int64 // seq of the next event to be added
	events int   // events held
	data   []byte
}

// reset empties the journal; the next event added must have seq next.
func (j *eventJournal) reset(next int64) {
	*j = eventJournal{next: next}
}

// add appends events whose seqs continue the journal. It fails only if an
// event cannot be encoded, which would be a bug; the journal is unchanged then.
func (j *eventJournal) add(evs []protocol.EventEnvelope) error {
	if len(evs) == 0 {
		return nil
	}
	if evs[0].Seq != j.next {
		return fmt.Errorf("event journal: event %d added after %d", evs[0].Seq, j.next-1)
	}
	held := len(j.data)
	var enc []byte
	for i, e := range evs {
		if e.Seq != j.next+int64(i) {
			j.data = j.data[:held]
			return fmt.Errorf("event journal: event %d at position %d of a batch from %d", e.Seq, i, j.next)
		}
		var err error
		if enc, err = protocol.AppendEvent(enc[:0], e.Event); err != nil {
			j.data = j.data[:held]
			return fmt.Errorf("event journal: encode event %d: %w", e.Seq, err)
		}
		j.data = binary.AppendUvarint(j.data, uint64(len(enc)))
		j.data = append(j.data, enc...)
	}
	j.events += len(evs)
	j.next += int64(len(evs))
	return nil
}

// trim drops the oldest events once the journal holds more than a quarter
// over keep, keeping keep (as many as it has); keep 0 empties it. The
// slack bounds the work to one move of the kept bytes per keep/4 events
// added instead of one per batch.
func (j *eventJournal) trim(keep int) {
	if j.events <= keep+keep/4 {
		return
	}
	if keep == 0 {
		j.events, j.data = 0, nil
		return
	}
	rest := j.data
	for range j.events - keep {
		var ok bool
		if _, rest, ok = nextEvent(rest); !ok {
			// Only add writes data, so this cannot happen; keep everything
			// rather than guess.
			return
		}
	}
	j.events = keep
	// room is what the kept events and keep/4 more of their average size
	// take: what the journal grows to before its next trim.
	room := len(rest) + len(rest)/4
	if cap(j.data) <= room+max(room/4, 512) { // a small journal's few bytes are not worth an allocation
		j.data = j.data[:copy(j.data, rest)]
		return
	}
	// Oversized: append grows an array by a quarter to double at a time,
	// and a trim in place would keep the largest it ever was for the rest
	// of the match (BenchmarkEventJournalMemory: arrays half again as large
	// as what they held, the journal being the largest part of a running
	// match's heap). Moved to one of the right size instead: an allocation
	// per keep/4 events at most.
	data := make([]byte, len(rest), room)
	copy(data, rest)
	j.data = data
}

// nextEvent splits the first event's encoding off b; ok is false when b
// does not start with a whole length-prefixed event.
func nextEvent(b []byte) (body, rest []byte, ok bool) {
	n, p := binary.Uvarint(b)
	if p <= 0 || n > uint64(len(b)-p) {
		return nil, b, false
	}
	return b[p : p+int(n)], b[p+int(n):], true
}

// first is the seq of the oldest event held (next when empty).
func (j *eventJournal) first() int64 { return j.next - int64(j.events) }

// errNotJournaled: the events asked for are older than the journal.
var errNotJournaled = errors.New("event journal: events no longer held")

// since decodes the events from fromSeq to the newest; fromSeq past the
// newest gives none.
func (j *eventJournal) since(fromSeq int64) ([]protocol.EventEnvelope, error) {
	if fromSeq < j.first() {
		return nil, errNotJournaled
	}
	out := make([]protocol.EventEnvelope, 0, max(j.next-fromSeq, 0))
	rest := j.data
	for seq := j.first(); seq < j.next; seq++ {
		body, r, ok := nextEvent(rest)
		if !ok {
			return nil, fmt.Errorf("event journal: bad length at event %d", seq)
		}
		rest = r
		if seq < fromSeq {
			continue
		}
		ev, err := protocol.DecodeEvent(body)
		if err != nil {
			return nil, fmt.Errorf("event journal: decode event %d: %w", seq, err)
		}
		out = append(out, protocol.EventEnvelope{Seq: seq, Event: ev})
	}
	return out, nil
}
