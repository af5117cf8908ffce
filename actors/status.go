package actors

// Inspect asks a match grain for its MatchStatus (the ops console, tests).
// It activates the grain like any request; it changes nothing.
type Inspect struct{}

// MatchStatus is what an operator may know about a running match: who plays,
// whose decision runs, the clocks and where the grain lives. It carries no
// hidden information (no hands, no deck order).
type MatchStatus struct {
	MatchID string    `json:"matchId"`
	Owner   string    `json:"owner"`
	Epoch   int64     `json:"epoch"`
	Names   [2]string `json:"names"`
	Decks   [2]string `json:"decks"`
	Bots    [2]bool   `json:"bots"`
	// Connected says which seats have a live attachment on this activation.
	Connected [2]bool `json:"connected"`
	CreatedAt int64   `json:"createdAt"`
	LogSeq    int64   `json:"logSeq"`
	EventSeq  int64   `json:"eventSeq"`
	Turn      int     `json:"turn"`
	// Decider is the seat whose decision runs, -1 once the match ended.
	Decider  int         `json:"decider"`
	Finished bool        `json:"finished"`
	Winner   int         `json:"winner"`
	Damage   [2]int      `json:"damage"`
	Clock    StatusClock `json:"clock"`
	// Spectators is how many spectators this activation has attached
	// (docs/protocol.md §14).
	Spectators int `json:"spectators"`
}

// StatusClock is the decision clock of a MatchStatus (protocol.ClockView
// with JSON names). Times are Unix milliseconds.
type StatusClock struct {
	DecisionPlayer int   `json:"decisionPlayer"`
	TurnDeadlineMs int64 `json:"turnDeadlineMs"`
	Bank0Ms        int64 `json:"bank0Ms"`
	Bank1Ms        int64 `json:"bank1Ms"`
	IsRunning      bool  `json:"isRunning"`
	ServerTimeMs   int64 `json:"serverTimeMs"`
}

func (g *Core) status() *MatchStatus {
	v := g.engine.View(0)
	st := &MatchStatus{
		MatchID: g.id, Owner: g.deps.Owner(), Epoch: g.epoch, Names: [2]string{g.name(0), g.name(1)}, Decks: g.meta.Decks,
		Bots: g.meta.Bots, CreatedAt: g.meta.CreatedAt, LogSeq: g.logSeq, EventSeq: g.engine.LastSeq(),
		Turn: v.TurnNumber, Decider: g.engine.Decider(), Finished: g.engine.IsFinished(), Winner: v.Winner,
		Clock: StatusClock(g.clock.view(g.now(), g.deps.Timing)),
	}
	st.Spectators = len(g.spectators)
	for s := range 2 {
		st.Connected[s] = g.seats[s] != nil
		st.Damage[s] = v.Players[s].FaceDownDamage + len(v.Players[s].FaceUpDamage)
	}
	if st.Finished {
		st.Decider = -1
	}
	return st
}
