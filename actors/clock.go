package actors

import "github.com/matchgrain/matchgrain/protocol"

// decisionClock is the decision clock of docs/protocol.md §5 and §9.9-§9.10. All
// times are Unix milliseconds taken from the command log, so a replay
// rebuilds the same clock.
type decisionClock struct {
	// Decider is the seat whose decision runs; -1 once the match ended.
	Decider int
	// Start is when the current decision started.
	Start int64
	// Bank is each seat's remaining bank at Start.
	Bank [2]int64
	// Awaiting marks the guest seats (matchMeta.Guests) that have not
	// attached yet: while one has not, the clock is held, so nobody's time
	// runs before both players are there (docs/protocol.md §9, point 9).
	Awaiting [2]bool `msgpack:",omitempty"`
}

// newDecisionClock starts the first decision at the match's creation, or
// holds it until every guest seat has attached once.
func newDecisionClock(decider int, createdAt int64, guests [2]bool, t Timing) decisionClock {
	b := t.BankTime.Milliseconds()
	return decisionClock{Decider: decider, Start: createdAt, Bank: [2]int64{b, b}, Awaiting: guests}
}

// held reports whether the clock waits for a guest's first attach.
func (c *decisionClock) held() bool { return c.Awaiting[0] || c.Awaiting[1] }

// joined records seat's first attach at now; the last awaited guest's
// arrival starts the current decision afresh.
func (c *decisionClock) joined(seat int, now int64) {
	if !c.Awaiting[seat] {
		return
	}
	c.Awaiting[seat] = false
	if !c.held() && c.Decider >= 0 {
		c.Start = now
	}
}

// deadline is when the free time of the current decision runs out.
func (c *decisionClock) deadline(t Timing) int64 {
	return c.Start + t.DecisionTime.Milliseconds()
}

// timeoutAt is when the decider loses on time; 0 when the clock is stopped
// or held.
func (c *decisionClock) timeoutAt(t Timing) int64 {
	if c.Decider < 0 || c.held() {
		return 0
	}
	return c.deadline(t) + c.Bank[c.Decider]
}

// restart settles the overtime of the decision that ends at now (it comes out
// of that decider's bank) and starts the next decision for decider. Every
// accepted intent restarts the clock, also when the decider stays the same.
func (c *decisionClock) restart(decider int, now int64, t Timing) {
	c.settle(now, t)
	c.Decider = decider
	c.Start = now
}

// stop settles the running decision and stops the clock for good.
func (c *decisionClock) stop(now int64, t Timing) {
	c.settle(now, t)
	c.Decider = -1
}

func (c *decisionClock) settle(now int64, t Timing) {
	if c.Decider < 0 || c.held() {
		return
	}
	if over := now - c.deadline(t); over > 0 {
		c.Bank[c.Decider] = max(0, c.Bank[c.Decider]-over)
	}
}

// view renders the clock at now: banks are what is left at that instant.
func (c *decisionClock) view(now int64, t Timing) protocol.ClockView {
	v := protocol.ClockView{DecisionPlayer: c.Decider, Bank0Ms: c.Bank[0], Bank1Ms: c.Bank[1], ServerTimeMs: now}
	if c.Decider < 0 {
		v.DecisionPlayer = -1
		return v
	}
	if c.held() {
		return v // the decider is named, no deadline runs
	}
	v.IsRunning = true
	v.TurnDeadlineMs = c.deadline(t)
	if over := now - v.TurnDeadlineMs; over > 0 {
		left := max(0, c.Bank[c.Decider]-over)
		if c.Decider == 0 {
			v.Bank0Ms = left
		} else {
			v.Bank1Ms = left
		}
	}
	return v
}

// absence tracks, per seat, since when it has had no transport (0: present).
// Both seats are absent from the match's creation until they first connect
// (docs/protocol.md §9.9).
type absence struct {
	Since [2]int64
}

// due returns who loses for absence at now: a seat index, -1 for a draw (both
// passed the timeout at the same instant), and whether anyone is due at all.
// When both are past the timeout the one who passed it first loses.
func (a *absence) due(now int64, t Timing) (loser int, ok bool) {
	limit := t.AbsenceTimeout.Milliseconds()
	var at [2]int64
	for s := range 2 {
		if a.Since[s] == 0 {
			at[s] = -1
			continue
		}
		at[s] = a.Since[s] + limit
	}
	d0 := at[0] >= 0 && at[0] <= now
	d1 := at[1] >= 0 && at[1] <= now
	switch {
	case d0 && d1 && at[0] == at[1]:
		return -1, true
	case d0 && (!d1 || at[0] < at[1]):
		return 0, true
	case d1:
		return 1, true
	}
	return 0, false
}

// next returns the earliest future absence deadline, or 0 if none.
func (a *absence) next(t Timing) int64 {
	var best int64
	for s := range 2 {
		if a.Since[s] == 0 {
			continue
		}
		at := a.Since[s] + t.AbsenceTimeout.Milliseconds()
		if best == 0 || at < best {
			best = at
		}
	}
	return best
}
