package bots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

// MatchOptions says how PlayMatch creates and plays a match.
type MatchOptions struct {
	// GameAddr is where the bots connect: ws://HOST:PORT/game or tcp://HOST:PORT.
	GameAddr string
	// Fallback are other members' game addresses, where a bot's session
	// goes when its connection is lost (client.Config.Fallback).
	Fallback []string
	// Decks are the players' deck ids; Seed the engine seed (nil: the server picks).
	Decks [2]string
	Seed  *uint64
	// BotSeed seeds the bots' choices, so a run can be repeated.
	BotSeed uint64
	// Timeout bounds the whole match.
	Timeout time.Duration
	// KillEvery makes each bot drop its connection after every N intents (chaos).
	KillEvery int
	// Chaos makes each bot drop its connection at random, mostly right after
	// SelectTrigger, ResolveAbility(accept) and FinishMulligan.
	Chaos bool
	// Verify asks for a full snapshot after every batch and at the end, and
	// fails the match if the bots' Boards (their whole views) differ from
	// them. Without it the bots play from events alone.
	Verify bool
	// Think pauses before each decision, to follow a match live.
	Think time.Duration
	// Logger receives connection events; Logf, if set, the readable running
	// log, with every public event when Narrate is set.
	Logger  *slog.Logger
	Logf    func(format string, args ...any)
	Narrate bool
	// Stats, if set, collects intent latencies.
	Stats *Stats
	// Rate, if positive, plays the match open-loop: Rate intents per second
	// offered at fixed ticks with a random phase (see pacer); 0 plays as
	// fast as the bots decide (closed loop).
	Rate float64
	// Connected, if set, is called once both seats are connected, before
	// play starts (a load tool ramps up by it).
	Connected func()
	// Created, if set, is called with the match's id as soon as it exists.
	Created func(matchID string)
	// Route, if set, picks the game address the match's sessions connect
	// to, once the match exists (a cluster workload sends them to a member
	// that does not own the match); GameAddr is not used then.
	Route func(ctx context.Context, matchID string) (string, error)
	// Nudge, if set, makes an open-loop match tick once more at the moment
	// it is closed, whatever its phase: a failover workload closes it at
	// the kill, so that every match has its next intent on the way at once
	// instead of up to 1/Rate later.
	Nudge <-chan struct{}
	// ConnectionRate caps the intents per second each bot sends (0:
	// DefaultConnectionRate, under the server's default limit of 16;
	// negative: no cap, for a server started with a higher
	// --intents-per-second, as a closed-loop capacity test needs).
	ConnectionRate float64
	// Spectators is how many spectator sessions follow the match from the
	// moment both seats are connected (docs/protocol.md §14). Each takes in
	// every frame, and a match played to its end fails unless every
	// spectator saw its last event.
	Spectators int
}

// minGap is the least time between two intents of a bot sending at most
// rate per second (see MatchOptions.ConnectionRate).
func minGap(rate float64) time.Duration {
	switch {
	case rate < 0:
		return 0
	case rate == 0:
		rate = DefaultConnectionRate
	}
	return time.Duration(float64(time.Second) / rate)
}

// MatchRun is one match played by two bots.
type MatchRun struct {
	ID      string
	Results [2]Result
}

// PlayMatch creates a match through admin and plays it to the end with two
// bots, then verifies what they saw (Verify).
func PlayMatch(ctx context.Context, admin *client.Admin, o MatchOptions) (MatchRun, error) {
	log, logf, narrate, st, botSeed, seed := o.Logger, o.Logf, o.Narrate, o.Stats, o.BotSeed, o.Seed
	if log == nil {
		log = slog.Default()
	}
	if st == nil {
		st = &Stats{}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	players := [2]client.PlayerSpec{{Name: "Bot A", Deck: o.Decks[0]}, {Name: "Bot B", Deck: o.Decks[1]}}
	id, err := admin.CreateMatch(ctx, players, seed)
	if err != nil {
		return MatchRun{}, fmt.Errorf("create match: %w", err)
	}
	mr := MatchRun{ID: id}
	if o.Created != nil {
		o.Created(id)
	}
	if o.Route != nil {
		if o.GameAddr, err = o.Route(ctx, id); err != nil {
			return mr, fmt.Errorf("match %s: route: %w", id, err)
		}
	}
	if logf != nil {
		s := "server's choice"
		if seed != nil {
			s = strconv.FormatUint(*seed, 10)
		}
		logf("match %s: %s (%s) vs %s (%s), seed %s, %s", id, players[0].Name, o.Decks[0], players[1].Name, o.Decks[1], s, o.GameAddr)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var sessions [2]*client.Session
	for seat := range 2 {
		s, err := client.Start(ctx, client.Config{
			Addr:        o.GameAddr,
			Fallback:    o.Fallback,
			Ticket:      admin.TicketFunc(id, seat),
			ClientBuild: "matchgrain-bot",
			MaxAttempts: -1,
			Logger:      log.With("seat", seat),
			// Timed on the session's reader, as the result arrives: a bot
			// handles its frames on a goroutine of its own, and the wait
			// for that goroutine to run is the load tool's, not the
			// server's (on a busy machine, milliseconds at the tail).
			OnIntentResult: func(r *protocol.ServerIntentResult, roundTrip time.Duration) {
				st.add(seat, r, roundTrip)
			},
			OnReconnect: st.Reconnected,
		})
		if err != nil {
			for _, prev := range sessions[:seat] {
				prev.Close()
			}
			return mr, fmt.Errorf("match %s seat %d: connect: %w", id, seat, err)
		}
		sessions[seat] = s
	}
	spectators, err := startSpectators(ctx, admin, o, id, o.Spectators, st, log)
	if err != nil {
		for _, s := range sessions {
			s.Close()
		}
		return mr, err
	}
	defer func() {
		for _, sp := range spectators {
			sp.leave(log)
		}
	}()
	if o.Connected != nil {
		o.Connected()
	}
	defer func() {
		for _, s := range sessions {
			leaveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.Leave(leaveCtx, "match over"); err != nil {
				log.Debug("leave", "err", err)
			}
			cancel()
		}
	}()
	var pace *pacer
	if o.Rate > 0 {
		pace = newPacer(o.Rate, st)
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go pace.run(pctx, o.Nudge)
	}
	var wg sync.WaitGroup
	var errs [2]error
	for seat := range 2 {
		b := &bot{
			name:       players[seat].Name,
			s:          sessions[seat],
			rng:        rand.New(rand.NewPCG(botSeed, uint64(seat))),
			logf:       logf,
			narrate:    narrate && seat == 0, // one narrator: P0 sees every public event
			announce:   narrate,
			killEvery:  o.KillEvery,
			chaos:      o.Chaos,
			verify:     o.Verify,
			think:      o.Think,
			minGap:     minGap(o.ConnectionRate),
			pace:       pace,
			ctx:        ctx,
			stallAfter: stallTimeout(pace, o.Think),
			stats:      st,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mr.Results[seat], errs[seat] = b.play(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return mr, fmt.Errorf("match %s: %w", id, err)
	}
	if err := Verify(mr); err != nil {
		return mr, err
	}
	if f := mr.Results[0].Final; f != nil && len(spectators) > 0 {
		return mr, awaitSpectators(ctx, id, spectators, f.EventSeq)
	}
	return mr, nil
}

// Verify checks what the bots saw against each other and the server.
func Verify(mr MatchRun) error {
	var problems []string
	a, b := mr.Results[0].Final, mr.Results[1].Final
	if a.Winner != b.Winner || a.EventSeq != b.EventSeq {
		problems = append(problems, fmt.Sprintf("seats disagree: winner %d/%d, eventSeq %d/%d", a.Winner, b.Winner, a.EventSeq, b.EventSeq))
	}
	for seat, r := range mr.Results {
		for _, m := range r.Mismatches {
			problems = append(problems, fmt.Sprintf("P%d local view: %s", seat, m))
		}
		for _, m := range r.ViewMismatches {
			problems = append(problems, fmt.Sprintf("P%d whole view: %s", seat, m))
		}
		fresh := client.BoardFromView(r.Final)
		if d := r.Board.Diff(fresh); len(d) > 0 {
			problems = append(problems, fmt.Sprintf("P%d final board differs from the fresh snapshot: %s", seat, strings.Join(d, "; ")))
		}
		if r.EventComplete && r.Final.EventSeq == r.Board.EventSeq {
			if d := r.Board.ViewDiff(r.Final); len(d) > 0 {
				problems = append(problems, fmt.Sprintf("P%d final view differs from the final state: %s", seat, strings.Join(d, "; ")))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("match %s: verification failed:\n  %s", mr.ID, strings.Join(problems, "\n  "))
	}
	return nil
}
