package actors

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchgrain/matchgrain/protocol"
)

// eventJournal holds a match's latest events, unprojected, for resumes and
// resyncs. They are kept encoded (protocol.AppendEvent), one byte slice per
// batch: a Decision event's Go value, with one allocation per legal intent
// and per unit, is many times its encoding, and these events are read back
// only when a client resumes or resyncs. Seqs are contiguous, so a batch
// needs only its first seq.
type eventJournal struct {
	next    int64 // seq of the next event to be added
	events  int   // events held
	batches []journalBatch
}

// journalBatch is consecutive events from seq from: each is a uvarint
// length and then its encoding.
type journalBatch struct {
	from int64
	n    int
	data []byte
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
	var buf, enc []byte
	for i, e := range evs {
		if e.Seq != j.next+int64(i) {
			return fmt.Errorf("event journal: event %d at position %d of a batch from %d", e.Seq, i, j.next)
		}
		var err error
		if enc, err = protocol.AppendEvent(enc[:0], e.Event); err != nil {
			return fmt.Errorf("event journal: encode event %d: %w", e.Seq, err)
		}
		buf = binary.AppendUvarint(buf, uint64(len(enc)))
		buf = append(buf, enc...)
	}
	data := make([]byte, len(buf)) // exactly sized: the journal keeps it
	copy(data, buf)
	j.batches = append(j.batches, journalBatch{from: j.next, n: len(evs), data: data})
	j.events += len(evs)
	j.next += int64(len(evs))
	return nil
}

// trim drops the oldest whole batches once the journal holds more than a
// quarter over keep events, keeping at least keep events (as many as it
// has); keep 0 empties it. The slack bounds the work to a batch drop now and
// then instead of one per batch added.
func (j *eventJournal) trim(keep int) {
	if j.events <= keep+keep/4 {
		return
	}
	k := 0
	for k < len(j.batches) && j.events-j.batches[k].n >= keep {
		j.events -= j.batches[k].n
		k++
	}
	clear(j.batches[:k]) // the dropped batches' bytes can go now
	j.batches = j.batches[k:]
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
	for _, b := range j.batches {
		if b.from+int64(b.n) <= fromSeq {
			continue
		}
		rest := b.data
		for i := range b.n {
			n, p := binary.Uvarint(rest)
			if p <= 0 || n > uint64(len(rest)-p) {
				return nil, fmt.Errorf("event journal: bad length at event %d", b.from+int64(i))
			}
			body := rest[p : p+int(n)]
			rest = rest[p+int(n):]
			seq := b.from + int64(i)
			if seq < fromSeq {
				continue
			}
			ev, err := protocol.DecodeEvent(body)
			if err != nil {
				return nil, fmt.Errorf("event journal: decode event %d: %w", seq, err)
			}
			out = append(out, protocol.EventEnvelope{Seq: seq, Event: ev})
		}
	}
	return out, nil
}
