package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
)

// ErrConfig wraps every error of Config.Validate and IdleConfig.Validate.
var ErrConfig = errors.New("invalid load configuration")

// StartAtOnce bounds the matches being created and connected at once, so
// that a thousand matches ramp up instead of timing out together on their
// creation.
const StartAtOnce = 32

// Config is one run of Run.
type Config struct {
	// Admin creates the matches and their tickets.
	Admin *client.Admin
	// Match is the template of every match: GameAddr, Decks, Seed,
	// Timeout, KillEvery, Think and Logger are used as they are; Run sets
	// BotSeed (from BotSeed below), Stats, Rate, ConnectionRate and
	// Connected.
	Match bots.MatchOptions
	// BotSeed seeds the bots' choices; match i's bots get a seed derived
	// from it, so a run can be repeated.
	BotSeed uint64
	// Matches is how many matches play at once with Duration; without it,
	// how many are played to the end, Concurrency at a time (default all).
	Matches, Concurrency int
	// Rate, if positive, makes the loop open: each match ticks Rate times a
	// second from a random phase. Zero is the closed loop. Rate needs
	// Duration and must not exceed ConnectionRate.
	Rate float64
	// ConnectionRate caps the intents per second each bot sends (a node
	// allows bots.DefaultConnectionRate by default); 0: no cap.
	ConnectionRate float64
	// Warmup runs before the measured window; Duration is the window, after
	// which every match is stopped (0: play Matches matches to the end).
	Warmup, Duration time.Duration
	// MetricsURL is the node's Prometheus endpoint ("" or "off": none).
	MetricsURL string
	// DatabasePID, on Linux, is a PostgreSQL postmaster on this machine
	// whose process tree's CPU in the window the report adds (0: none).
	DatabasePID int
	// Progress, if set, gets a progress line every second.
	Progress io.Writer
	// Cluster, if set, are the HTTP base URLs of every member of a cluster
	// (Admin's among them): each match's sessions connect to a member that
	// does not own the match, so that every intent makes the hop between
	// members, and the report's Node sums the members' figures (Members
	// has each one's; MetricsURL is not used). Token is the admin token
	// that reads each match's owner.
	Cluster []string
	Token   string
	// Spectators is how many spectator sessions follow each match
	// (bots.MatchOptions.Spectators): the report counts the frames they
	// took in, so a run with them and one without price a spectator.
	Spectators int
}

// Validate checks c and fills in its defaults.
func (c *Config) Validate() error {
	switch {
	case len(c.Cluster) == 1:
		return fmt.Errorf("%w: --cluster needs at least 2 members", ErrConfig)
	case c.Admin == nil:
		return fmt.Errorf("%w: no admin client", ErrConfig)
	case c.Spectators < 0:
		return fmt.Errorf("%w: --spectators must not be negative", ErrConfig)
	case c.DatabasePID < 0:
		return fmt.Errorf("%w: --database-pid must be a process id", ErrConfig)
	case c.Matches < 1:
		return fmt.Errorf("%w: --matches must be at least 1", ErrConfig)
	case c.ConnectionRate < 0:
		return fmt.Errorf("%w: --connection-rate must not be negative", ErrConfig)
	case c.Rate < 0 || (c.ConnectionRate > 0 && c.Rate > c.ConnectionRate):
		return fmt.Errorf("%w: --rate must be between 0 and --connection-rate (%g intents/s)", ErrConfig, c.ConnectionRate)
	case c.Warmup < 0 || c.Duration < 0:
		return fmt.Errorf("%w: --warmup and --duration must not be negative", ErrConfig)
	case c.Warmup > 0 && c.Duration == 0:
		return fmt.Errorf("%w: --warmup needs --duration", ErrConfig)
	case c.Rate > 0 && c.Duration == 0:
		return fmt.Errorf("%w: --rate needs --duration", ErrConfig)
	}
	if c.Concurrency <= 0 || c.Concurrency > c.Matches {
		c.Concurrency = c.Matches
	}
	return nil
}

// window records intent results and ticks between start and end; before
// start they are warm-up and only counted for the progress line.
type window struct {
	mu        sync.Mutex
	start     time.Time
	end       time.Time // zero: open
	lat       []time.Duration
	rejected  int
	ticks     int
	skipped   int
	secLat    []time.Duration // the current second, for progress
	secSkip   int
	totalSeen int
}

func (w *window) observe(o bots.Observation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := !o.At.Before(w.start) && (w.end.IsZero() || o.At.Before(w.end))
	if o.Tick {
		if o.Skipped {
			w.secSkip++
		}
		if in {
			w.ticks++
			if o.Skipped {
				w.skipped++
			}
		}
		return
	}
	w.totalSeen++
	w.secLat = append(w.secLat, o.Latency)
	if in {
		w.lat = append(w.lat, o.Latency)
		if !o.Accepted {
			w.rejected++
		}
	}
}

// second returns and resets the last second's latencies and skipped ticks.
func (w *window) second() ([]time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, s := w.secLat, w.secSkip
	w.secLat, w.secSkip = nil, 0
	return l, s
}

// Run plays the load c describes and returns its report, also when matches
// failed: then the error joins their failures. A match cut by the end of
// the window is no failure.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts := c.Match
	steady := c.Duration > 0
	began := time.Now()
	w := &window{start: began}
	if steady {
		w.start = began.Add(c.Warmup)
		w.end = w.start.Add(c.Duration)
	}
	st := &bots.Stats{Observe: w.observe}
	opts.Stats, opts.Rate, opts.ConnectionRate = st, c.Rate, c.ConnectionRate
	opts.Spectators = c.Spectators
	if c.ConnectionRate == 0 {
		opts.ConnectionRate = -1 // no cap
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if steady {
		var stopAt context.CancelFunc
		runCtx, stopAt = context.WithDeadline(runCtx, w.end)
		defer stopAt()
	}
	node := nodeWatches{newNodeWatch(c.MetricsURL)}
	if len(c.Cluster) > 0 {
		ids, err := memberIDs(ctx, c.Cluster, c.Token)
		if err != nil {
			return nil, err
		}
		opts.Route = routeToOther(c.Cluster, ids, c.Token)
		node = nil
		for _, m := range c.Cluster {
			node = append(node, newNodeWatch(m+"/metrics"))
		}
	}
	node.sample() // RSS before the run and the CPU counter at the start
	var (
		mu        sync.Mutex
		failures  []error
		finished  int
		started   atomic.Int64
		running   atomic.Int64
		nextMatch atomic.Int64
	)
	starting := make(chan struct{}, StartAtOnce)
	var wg sync.WaitGroup
	worker := func() {
		defer wg.Done()
		for {
			i := nextMatch.Add(1) - 1
			if !steady && i >= int64(c.Matches) {
				return
			}
			if runCtx.Err() != nil {
				return
			}
			o := opts
			o.BotSeed = c.BotSeed + uint64(i)*2654435761
			release, ok := startSlot(runCtx, starting)
			if !ok {
				return
			}
			o.Connected = release
			started.Add(1)
			running.Add(1)
			_, err := bots.PlayMatch(runCtx, c.Admin, o)
			release()
			running.Add(-1)
			cut := steady && runCtx.Err() != nil
			mu.Lock()
			switch {
			case err == nil:
				finished++
			case cut:
				// Stopped by the end of the run, not a failure.
			default:
				failures = append(failures, err)
			}
			mu.Unlock()
		}
	}
	workers := c.Concurrency
	if steady {
		workers = c.Matches
	}
	for range workers {
		wg.Add(1)
		go worker()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	// The progress line, node sampling and the start of the measurement.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	measuring := !steady
	machine := machineWatch{dbPID: c.DatabasePID}
	if measuring {
		node.markStart()
		machine.markStart()
	}
	var warmupFailures int
	// The node's and the machine's figures end with the window, not after
	// the teardown that follows it: closing every session writes each
	// seat's absence to the log, which is no intent's work.
	var windowEnd <-chan time.Time
	if steady {
		t := time.NewTimer(time.Until(w.end))
		defer t.Stop()
		windowEnd = t.C
	}
	ended := false
	// Zero unless a warm-up ends: st counts from the run's start, as the
	// window does without a warm-up.
	var snapshotsAtStart, snapshotsAtEnd, specAtStart, specAtEnd int
	markStart := func() {
		measuring = true
		node.markStart()
		machine.markStart()
		snapshotsAtStart = st.Snapshots()
		specAtStart = st.SpectatorFrames()
		mu.Lock()
		warmupFailures = len(failures)
		mu.Unlock()
	}
	markEnd := func() {
		node.sample()
		node.markEnd()
		machine.markEnd()
		snapshotsAtEnd = st.Snapshots()
		specAtEnd = st.SpectatorFrames()
		ended = true
	}
loop:
	for {
		select {
		case <-allDone:
			break loop
		case <-windowEnd:
			if !measuring { // a window shorter than the progress tick
				markStart()
			}
			markEnd()
		case now := <-tick.C:
			node.sample()
			if !measuring && !now.Before(w.start) {
				markStart()
			}
			if c.Progress != nil {
				lat, skipped := w.second()
				slices.Sort(lat)
				mu.Lock()
				nfail, nfin := len(failures), finished
				mu.Unlock()
				phase := "measuring"
				if !measuring {
					phase = "warm-up"
				}
				fmt.Fprintf(c.Progress, "%5.0fs %-9s matches running %d finished %d | %d intents/s | p50 %v p99 %v | skipped %d | errors %d\n",
					now.Sub(began).Seconds(), phase, running.Load(), nfin, len(lat),
					Percentile(lat, 50), Percentile(lat, 99), skipped, nfail)
			}
		}
	}
	end := time.Now()
	if steady && end.After(w.end) {
		end = w.end
	}
	if !ended {
		markEnd()
	}

	rep := &Report{Mode: "closed", Matches: c.Matches, MatchesStarted: int(started.Load()), MatchesFinished: finished,
		ConnectionRate: c.ConnectionRate}
	if !steady {
		rep.Matches = c.Concurrency
	}
	if c.Rate > 0 {
		rep.Mode, rep.RatePerMatch = "open", c.Rate
	}
	w.mu.Lock()
	lat := append([]time.Duration(nil), w.lat...)
	rep.Rejected, rep.Ticks, rep.SkippedTicks = w.rejected, w.ticks, w.skipped
	w.mu.Unlock()
	rep.SnapshotsAsked = snapshotsAtEnd - snapshotsAtStart
	rep.Spectators, rep.SpectatorFrames = c.Spectators, specAtEnd-specAtStart
	slices.Sort(lat)
	measured := end.Sub(w.start)
	rep.WarmupSeconds, rep.MeasuredSeconds = w.start.Sub(began).Seconds(), measured.Seconds()
	rep.Intents = len(lat)
	if measured > 0 {
		rep.IntentsPerSec = float64(len(lat)) / measured.Seconds()
	}
	if len(lat) > 0 {
		rep.LatencyMs.P50, rep.LatencyMs.P90 = ms(Percentile(lat, 50)), ms(Percentile(lat, 90))
		rep.LatencyMs.P99, rep.LatencyMs.Max = ms(Percentile(lat, 99)), ms(lat[len(lat)-1].Round(time.Microsecond))
	}
	mu.Lock()
	defer mu.Unlock()
	rep.Errors = len(failures) - warmupFailures
	if len(failures) > 0 {
		rep.FirstError = failures[0].Error()
	}
	rep.Node = node.usage(rep.Intents)
	if len(node) > 1 {
		for _, n := range node {
			rep.Members = append(rep.Members, n.usage(rep.Intents))
		}
	}
	rep.Machine = machine.usage()
	if len(failures) > 0 {
		return rep, fmt.Errorf("%d matches failed: %w", len(failures), errors.Join(failures...))
	}
	return rep, nil
}

// startSlot takes one of the StartAtOnce slots of starting for a match
// being created and connected, or fails when ctx ends; release gives it
// back, once however often it is called.
func startSlot(ctx context.Context, starting chan struct{}) (release func(), ok bool) {
	select {
	case starting <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { <-starting }) }, true
}
