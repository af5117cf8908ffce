package actors

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// Replay is a match rebuilt from its durable record, without activating it
// (nothing is claimed or written), and the checks that the rebuild agrees
// with what the live match stored.
type Replay struct {
	// Version is the rules version the match is pinned to ("" before
	// pinning); RulesVersion is the one that replayed it.
	Version, RulesVersion string
	Names, Decks          [2]string
	Seed                  uint64
	CreatedAt             int64
	// LogSeq is the last log entry; EventSeq the last event.
	LogSeq, EventSeq int64
	Finished         bool
	// Decider is the seat whose decision runs (-1 once finished), since
	// DecisionStart (Unix ms) with Banks left at that moment.
	Decider       int
	DecisionStart int64
	Banks         [2]int64
	// AbsentSince is when each seat lost its connection (0: present).
	AbsentSince [2]int64
	// Intents is how many accepted intents the match remembers.
	Intents int
	// Events is every event from the start, and EventsSHA256 the hash of
	// their encoding: two replays of one match, on any member running the
	// same rules, give the same hash.
	Events       int
	EventsSHA256 string
	// SnapshotSeq is the log seq of the stored snapshot (0: none).
	// SnapshotIdentical: the state rebuilt from the log alone at that seq
	// equals the stored snapshot bit for bit (engine state, decision clock,
	// and the event seq of every remembered intent; absence is in-memory
	// state of activations, see stateBytes). FinalIdentical: the final
	// state rebuilt from the log alone equals the one an activation would
	// rebuild from snapshot + tail.
	SnapshotSeq       int64
	SnapshotIdentical bool
	FinalIdentical    bool
}

// ReplayMatch rebuilds a match from its creation meta, stored snapshot (nil
// if none) and whole log (seq 1 on), twice: from the log alone, and as an
// activation would (snapshot + tail), and compares them. An error means the
// record cannot be replayed at all (a gap, an undecodable entry, an entry
// the engine rejects, other rules); a replay that runs but disagrees is
// reported in the Identical fields.
func ReplayMatch(rules Rules, timing Timing, meta []byte, snap *persistence.Snapshot, log []persistence.LogEntry) (Replay, error) {
	var r Replay
	if len(log) > 0 && log[0].Seq != 1 {
		return r, fmt.Errorf("replay: the log starts at seq %d (pruned by retention?); a replay needs it from seq 1", log[0].Seq)
	}
	fresh := func() *Core {
		deps := &GrainDeps{Rules: rules, Timing: timing, Logger: slog.New(slog.DiscardHandler)}
		return newCore(deps)
	}
	// From the log alone: up to the snapshot's seq first, to compare there.
	var upTo int
	if snap != nil {
		r.SnapshotSeq = snap.Seq
		for upTo < len(log) && log[upTo].Seq <= snap.Seq {
			upTo++
		}
		if int64(upTo) != snap.Seq {
			return r, fmt.Errorf("replay: snapshot at seq %d but the log has only %d entries up to it", snap.Seq, upTo)
		}
	}
	full := fresh()
	var all []protocol.EventEnvelope
	full.everyEvent = &all
	if err := full.recover(persistence.Recovery{Meta: meta, Tail: log[:upTo]}); err != nil {
		return r, fmt.Errorf("replay from the log: %w", err)
	}
	if snap != nil {
		same, err := sameAsSnapshot(full, snap)
		if err != nil {
			return r, err
		}
		r.SnapshotIdentical = same
	}
	for _, le := range log[upTo:] {
		var e logEntry
		if err := decodeInternal(le.Payload, &e); err != nil {
			return r, fmt.Errorf("replay: log entry %d: %w", le.Seq, err)
		}
		if le.Seq != full.logSeq+1 {
			return r, fmt.Errorf("replay: log gap: entry %d after %d", le.Seq, full.logSeq)
		}
		evs, err := full.apply(e)
		if err != nil {
			return r, fmt.Errorf("replay: log entry %d: %w", le.Seq, err)
		}
		full.keepEvents(evs)
		full.logSeq = le.Seq
	}
	// As an activation would.
	act := fresh()
	if err := act.recover(persistence.Recovery{Meta: meta, Snapshot: snap, Tail: log[upTo:]}); err != nil {
		return r, fmt.Errorf("replay from the snapshot: %w", err)
	}
	a, err := stateBytes(full)
	if err != nil {
		return r, err
	}
	b, err := stateBytes(act)
	if err != nil {
		return r, err
	}
	r.FinalIdentical = bytes.Equal(a, b) && full.logSeq == act.logSeq
	h := sha256.New()
	for _, e := range all {
		enc, err := encodeInternal(e)
		if err != nil {
			return r, fmt.Errorf("replay: encode event %d: %w", e.Seq, err)
		}
		h.Write(enc)
	}
	r.Events, r.EventsSHA256 = len(all), hex.EncodeToString(h.Sum(nil))
	r.Version, r.RulesVersion = full.meta.Version, RulesVersion(rules)
	r.Names, r.Decks, r.Seed, r.CreatedAt = [2]string{full.name(0), full.name(1)}, full.meta.Decks, full.meta.Seed, full.meta.CreatedAt
	r.LogSeq, r.EventSeq, r.Finished = full.logSeq, full.engine.LastSeq(), full.engine.IsFinished()
	r.Decider, r.DecisionStart, r.Banks = full.clock.Decider, full.clock.Start, full.clock.Bank
	r.AbsentSince, r.Intents = full.absent.Since, full.journal.len()
	return r, nil
}

// stateBytes is what the log determines, encoded: the engine state, the
// decision clock, the guests' names and the remembered intents. Absence is left out: an
// activation marks connected seats absent in memory (connections do not
// survive it), and a later snapshot stores that without a log entry.
func stateBytes(g *Core) ([]byte, error) {
	eng, err := g.engine.MarshalState()
	if err != nil {
		return nil, fmt.Errorf("replay: marshal engine state: %w", err)
	}
	return encodeInternal(newSnapshot(eng, g.clock, absence{}, g.names, g.journal))
}

// sameAsSnapshot compares g (rebuilt from the log up to the snapshot's
// seq) with the stored snapshot: engine bytes, clocks, absence, journal.
func sameAsSnapshot(g *Core, snap *persistence.Snapshot) (bool, error) {
	var ss grainSnapshot
	if err := decodeInternal(snap.Data, &ss); err != nil {
		return false, fmt.Errorf("replay: decode snapshot: %w", err)
	}
	// Compared in the current format, whichever version was stored.
	journal, err := ss.journal()
	if err != nil {
		return false, fmt.Errorf("replay: snapshot: %w", err)
	}
	stored, err := encodeInternal(newSnapshot(ss.Engine, ss.Clock, absence{}, ss.Names, journal))
	if err != nil {
		return false, fmt.Errorf("replay: encode snapshot: %w", err)
	}
	rebuilt, err := stateBytes(g)
	if err != nil {
		return false, err
	}
	return bytes.Equal(stored, rebuilt), nil
}

// LogRecord is one durable log entry as ReplayLog decodes it, for tools and
// the simulator's checks. Kind is "intent", "finish" or "presence".
type LogRecord struct {
	Seq      int64
	Kind     string
	At       int64
	Seat     int
	IntentID string
	// EventSeq is the last event seq once the entry was applied.
	EventSeq int64
	// DeadlineAt is when the decider would have lost on time as the entry
	// came (Unix ms; 0 when no decision clock ran): the deadline the
	// entry, or a timeout in its place, had to come by.
	DeadlineAt int64
	// Loser and Reason describe a finish; Present a presence change.
	Loser   int
	Reason  protocol.FinishReason
	Present bool
}

// ReplayedLog is a whole match rebuilt from its creation meta and log.
type ReplayedLog struct {
	Records []LogRecord
	// Events is every event from seq 1, unprojected.
	Events []protocol.EventEnvelope
	// Views is each seat's view of the final state, as a snapshot frame
	// would carry it (without the clock).
	Views    [2]protocol.MatchView
	Finished bool
}

// ReplayLog rebuilds a match from its creation meta and its whole log
// (seq 1 on), entry by entry, through the same apply the grain uses.
func ReplayLog(rules Rules, timing Timing, meta []byte, log []persistence.LogEntry) (ReplayedLog, error) {
	var out ReplayedLog
	g := newCore(&GrainDeps{Rules: rules, Timing: timing, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.UnixMilli(0) }})
	g.log = g.deps.Logger
	g.everyEvent = &out.Events
	if err := g.recover(persistence.Recovery{Meta: meta}); err != nil {
		return out, fmt.Errorf("replay log: %w", err)
	}
	for _, le := range log {
		var e logEntry
		if err := decodeInternal(le.Payload, &e); err != nil {
			return out, fmt.Errorf("replay log: entry %d: %w", le.Seq, err)
		}
		if le.Seq != g.logSeq+1 {
			return out, fmt.Errorf("replay log: gap: entry %d after %d", le.Seq, g.logSeq)
		}
		deadline := g.clock.timeoutAt(timing)
		evs, err := g.apply(e)
		if err != nil {
			return out, fmt.Errorf("replay log: entry %d: %w", le.Seq, err)
		}
		g.keepEvents(evs)
		g.logSeq = le.Seq
		r := e.record(le.Seq)
		r.EventSeq, r.DeadlineAt = g.engine.LastSeq(), deadline
		out.Records = append(out.Records, r)
	}
	for s := range 2 {
		out.Views[s] = g.view(s)
		out.Views[s].Clock = protocol.ClockView{}
	}
	out.Finished = g.engine.IsFinished()
	return out, nil
}

// DecodeLogRecord decodes one durable log entry (EventSeq is left 0: only a
// replay knows it).
func DecodeLogRecord(le persistence.LogEntry) (LogRecord, error) {
	var e logEntry
	if err := decodeInternal(le.Payload, &e); err != nil {
		return LogRecord{}, fmt.Errorf("log entry %d: %w", le.Seq, err)
	}
	return e.record(le.Seq), nil
}

var entryKindNames = map[entryKind]string{entryIntent: "intent", entryFinish: "finish", entryPresence: "presence", entryName: "name"}

func (e *logEntry) record(seq int64) LogRecord {
	return LogRecord{Seq: seq, Kind: entryKindNames[e.Kind], At: e.At, Seat: e.Seat, IntentID: e.IntentID,
		Loser: e.Loser, Reason: protocol.FinishReason(e.Reason), Present: e.Present}
}

// EncodeMatchMeta is the creation meta of a match as the store keeps it
// (persistence.Store.CreateMatch): CreateMatch's, and that of tools and the
// simulator that write matches themselves.
func EncodeMatchMeta(names, decks [2]string, seed uint64, createdAtMs int64, bots [2]bool, rules Rules) ([]byte, error) {
	return encodeMatchMeta(matchMeta{Names: names, Decks: decks, Seed: seed, CreatedAt: createdAtMs, Bots: bots}, rules)
}

// encodeMatchMeta encodes m pinned to rules' version.
func encodeMatchMeta(m matchMeta, rules Rules) ([]byte, error) {
	m.Version = RulesVersion(rules)
	return encodeInternal(m)
}
