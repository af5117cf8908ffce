package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/protocol"
)

// Failover workload defaults.
const (
	DefaultFailoverMatches  = 3000
	DefaultFailoverRate     = 0.2
	DefaultFailoverSettle   = 10 * time.Second
	DefaultFailoverPatience = 60 * time.Second
)

// FailoverMember is one matchd process of the cluster a failover run
// plays on and may kill.
type FailoverMember struct {
	// Server is its HTTP base URL ("http://127.0.0.1:8080"): admin API,
	// tickets, and ws://…/game for the bots.
	Server string
	// PID is its process, signalled with SIGKILL if it owns the most matches.
	PID int
}

// FailoverConfig is one run of RunFailover.
type FailoverConfig struct {
	// Members are the cluster's members (at least 2); match i is created
	// through member i mod len and its sessions connect there, so the
	// sessions are spread over the members as a load balancer spreads them.
	Members []FailoverMember
	// Token is the admin bearer token every member accepts.
	Token string
	// Match is the template of every match (Decks, Seed, Timeout, Logger;
	// RunFailover sets the rest).
	Match   bots.MatchOptions
	BotSeed uint64
	// Matches in play at the kill (default DefaultFailoverMatches); Rate is
	// each match's open-loop intents per second (default 0.2, a human pace).
	Matches int
	Rate    float64
	// Settle is how long every match plays once all are connected, before
	// the kill (default 10 s). Patience is how long after the kill a match
	// may take to answer before it counts as never answering (default 60 s).
	Settle, Patience time.Duration
	// Kill kills the process pid (default: SIGKILL).
	Kill func(pid int) error
	// DatabasePID, on Linux, is the PostgreSQL postmaster whose CPU during
	// the herd the report adds (0: none).
	DatabasePID int
	// Progress, if set, gets a progress line every second.
	Progress io.Writer
}

// Validate checks c and fills in its defaults.
func (c *FailoverConfig) Validate() error {
	switch {
	case len(c.Members) < 2:
		return fmt.Errorf("%w: a failover needs at least 2 members, got %d", ErrConfig, len(c.Members))
	case c.Matches < 0 || c.Rate < 0 || c.Settle < 0 || c.Patience < 0:
		return fmt.Errorf("%w: failover matches, rate and durations must not be negative", ErrConfig)
	}
	for i, m := range c.Members {
		if m.Server == "" || m.PID <= 0 {
			return fmt.Errorf("%w: member %d needs a server URL and a pid", ErrConfig, i)
		}
	}
	if c.Matches == 0 {
		c.Matches = DefaultFailoverMatches
	}
	if c.Rate == 0 {
		c.Rate = DefaultFailoverRate
	}
	if c.Settle == 0 {
		c.Settle = DefaultFailoverSettle
	}
	if c.Patience == 0 {
		c.Patience = DefaultFailoverPatience
	}
	if c.Kill == nil {
		c.Kill = func(pid int) error {
			p, err := os.FindProcess(pid)
			if err != nil {
				return err
			}
			return p.Kill()
		}
	}
	return nil
}

// FailoverReport is the result of RunFailover (matchctl load --failover
// --json prints it as is).
type FailoverReport struct {
	Members int     `json:"members"`
	Matches int     `json:"matches"`
	Rate    float64 `json:"ratePerMatch"`
	// Victim is the member killed, Owned how many matches each member
	// owned just before the kill (by member id).
	Victim string         `json:"victim"`
	Owned  map[string]int `json:"owned"`
	// KilledAt is when the kill was sent: the members' logs say when each
	// phase of the failover happened after it.
	KilledAt time.Time `json:"killedAt"`
	// Affected are the matches the victim owned; Answered of them had an
	// intent accepted again within the patience, Never did not.
	Affected int `json:"affected"`
	Answered int `json:"answered"`
	Never    int `json:"never"`
	// Lost counts acknowledged intents the cluster no longer knew after
	// the failover: the last intent each affected match had acknowledged
	// before the kill, re-sent with its intentId, must come back as a
	// duplicate at the same eventSeq. Unchecked could not be re-sent (the
	// match had no acknowledged intent, or the re-send got no answer).
	Lost      int `json:"lost"`
	Unchecked int `json:"unchecked"`
	// FailoverMs: per affected match, from the kill to its first accepted
	// intent again.
	FailoverMs struct {
		P50 float64 `json:"p50"`
		P90 float64 `json:"p90"`
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"failoverMs"`
	// Slowest are the affected matches that took longest (at most 5, the
	// never answered first): where to start reading the members' logs.
	Slowest []SlowMatch `json:"slowest,omitempty"`
	// Paths splits the answered matches by the way back their players
	// took: sessions on the killed member reconnect; sessions on a
	// survivor follow their grain to the same member or across to another.
	Paths []FailoverPath `json:"paths,omitempty"`
	// Reconnects are the reconnects, after the kill, of the affected
	// matches' sessions (those whose connections were on the killed
	// member), phase by phase: where the "reconnected" path's time goes
	// on the clients' side. Nil when there were none.
	Reconnects *ReconnectPhases `json:"reconnects,omitempty"`
	// ClaimsPerSecond is Answered over the time from the kill to the last
	// of them: how fast the survivors brought the herd back.
	ClaimsPerSecond float64 `json:"claimsPerSecond"`
	// Machine is this machine from the kill to the last answer (the
	// database's share with DatabasePID).
	Machine *MachineUsage `json:"machine,omitempty"`
	// SurvivorCPUMsPerMatch is the survivors' CPU from the kill to the
	// last answer, per match answered: the work the herd cost them, less
	// noisy than its latency on a machine whose cores it fills.
	SurvivorCPUMsPerMatch float64 `json:"survivorCpuMsPerMatch,omitempty"`
	Errors                int     `json:"errors"`
	FirstError            string  `json:"firstError,omitempty"`
}

// WriteText writes the report for a person to read; its last line is the
// one scripts read: failover: affected=N p50=Xms p99=Yms max=Zms never=N lost=N.
func (r *FailoverReport) WriteText(out io.Writer) {
	fmt.Fprintf(out, "failover: %d members, %d matches at %g intents/s each; killed %s, which owned %d (owners: %v)\n",
		r.Members, r.Matches, r.Rate, r.Victim, r.Affected, r.Owned)
	fmt.Fprintf(out, "answered again: %d of %d, %.0f matches/s; p90 %.0f ms; %d acknowledged intents re-sent, %d not checked\n",
		r.Answered, r.Affected, r.ClaimsPerSecond, r.FailoverMs.P90, r.Affected-r.Unchecked, r.Unchecked)
	if m := r.Machine; m != nil {
		fmt.Fprintf(out, "machine during the herd: %.2f of %d cores busy, %.2f of them this load generator", m.BusyCores, m.CPUs, m.LoadGeneratorCores)
		if m.DatabaseCores != nil {
			fmt.Fprintf(out, ", %.2f the database", *m.DatabaseCores)
		}
		if m.ServerCores != nil {
			fmt.Fprintf(out, ", %.2f the survivors (%.2f ms of their CPU per match answered)", *m.ServerCores, r.SurvivorCPUMsPerMatch)
		}
		fmt.Fprintln(out)
	}
	for _, p := range r.Paths {
		fmt.Fprintf(out, "path %q: %d matches, p50 %.0f ms, p99 %.0f ms\n", p.Path, p.Answered, p.P50, p.P99)
	}
	if rp := r.Reconnects; rp != nil {
		fmt.Fprintf(out, "reconnects: %d sessions (%d needed more than one attempt, %d came back with a resume ticket); "+
			"p50/p99 ms: loss seen %.0f/%.0f after the kill, "+
			"ticket %.0f/%.0f, dial %.0f/%.0f, hello %.0f/%.0f, back %.0f/%.0f after the kill\n",
			rp.Sessions, rp.Retried, rp.Resumed, rp.LostMs.P50, rp.LostMs.P99, rp.TicketMs.P50, rp.TicketMs.P99,
			rp.DialMs.P50, rp.DialMs.P99, rp.HelloMs.P50, rp.HelloMs.P99, rp.BackMs.P50, rp.BackMs.P99)
	}
	for _, m := range r.Slowest {
		fmt.Fprintf(out, "slow: match %s, sessions on member %d: %.0f ms (0: never)\n", m.MatchID, m.Member, m.Ms)
	}
	if r.FirstError != "" {
		fmt.Fprintf(out, "errors: %d; first: %s\n", r.Errors, r.FirstError)
	}
	fmt.Fprintln(out, r.Line())
}

// Line is the report's summary line, fixed for scripts.
func (r *FailoverReport) Line() string {
	return fmt.Sprintf("failover: affected=%d p50=%.0fms p99=%.0fms max=%.0fms never=%d lost=%d",
		r.Affected, r.FailoverMs.P50, r.FailoverMs.P99, r.FailoverMs.Max, r.Never, r.Lost)
}

// FailoverPath is one of FailoverReport.Paths.
type FailoverPath struct {
	Path     string  `json:"path"`
	Answered int     `json:"answered"`
	P50      float64 `json:"p50"`
	P99      float64 `json:"p99"`
}

// The paths of FailoverReport.Paths.
const (
	PathReconnected = "reconnected"        // sessions on the killed member
	PathSameMember  = "grain came to them" // sessions on the member that took the match
	PathAcross      = "grain went across"  // sessions on another survivor
)

// failoverPaths splits the answer times of affected by path; owners are
// their owners after the failover (member ids, ids[i] that of member i).
func failoverPaths(affected []*failoverSlot, owners, ids []string, victim int) []FailoverPath {
	by := map[string][]time.Duration{}
	for i, sl := range affected {
		d := sl.answeredAfter()
		if d <= 0 {
			continue
		}
		path := PathAcross
		switch {
		case sl.member == victim:
			path = PathReconnected
		case owners[i] == ids[sl.member]:
			path = PathSameMember
		}
		by[path] = append(by[path], d)
	}
	var paths []FailoverPath
	for _, p := range []string{PathSameMember, PathAcross, PathReconnected} {
		ts := by[p]
		if len(ts) == 0 {
			continue
		}
		sp := msSpread(ts)
		paths = append(paths, FailoverPath{Path: p, Answered: len(ts), P50: sp.P50, P99: sp.P99})
	}
	return paths
}

// ReconnectPhases is FailoverReport.Reconnects: client.Reconnect over the
// sessions that reconnected, each phase's p50 and p99 in milliseconds.
type ReconnectPhases struct {
	Sessions int `json:"sessions"`
	// Retried needed more than one connection attempt (their failed
	// attempts and backoff waits are in BackMs, not in the phases).
	Retried int `json:"retried"`
	// Resumed came back with the lost connection's resume ticket
	// (client.Reconnect.ResumeTicket): their ticket phase is nearly nil.
	Resumed int `json:"resumed"`
	// LostMs: from the kill to the session seeing its connection end.
	LostMs MsSpread `json:"lostMs"`
	// TicketMs, DialMs and HelloMs: the successful attempt's phases.
	TicketMs MsSpread `json:"ticketMs"`
	DialMs   MsSpread `json:"dialMs"`
	HelloMs  MsSpread `json:"helloMs"`
	// BackMs: from the kill to the new connection's ServerHello.
	BackMs MsSpread `json:"backMs"`
}

// MsSpread is a p50 and a p99 in milliseconds.
type MsSpread struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// reconnectPhases summarizes the reconnects of affected after killAt; nil
// if there were none.
func reconnectPhases(affected []*failoverSlot, killAt time.Time) *ReconnectPhases {
	var lost, ticket, dial, hello, back []time.Duration
	retried, resumed := 0, 0
	for _, sl := range affected {
		sl.mu.Lock()
		for _, r := range sl.reconnects {
			if r.Lost.Before(killAt) {
				continue
			}
			lost, back = append(lost, r.Lost.Sub(killAt)), append(back, r.Done.Sub(killAt))
			ticket, dial, hello = append(ticket, r.Ticket), append(dial, r.Dial), append(hello, r.Hello)
			if r.Attempts > 1 {
				retried++
			}
			if r.ResumeTicket {
				resumed++
			}
		}
		sl.mu.Unlock()
	}
	if len(lost) == 0 {
		return nil
	}
	return &ReconnectPhases{Sessions: len(lost), Retried: retried, Resumed: resumed, LostMs: msSpread(lost), TicketMs: msSpread(ticket),
		DialMs: msSpread(dial), HelloMs: msSpread(hello), BackMs: msSpread(back)}
}

// msSpread sorts ds and returns its p50 and p99.
func msSpread(ds []time.Duration) MsSpread {
	slices.Sort(ds)
	return MsSpread{P50: ms(Percentile(ds, 50)), P99: ms(Percentile(ds, 99))}
}

// SlowMatch is one of FailoverReport.Slowest.
type SlowMatch struct {
	MatchID string `json:"matchId"`
	// Ms from the kill to its first accepted intent; 0: never.
	Ms float64 `json:"ms"`
	// Member is the index of the member its sessions first connected to.
	Member int `json:"member"`
}

// acked is an intent whose accepted result a match's bot read.
type acked struct {
	seat     int
	intentID string
	eventSeq int64
}

// failoverSlot is one of the matches in play: the current match of its
// slot (a match that ends before the kill is replaced) and what the kill
// did to it.
type failoverSlot struct {
	member int // the member its sessions and admin calls go to first
	// nudge is closed at the kill if the slot's match was on the killed
	// member, so that it sends at once instead of at its next tick; the
	// other matches keep their pace (nudging them too added a burst of
	// intents that no player would send at the survivors' busiest moment).
	nudge chan struct{}

	mu       sync.Mutex
	matchID  string
	lastAck  acked         // the last accepted intent before the kill
	answered time.Duration // kill → first accepted intent after it; 0: not yet
	// reconnects are its sessions' reconnects (client.Reconnect), kept
	// once the kill has come.
	reconnects []client.Reconnect
}

// RunFailover plays c.Matches matches on the cluster at c.Rate, kills the
// member that owns the most of them, and measures how long each of its
// matches takes to accept an intent again. It returns the report also
// when matches failed.
func RunFailover(ctx context.Context, c FailoverConfig) (*FailoverReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	servers := make([]string, len(c.Members))
	for i, m := range c.Members {
		servers[i] = m.Server
	}
	ids, err := memberIDs(ctx, servers, c.Token)
	if err != nil {
		return nil, err
	}
	n := len(c.Members)
	var killed atomic.Int32 // the killed member's index, for failoverTransport
	killed.Store(-1)
	admins := make([]*client.Admin, n)
	games := make([]string, n)
	for i, m := range c.Members {
		admins[i] = client.NewAdmin(m.Server, c.Token, &http.Client{Timeout: 10 * time.Second, Transport: failoverTransport(c.Members, i, &killed)})
		games[i] = gameAddr(m.Server)
	}

	var killAt atomic.Pointer[time.Time]
	slots := make([]*failoverSlot, c.Matches)
	var connected atomic.Int64
	var mu sync.Mutex
	var failures []error
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	starting := make(chan struct{}, StartAtOnce)
	var wg sync.WaitGroup
	for i := range slots {
		sl := &failoverSlot{member: i % n, nudge: make(chan struct{})}
		slots[i] = sl
		var counted sync.Once // the slot's first match connected, or failed trying
		count := func() { counted.Do(func() { connected.Add(1) }) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer count()
			for k := uint64(0); runCtx.Err() == nil && killAt.Load() == nil; k++ {
				o := c.Match
				o.GameAddr = games[sl.member]
				o.Fallback = nil
				for j := 1; j < n; j++ {
					o.Fallback = append(o.Fallback, games[(sl.member+j)%n])
				}
				o.BotSeed = c.BotSeed + uint64(i)*2654435761 + k
				o.Rate, o.ConnectionRate, o.Nudge = c.Rate, 0, sl.nudge
				if o.Timeout <= 0 {
					o.Timeout = 24 * time.Hour // a match at a human pace outlasts PlayMatch's default
				}
				o.Created = func(id string) {
					sl.mu.Lock()
					sl.matchID, sl.lastAck = id, acked{}
					sl.mu.Unlock()
				}
				o.Stats = &bots.Stats{
					Observe:     func(ob bots.Observation) { sl.observe(ob, killAt.Load()) },
					Reconnected: func(r client.Reconnect) { sl.reconnected(r, killAt.Load()) },
				}
				release, ok := startSlot(runCtx, starting)
				if !ok {
					return
				}
				o.Connected = func() {
					release()
					count()
				}
				_, err := bots.PlayMatch(runCtx, admins[sl.member], o)
				release()
				if err != nil && runCtx.Err() == nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
			}
		}()
	}

	// Every match connected, then Settle of play.
	progress := func(format string, args ...any) {
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, format+"\n", args...)
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for connected.Load() < int64(c.Matches) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			progress("connecting: %d of %d matches", connected.Load(), c.Matches)
		}
	}
	progress("all %d matches playing; the kill comes in %v", c.Matches, c.Settle)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(c.Settle):
	}

	// Who owns what, from the store's rows (read through a member).
	rep := &FailoverReport{Members: n, Matches: c.Matches, Rate: c.Rate, Owned: map[string]int{}}
	owners, err := matchOwners(ctx, c.Members[0].Server, c.Token, slots)
	if err != nil {
		return nil, err
	}
	for _, o := range owners {
		rep.Owned[o]++
	}
	victim := -1
	for i, id := range ids {
		if victim < 0 || rep.Owned[id] > rep.Owned[ids[victim]] {
			victim = i
		}
	}
	rep.Victim = ids[victim]
	var affected []*failoverSlot
	for i, sl := range slots {
		if owners[i] == rep.Victim {
			affected = append(affected, sl)
		}
	}
	rep.Affected = len(affected)

	var survivors []int
	for i, m := range c.Members {
		if i != victim {
			survivors = append(survivors, m.PID)
		}
	}
	machine := machineWatch{dbPID: c.DatabasePID, serverPIDs: survivors}
	machine.markStart()
	now := time.Now()
	killAt.Store(&now)
	rep.KilledAt = now
	killed.Store(int32(victim))
	if err := c.Kill(c.Members[victim].PID); err != nil {
		return nil, fmt.Errorf("kill member %s (pid %d): %w", rep.Victim, c.Members[victim].PID, err)
	}
	for _, sl := range affected {
		close(sl.nudge)
	}
	progress("killed %s (pid %d) at %s, owner of %d matches", rep.Victim, c.Members[victim].PID, now.UTC().Format(time.RFC3339Nano), len(affected))

	deadline := time.NewTimer(c.Patience)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	var last time.Duration
wait:
	for {
		answered := 0
		for _, sl := range affected {
			if d := sl.answeredAfter(); d > 0 {
				answered++
				last = max(last, d)
			}
		}
		rep.Answered = answered
		if answered == len(affected) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			break wait
		case <-poll.C:
		case <-tick.C:
			progress("%5.1fs after the kill: %d of %d answered", time.Since(now).Seconds(), answered, len(affected))
		}
	}
	machine.markEnd()
	rep.Machine = machine.usage()
	if cpu := machine.serverCPU(); cpu > 0 && rep.Answered > 0 {
		rep.SurvivorCPUMsPerMatch = ms(cpu) / float64(rep.Answered)
	}
	rep.Never = rep.Affected - rep.Answered
	var times []time.Duration
	for _, sl := range affected {
		if d := sl.answeredAfter(); d > 0 {
			times = append(times, d)
		}
	}
	slices.Sort(times)
	if len(times) > 0 {
		rep.FailoverMs.P50, rep.FailoverMs.P90 = ms(Percentile(times, 50)), ms(Percentile(times, 90))
		// The maximum is rounded like the percentiles, or a p99 that is the
		// maximum reads above it.
		rep.FailoverMs.P99, rep.FailoverMs.Max = ms(Percentile(times, 99)), ms(Percentile(times, 100))
	}
	if last > 0 {
		rep.ClaimsPerSecond = float64(rep.Answered) / last.Seconds()
	}
	rep.Slowest = slowest(affected, 5)
	rep.Reconnects = reconnectPhases(affected, now)
	survivor := (victim + 1) % n
	if after, err := matchOwners(ctx, c.Members[survivor].Server, c.Token, affected); err == nil {
		rep.Paths = failoverPaths(affected, after, ids, victim)
	} else {
		progress("owners after the failover: %v", err)
	}

	// The bots leave; then every affected match's last acknowledged
	// intent is re-sent on a fresh connection to a survivor.
	stopRun()
	wg.Wait()
	rep.Lost, rep.Unchecked = resendCheck(ctx, admins[survivor], games[survivor], affected)

	mu.Lock()
	defer mu.Unlock()
	rep.Errors = len(failures)
	if len(failures) > 0 {
		rep.FirstError = failures[0].Error()
		return rep, fmt.Errorf("%d matches failed: %w", len(failures), errors.Join(failures...))
	}
	return rep, nil
}

// slowest returns the n affected matches that answered last, the ones
// that never did first.
func slowest(affected []*failoverSlot, n int) []SlowMatch {
	var all []SlowMatch
	for _, sl := range affected {
		sl.mu.Lock()
		all = append(all, SlowMatch{MatchID: sl.matchID, Ms: ms(sl.answered), Member: sl.member})
		sl.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b SlowMatch) int {
		switch {
		case a.Ms == b.Ms:
			return 0
		case a.Ms == 0 || (b.Ms != 0 && a.Ms > b.Ms):
			return -1
		default:
			return 1
		}
	})
	return all[:min(n, len(all))]
}

// observe records an intent result of the slot's current match.
func (sl *failoverSlot) observe(o bots.Observation, killAt *time.Time) {
	if o.Tick || !o.Accepted {
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	switch {
	case killAt == nil || o.At.Before(*killAt):
		sl.lastAck = acked{seat: o.Seat, intentID: o.IntentID, eventSeq: o.EventSeq}
	case sl.answered == 0:
		sl.answered = max(o.At.Sub(*killAt), time.Nanosecond)
	}
}

// reconnected keeps a reconnect of the slot's sessions once the kill has
// come (before it, a slot has none to keep).
func (sl *failoverSlot) reconnected(r client.Reconnect, killAt *time.Time) {
	if killAt == nil {
		return
	}
	sl.mu.Lock()
	sl.reconnects = append(sl.reconnects, r)
	sl.mu.Unlock()
}

func (sl *failoverSlot) answeredAfter() time.Duration {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.answered
}

// memberIDs asks every member for its own id (GET /api/admin/cluster).
func memberIDs(ctx context.Context, servers []string, token string) ([]string, error) {
	ids := make([]string, len(servers))
	for i, server := range servers {
		var info struct {
			Members []struct {
				ID   string `json:"id"`
				Self bool   `json:"self"`
			} `json:"members"`
		}
		if err := getJSON(ctx, http.DefaultClient, server+"/api/admin/cluster", token, &info); err != nil {
			return nil, fmt.Errorf("member %d (%s): %w", i, server, err)
		}
		for _, mm := range info.Members {
			if mm.Self {
				ids[i] = mm.ID
			}
		}
		if ids[i] == "" {
			return nil, fmt.Errorf("member %d (%s) did not name itself in /api/admin/cluster", i, server)
		}
	}
	return ids, nil
}

// matchOwners reads each slot's current match's owner from the store's
// row (GET /api/admin/matches/{id}), a few at a time.
func matchOwners(ctx context.Context, server, token string, slots []*failoverSlot) ([]string, error) {
	owners := make([]string, len(slots))
	errs := make([]error, len(slots))
	var g errgroup.Group
	g.SetLimit(8)
	for i, sl := range slots {
		sl.mu.Lock()
		id := sl.matchID
		sl.mu.Unlock()
		if id == "" {
			continue
		}
		g.Go(func() error {
			var mi struct {
				Owner string `json:"owner"`
			}
			errs[i] = getJSON(ctx, http.DefaultClient, server+"/api/admin/matches/"+url.PathEscape(id), token, &mi)
			owners[i] = mi.Owner
			return nil // every error is kept, not only the first
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read match owners: %w", err)
	}
	return owners, nil
}

// getJSON GETs u with the admin token and decodes its JSON answer.
func getJSON(ctx context.Context, hc *http.Client, u, token string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// failoverTransport sends each request to members[first] and, when that
// member cannot be dialled (it was killed), to the next ones in turn: the
// admin calls of a match keep working after its member's death, as behind
// a load balancer. A request that is safe to repeat (repeatable) also moves
// on when its connection ended without an answer: a kept-alive connection
// to the killed member ends so, and a session's ticket failing that way
// cost it the client's whole second reconnect wait (2 s,
// docs/performance.md §3.4).
//
// Once the tool has killed a member (killed holds its index; -1 before),
// requests skip it: a game's backend mints the tickets of a reconnecting
// player, and it neither dies with a member nor asks the one its player
// just lost. Asking it first had cost every reconnecting session 1.2 s
// (p50; 2.1 s at most) in a dial the dying process's listener accepted
// while the kernel was still closing its thousands of sockets.
func failoverTransport(members []FailoverMember, first int, killed *atomic.Int32) http.RoundTripper {
	// Keep-alive connections enough for a herd: with the default transport's
	// two idle connections per member, each of thousands of reconnecting
	// sessions' ticket requests opened (and closed) a connection of its own,
	// on the cores the members need.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, 512
	hosts := make([]string, len(members))
	for j := range members {
		u, err := url.Parse(members[(first+j)%len(members)].Server)
		if err == nil {
			hosts[j] = u.Host
		}
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		var last error
		for j, h := range hosts {
			if int(killed.Load()) == (first+j)%len(members) {
				continue
			}
			r := req.Clone(req.Context())
			r.URL.Host, r.Host = h, ""
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
			resp, err := tr.RoundTrip(r)
			var op *net.OpError
			if err != nil && (errors.As(err, &op) && op.Op == "dial" || repeatable(req) && connectionEnded(err)) {
				last = err
				continue
			}
			return resp, err
		}
		return nil, last
	})
}

// repeatable reports whether req may be sent again to another member after
// its connection ended without an answer: reads, and tickets (single use; a
// ticket minted twice leaves one unused, which expires). Not a match's
// creation, which would leave a second match behind.
func repeatable(req *http.Request) bool {
	return req.Method == http.MethodGet || req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/api/game/tickets")
}

// connectionEnded reports whether err says the connection ended before an
// answer came: what a request on a kept-alive connection to a killed
// process gets.
func connectionEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resendCheck re-sends, for every affected match, the last intent it had
// acknowledged before the kill, with its intentId, on a fresh connection
// of the same seat: an intent the store kept comes back duplicate and
// accepted at its eventSeq; anything else is lost.
func resendCheck(ctx context.Context, admin *client.Admin, game string, affected []*failoverSlot) (lost, unchecked int) {
	var nLost, nUnchecked atomic.Int64
	var g errgroup.Group
	g.SetLimit(16)
	for _, sl := range affected {
		sl.mu.Lock()
		id, a := sl.matchID, sl.lastAck
		sl.mu.Unlock()
		if a.intentID == "" {
			nUnchecked.Add(1)
			continue
		}
		g.Go(func() error {
			res, err := resend(ctx, admin, game, id, a)
			switch {
			case err != nil:
				nUnchecked.Add(1)
			case !res.Accepted || !res.Duplicate || res.EventSeq != a.eventSeq:
				nLost.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait()
	return int(nLost.Load()), int(nUnchecked.Load())
}

// resend connects seat a.seat of the match and sends a.intentID again.
func resend(ctx context.Context, admin *client.Admin, game, matchID string, a acked) (*protocol.ServerIntentResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t, err := admin.Ticket(ctx, matchID, a.seat)
	if err != nil {
		return nil, err
	}
	conn, err := client.Dial(ctx, game, client.DialOptions{})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := conn.Send(&protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: t.Ticket, ClientBuild: "matchgrain-failover-check"}); err != nil {
		return nil, err
	}
	sent := false
	for {
		f, err := conn.Recv()
		if err != nil {
			return nil, err
		}
		switch f := f.(type) {
		case *protocol.ServerHello:
			if !sent {
				sent = true
				in := &protocol.ClientIntent{IntentID: a.intentID, BasedOnSeq: a.eventSeq, Intent: protocol.EndTurn{}}
				if err := conn.Send(in); err != nil {
					return nil, err
				}
			}
		case *protocol.ServerIntentResult:
			if f.IntentID == a.intentID {
				return f, nil
			}
		}
	}
}

// gameAddr is the WebSocket game address of the member at server.
func gameAddr(server string) string {
	return "ws://" + strings.TrimPrefix(strings.TrimPrefix(server, "http://"), "https://") + "/game"
}

// routeToOther sends a match's sessions to the member after its owner
// (members[i] has id ids[i]): never the owner, so every intent crosses
// from one member to another. A new match's owner is in its store row as
// soon as its creation woke it; a wake that failed leaves it empty, and
// the route asks again for a while.
func routeToOther(members, ids []string, token string) func(ctx context.Context, matchID string) (string, error) {
	return func(ctx context.Context, matchID string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for {
			var mi struct {
				Owner string `json:"owner"`
			}
			if err := getJSON(ctx, http.DefaultClient, members[0]+"/api/admin/matches/"+url.PathEscape(matchID), token, &mi); err != nil {
				return "", err
			}
			if i := slices.Index(ids, mi.Owner); i >= 0 {
				return gameAddr(members[(i+1)%len(members)]), nil
			}
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("no member of the cluster owns it (owner %q): %w", mi.Owner, ctx.Err())
			case <-time.After(100 * time.Millisecond): // polling the store's row
			}
		}
	}
}
