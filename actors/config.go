package actors

import (
	"errors"
	"time"
)

// Timing holds every duration the match grain uses (docs/protocol.md §5). Tests
// scale them down; production uses DefaultTiming.
type Timing struct {
	// DecisionTime is the free time per decision (default 90 s).
	DecisionTime time.Duration
	// BankTime is each player's reserve for the whole match (default 5 min).
	BankTime time.Duration
	// AbsenceTimeout ends the match for a seat with no transport this long (default 5 min).
	AbsenceTimeout time.Duration
	// ClockInterval is the longest gap between ServerClock frames (default 5 s).
	ClockInterval time.Duration
	// SeatKeepAlive is how often an edge seat checks that its grain
	// still holds its attachment (default 2 s); it bounds how long a moved or
	// restarted grain goes unnoticed by a connected client.
	SeatKeepAlive time.Duration
	// SnapshotEvery writes a snapshot after this many log entries (default 32).
	SnapshotEvery int
	// ResumeWindow is how many of a match's latest events its grain keeps in
	// memory for resumes and resyncs (default 64, about 15 intents). A
	// hello that resumes from further back gets its events rebuilt from the
	// durable log; a resync from further back gets a snapshot
	// (docs/protocol.md §4). Kept whole, the events of a long match were
	// most of a grain's memory.
	ResumeWindow int
	// IdleStop stops the activation of a finished match after this long without requests (default 1 min).
	IdleStop time.Duration
	// BotThink is how long a bot seat waits after its decision starts before
	// it acts (default 1 s). A bot never waits more than half of
	// DecisionTime, so it never spends its bank.
	BotThink time.Duration
}

// DefaultTiming returns the protocol's default durations.
func DefaultTiming() Timing {
	return Timing{
		DecisionTime:   90 * time.Second,
		BankTime:       5 * time.Minute,
		AbsenceTimeout: 5 * time.Minute,
		ClockInterval:  5 * time.Second,
		SeatKeepAlive:  2 * time.Second,
		SnapshotEvery:  32,
		ResumeWindow:   64,
		IdleStop:       time.Minute,
		BotThink:       time.Second,
	}
}

// botThink is the think time a bot actually takes: BotThink, at most half
// of DecisionTime.
func (t Timing) botThink() time.Duration {
	return min(t.BotThink, t.DecisionTime/2)
}

// Validate reports the first setting that cannot work.
func (t Timing) Validate() error {
	switch {
	case t.DecisionTime <= 0:
		return errors.New("decision-time must be positive")
	case t.BankTime < 0:
		return errors.New("bank-time must not be negative")
	case t.AbsenceTimeout <= 0:
		return errors.New("absence-timeout must be positive")
	case t.ClockInterval <= 0:
		return errors.New("clock-interval must be positive")
	case t.SeatKeepAlive <= 0:
		return errors.New("seat-keepalive must be positive")
	case t.SnapshotEvery <= 0:
		return errors.New("snapshot-every must be positive")
	case t.ResumeWindow <= 0:
		return errors.New("resume-window must be positive")
	case t.IdleStop <= 0:
		return errors.New("idle-stop must be positive")
	case t.BotThink < 0:
		return errors.New("bot-think must not be negative")
	}
	return nil
}
