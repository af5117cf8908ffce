package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// ErrLogPruned: a finished match's log was pruned by retention, so it can
// no longer be replayed from its start; its result is still known.
var ErrLogPruned = errors.New("the match's log was pruned by retention")

// ErrNotFinished: only a finished match is replayed, or a replay would
// show spectators a running match without their delay.
var ErrNotFinished = errors.New("the match has not finished")

// ReplayResult is how a finished match ended, from its final snapshot.
type ReplayResult struct {
	Winner int                   `json:"winner"`
	Reason protocol.FinishReason `json:"finishReason"`
}

// StreamReplay replays a finished match from its durable record as viewer
// (0, 1 or protocol.SeatSpectator) saw it and hands the frames to emit, in
// order (docs/protocol.md §15): a ServerHello naming the last seq, a
// ServerSnapshot of the state after the setup, then one ServerEvents per
// log entry that produced events, projected for viewer, the last one ending
// with GameFinished. Each batch is built and emitted before the next entry
// is replayed, so the events never sit in memory whole. A match
// that has not finished is ErrNotFinished; one whose log was pruned is
// ErrLogPruned, with its result from the final snapshot.
func StreamReplay(rules Rules, timing Timing, matchID string, meta []byte, finished bool, snap *persistence.Snapshot, log []persistence.LogEntry,
	viewer int, emit func(frame []byte) error) (ReplayResult, error) {
	if viewer < 0 || viewer > protocol.SeatSpectator {
		return ReplayResult{}, fmt.Errorf("replay: viewer %d is not a seat or a spectator", viewer)
	}
	if !finished {
		return ReplayResult{}, ErrNotFinished
	}
	if len(log) == 0 || log[0].Seq != 1 {
		if snap == nil {
			return ReplayResult{}, errors.New("replay: no log from seq 1 and no snapshot")
		}
		c := replayCore(rules, timing, matchID)
		if err := c.recover(persistence.Recovery{Meta: meta, Snapshot: snap, Tail: log}); err != nil {
			return ReplayResult{}, fmt.Errorf("replay: final snapshot: %w", err)
		}
		return c.result(), ErrLogPruned
	}
	// A first pass checks the whole log and finds the last seq, so that a
	// record that cannot be replayed fails before anything is emitted and
	// the hello can name the end; the second emits.
	end, err := replayPass(rules, timing, matchID, meta, log, viewer, 0, nil)
	if err != nil {
		return ReplayResult{}, err
	}
	if _, err := replayPass(rules, timing, matchID, meta, log, viewer, end.seq, emit); err != nil {
		return ReplayResult{}, err
	}
	return end.ReplayResult, nil
}

// replayEnd is where a replay pass ended.
type replayEnd struct {
	ReplayResult
	seq int64
}

// replayPass replays meta and log on a scratch core and, if emit is set,
// emits the frames of StreamReplay (the hello says lastSeq).
func replayPass(rules Rules, timing Timing, matchID string, meta []byte, log []persistence.LogEntry, viewer int, lastSeq int64,
	emit func(frame []byte) error) (replayEnd, error) {
	c := replayCore(rules, timing, matchID)
	if err := c.recover(persistence.Recovery{Meta: meta}); err != nil {
		return replayEnd{}, fmt.Errorf("replay: set up: %w", err)
	}
	c.deps.Now = func() time.Time { return time.UnixMilli(c.meta.CreatedAt) }
	if emit != nil {
		for _, f := range []protocol.ServerFrame{
			&protocol.ServerHello{ProtocolVersion: protocol.Version, MatchID: matchID, PlayerIndex: viewer, EventSeq: lastSeq, ServerTimeMs: c.meta.CreatedAt},
			&protocol.ServerSnapshot{View: c.view(viewer)},
		} {
			if err := emit(c.frame(f, 0).Data); err != nil {
				return replayEnd{}, err
			}
		}
	}
	for _, le := range log {
		var e logEntry
		if err := decodeInternal(le.Payload, &e); err != nil {
			return replayEnd{}, fmt.Errorf("replay: log entry %d: %w", le.Seq, err)
		}
		if le.Seq != c.logSeq+1 {
			return replayEnd{}, fmt.Errorf("replay: log gap: entry %d after %d", le.Seq, c.logSeq)
		}
		evs, err := c.apply(e)
		if err != nil {
			return replayEnd{}, fmt.Errorf("replay: log entry %d: %w", le.Seq, err)
		}
		c.logSeq = le.Seq
		if emit == nil || len(evs) == 0 {
			continue // a presence change has no event
		}
		if err := emit(c.batchFrame(viewer, evs).Data); err != nil {
			return replayEnd{}, err
		}
	}
	if !c.engine.IsFinished() {
		return replayEnd{}, fmt.Errorf("replay: the log ends at entry %d before the match does", c.logSeq)
	}
	return replayEnd{ReplayResult: c.result(), seq: c.engine.LastSeq()}, nil
}

// replayCore is a scratch core for a replay: nothing is claimed, written or sent.
func replayCore(rules Rules, timing Timing, matchID string) *Core {
	c := newCore(&GrainDeps{Rules: rules, Timing: timing, Now: time.Now, Logger: slog.New(slog.DiscardHandler)})
	c.id, c.log = matchID, c.deps.Logger
	return c
}

// result is the finished match's winner and reason.
func (g *Core) result() ReplayResult {
	v := g.engine.View(protocol.SeatSpectator)
	r := ReplayResult{Winner: v.Winner}
	if v.FinishReason != nil {
		r.Reason = *v.FinishReason
	}
	return r
}
