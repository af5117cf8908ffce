package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
)

// loadFlags are the flags of `matchctl load` beyond the common ones.
type loadFlags struct {
	common
	matches, conc int
	rate          float64
	connRate      float64
	warmup, dur   time.Duration
	jsonOut       bool
	progress      bool
	metricsURL    string
	idle          int
	idleHold      time.Duration
	cpuProfile    string
	databasePID   int
}

func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f loadFlags
	f.register(fs)
	fs.IntVar(&f.matches, "matches", 10, "matches to play; with --duration, matches kept running at once")
	fs.IntVar(&f.conc, "concurrency", 0, "without --duration: matches at once (default: all)")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: intents per second offered per match, at fixed ticks with a random phase (0: closed loop, as fast as the bots decide)")
	fs.Float64Var(&f.connRate, "connection-rate", bots.DefaultConnectionRate, "intents per second each bot sends at most (a node allows 16 per connection by default; 0: no cap, for a node started with a higher --intents-per-second)")
	fs.DurationVar(&f.warmup, "warmup", 0, "with --duration: run this long before measuring")
	fs.DurationVar(&f.dur, "duration", 0, "measure for this long, replacing finished matches, then stop every match (0: play --matches matches to the end)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the final report as JSON")
	fs.BoolVar(&f.progress, "progress", true, "print a progress line every second to stderr")
	fs.StringVar(&f.metricsURL, "metrics", "", "the node's Prometheus endpoint for CPU and memory (default: --server + /metrics; \"off\": none)")
	fs.IntVar(&f.idle, "idle", 0, "hold this many connected, silent sessions (two per match) and report memory per connection")
	fs.DurationVar(&f.idleHold, "idle-hold", 30*time.Second, "with --idle: how long to hold the sessions once all are connected")
	fs.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) of this load generator over the whole run to this file: is the load tool what the machine spends its cores on?")
	fs.IntVar(&f.databasePID, "database-pid", 0, "Linux: the pid of a PostgreSQL server on this machine (its postmaster): the report adds the CPU it and its backends used while measuring")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	switch {
	case f.databasePID < 0:
		return fmt.Errorf("%w: --database-pid must be a process id", errUsage)
	case f.matches < 1:
		return fmt.Errorf("%w: --matches must be at least 1", errUsage)
	case f.connRate < 0:
		return fmt.Errorf("%w: --connection-rate must not be negative", errUsage)
	case f.rate < 0 || (f.connRate > 0 && f.rate > f.connRate):
		return fmt.Errorf("%w: --rate must be between 0 and --connection-rate (%g intents/s)", errUsage, f.connRate)
	case f.warmup < 0 || f.dur < 0:
		return fmt.Errorf("%w: --warmup and --duration must not be negative", errUsage)
	case f.warmup > 0 && f.dur == 0:
		return fmt.Errorf("%w: --warmup needs --duration", errUsage)
	case f.rate > 0 && f.dur == 0:
		return fmt.Errorf("%w: --rate needs --duration", errUsage)
	case f.idle < 0 || f.idle%2 != 0:
		return fmt.Errorf("%w: --idle must be a positive even number (two seats per match)", errUsage)
	}
	if f.conc <= 0 || f.conc > f.matches {
		f.conc = f.matches
	}
	if f.metricsURL == "" {
		f.metricsURL = strings.TrimSuffix(f.server, "/") + "/metrics"
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.idle > 0 {
		return runIdle(ctx, &f, stdout, stderr)
	}
	return runLoad(ctx, &f, stdout, stderr)
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

// startAtOnce bounds the matches being created and connected at once.
const startAtOnce = 32

// Report is the final report of `matchctl load` (--json prints it as is).
type Report struct {
	Mode         string  `json:"mode"` // "closed" or "open"
	Matches      int     `json:"matches"`
	RatePerMatch float64 `json:"ratePerMatch,omitempty"`
	// ConnectionRate is the most intents per second a bot sent (0: no cap).
	ConnectionRate  float64 `json:"connectionRate"`
	WarmupSeconds   float64 `json:"warmupSeconds"`
	MeasuredSeconds float64 `json:"measuredSeconds"`
	MatchesFinished int     `json:"matchesFinished"`
	Intents         int     `json:"intents"`
	IntentsPerSec   float64 `json:"intentsPerSecond"`
	Rejected        int     `json:"rejected"`
	Errors          int     `json:"errors"`
	Ticks           int     `json:"ticks,omitempty"`
	SkippedTicks    int     `json:"skippedTicks"`
	// SnapshotsAsked counts the full snapshots the bots asked for in the
	// window (a stall, a Stale or Illegal rejection): they cost the server
	// far more than an intent, so a run with many measures them too.
	SnapshotsAsked int `json:"snapshotsAsked"`
	LatencyMs      struct {
		P50 float64 `json:"p50"`
		P90 float64 `json:"p90"`
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"latencyMs"`
	Node       *NodeUsage `json:"node,omitempty"`
	FirstError string     `json:"firstError,omitempty"`
	// Machine is this (the load generator's) machine during the window;
	// absent where it cannot be read.
	Machine *MachineUsage `json:"machine,omitempty"`
}

// NodeUsage is what the node's /metrics said about the measured window.
type NodeUsage struct {
	CPUSeconds      float64 `json:"cpuSeconds"`
	CPUMsPerIntent  float64 `json:"cpuMsPerIntent"`
	PeakRSSBytes    float64 `json:"peakRssBytes"`
	RSSBytesAtStart float64 `json:"rssBytesAtStart"`
	// ServerMs is the node's own account of the window, where it exports
	// the histograms (absent otherwise).
	ServerMs *ServerTimes `json:"serverMs,omitempty"`
}

// ServerTimes are the node's mean times over the measured window, from its
// latency histograms: set beside the client's latency they say how much of
// it the server spent, and how much of that the durable append and the
// database's statement. A zero is a histogram that saw nothing (a node on
// the embedded store runs no statements).
type ServerTimes struct {
	// Intent: from an intent frame's arrival at the edge to the match's answer.
	Intent float64 `json:"intent"`
	// Append: every durable append (intents', and the server's own: presence, finish).
	Append float64 `json:"append"`
	// Statement: one group-commit statement, without the writer's queue.
	Statement float64 `json:"statement"`
	// IntentP50 and IntentP99 are percentiles of Intent, estimated as
	// Prometheus's histogram_quantile does: linearly within the bucket
	// that holds them, so no finer than the buckets' bounds
	// (internal/buckets: …, 2, 3, 5, 7.5, 10, 15, 20, 30, 50 ms, …). Zero
	// when the window saw no intent. Only buckets labelled by le alone are
	// read (the edge's histogram has no other label).
	IntentP50 float64 `json:"intentP50"`
	IntentP99 float64 `json:"intentP99"`
}

// serverHistograms are the histograms behind ServerTimes, in its field order.
var serverHistograms = [3]string{
	"matchgrain_edge_intent_duration_seconds",
	"matchgrain_store_append_duration_seconds",
	"matchgrain_store_statement_duration_seconds",
}

// histTotals are a histogram's sum and count at one scrape.
type histTotals struct{ sum, count float64 }

// bucketCount is one cumulative bucket of a histogram at one scrape.
type bucketCount struct{ le, count float64 }

// nodeScrape is one read of the node's /metrics.
type nodeScrape struct {
	cpu, rss float64
	hist     [len(serverHistograms)]histTotals
	haveHist bool // all of serverHistograms were there
	// intentBuckets are the buckets of serverHistograms[0], in the
	// exposition's order (ascending bounds, +Inf last).
	intentBuckets []bucketCount
}

// quantile estimates the q-quantile of the observations that fell between
// two reads of one histogram's cumulative buckets (the same bounds in the
// same order), as histogram_quantile does: linearly within the bucket that
// holds it; in the +Inf bucket, the highest finite bound. ok is false when
// there were none.
func quantile(q float64, start, end []bucketCount) (v float64, ok bool) {
	if len(end) == 0 || len(start) != len(end) {
		return 0, false
	}
	count := func(i int) float64 { return end[i].count - start[i].count }
	total := count(len(end) - 1)
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range end {
		c := count(i)
		if c < rank {
			lower, below = b.le, c
			continue
		}
		if math.IsInf(b.le, 1) {
			return lower, true
		}
		return lower + (b.le-lower)*(rank-below)/(c-below), true
	}
	return lower, true
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

func runLoad(ctx context.Context, f *loadFlags, stdout, stderr io.Writer) error {
	log := f.logger(stderr)
	admin := client.NewAdmin(f.server, f.token, nil)
	opts, err := f.matchOptions(log)
	if err != nil {
		return err
	}
	steady := f.dur > 0
	began := time.Now()
	w := &window{start: began}
	if steady {
		w.start = began.Add(f.warmup)
		w.end = w.start.Add(f.dur)
	}
	st := &bots.Stats{Observe: w.observe}
	opts.Stats, opts.Rate, opts.ConnectionRate = st, f.rate, f.connRate
	if f.connRate == 0 {
		opts.ConnectionRate = -1 // no cap
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if steady {
		var stopAt context.CancelFunc
		runCtx, stopAt = context.WithDeadline(runCtx, w.end)
		defer stopAt()
	}
	node := newNodeWatch(f.metricsURL)
	node.sample() // RSS before the run and the CPU counter at the start
	var (
		mu        sync.Mutex
		failures  []error
		finished  int
		started   atomic.Int64
		running   atomic.Int64
		nextMatch atomic.Int64
	)
	// At most startAtOnce matches are being created and connected at any
	// time, so that a thousand matches ramp up instead of timing out
	// together on their creation.
	starting := make(chan struct{}, startAtOnce)
	var wg sync.WaitGroup
	worker := func() {
		defer wg.Done()
		for {
			i := nextMatch.Add(1) - 1
			if !steady && i >= int64(f.matches) {
				return
			}
			if runCtx.Err() != nil {
				return
			}
			o := opts
			o.BotSeed = f.botSeed + uint64(i)*2654435761
			select {
			case starting <- struct{}{}:
			case <-runCtx.Done():
				return
			}
			var once sync.Once
			release := func() { once.Do(func() { <-starting }) }
			o.Connected = release
			started.Add(1)
			running.Add(1)
			_, err := bots.PlayMatch(runCtx, admin, o)
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
	workers := f.conc
	if steady {
		workers = f.matches
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
	machine := machineWatch{dbPID: f.databasePID}
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
	var snapshotsAtStart, snapshotsAtEnd int
	markStart := func() {
		measuring = true
		node.markStart()
		machine.markStart()
		snapshotsAtStart = st.Snapshots()
		mu.Lock()
		warmupFailures = len(failures)
		mu.Unlock()
	}
	markEnd := func() {
		node.sample()
		node.markEnd()
		machine.markEnd()
		snapshotsAtEnd = st.Snapshots()
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
			if f.progress {
				lat, skipped := w.second()
				slices.Sort(lat)
				mu.Lock()
				nfail, nfin := len(failures), finished
				mu.Unlock()
				phase := "measuring"
				if !measuring {
					phase = "warm-up"
				}
				fmt.Fprintf(stderr, "%5.0fs %-9s matches running %d finished %d | %d intents/s | p50 %v p99 %v | skipped %d | errors %d\n",
					now.Sub(began).Seconds(), phase, running.Load(), nfin, len(lat),
					pctOr(lat, 50), pctOr(lat, 99), skipped, nfail)
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

	rep := Report{Mode: "closed", Matches: f.matches, MatchesFinished: finished, ConnectionRate: f.connRate}
	if !steady {
		rep.Matches = f.conc
	}
	if f.rate > 0 {
		rep.Mode, rep.RatePerMatch = "open", f.rate
	}
	w.mu.Lock()
	lat := append([]time.Duration(nil), w.lat...)
	rep.Rejected, rep.Ticks, rep.SkippedTicks = w.rejected, w.ticks, w.skipped
	w.mu.Unlock()
	rep.SnapshotsAsked = snapshotsAtEnd - snapshotsAtStart
	slices.Sort(lat)
	measured := end.Sub(w.start)
	rep.WarmupSeconds, rep.MeasuredSeconds = w.start.Sub(began).Seconds(), measured.Seconds()
	rep.Intents = len(lat)
	if measured > 0 {
		rep.IntentsPerSec = float64(len(lat)) / measured.Seconds()
	}
	if len(lat) > 0 {
		rep.LatencyMs.P50, rep.LatencyMs.P90 = ms(pct(lat, 50)), ms(pct(lat, 90))
		rep.LatencyMs.P99, rep.LatencyMs.Max = ms(pct(lat, 99)), ms(lat[len(lat)-1].Round(time.Microsecond))
	}
	mu.Lock()
	rep.Errors = len(failures) - warmupFailures
	if len(failures) > 0 {
		rep.FirstError = failures[0].Error()
	}
	mu.Unlock()
	rep.Node = node.usage(rep.Intents)
	rep.Machine = machine.usage()
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else {
		printReport(stdout, &rep, started.Load())
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d matches failed: %w", len(failures), errors.Join(failures...))
	}
	return nil
}

func printReport(out io.Writer, r *Report, started int64) {
	mode := "closed loop (bots decide as fast as they can)"
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %g intents/s per match", r.RatePerMatch)
	}
	capped := "no per-connection cap"
	if r.ConnectionRate > 0 {
		capped = fmt.Sprintf("at most %g intents/s per connection", r.ConnectionRate)
	}
	fmt.Fprintf(out, "load: %d matches at once, %s, %s; %d matches started, %d finished\n", r.Matches, mode, capped, started, r.MatchesFinished)
	fmt.Fprintf(out, "measured %.1f s after %.1f s warm-up: %d intents (%d rejected), %.0f intents/s, %d errors\n",
		r.MeasuredSeconds, r.WarmupSeconds, r.Intents, r.Rejected, r.IntentsPerSec, r.Errors)
	if r.Mode == "open" {
		fmt.Fprintf(out, "ticks: %d, skipped %d (previous intent still in flight or next one not decided yet)\n", r.Ticks, r.SkippedTicks)
	}
	fmt.Fprintf(out, "snapshots the bots asked for: %d (after a stall without progress, or an intent rejected as Stale or Illegal)\n", r.SnapshotsAsked)
	fmt.Fprintf(out, "intent latency (send → result): p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms\n",
		r.LatencyMs.P50, r.LatencyMs.P90, r.LatencyMs.P99, r.LatencyMs.Max)
	if n := r.Node; n != nil {
		fmt.Fprintf(out, "node: %.2f CPU s while measuring, %.3f ms CPU per intent, peak RSS %.1f MiB (%.1f MiB before the run)\n",
			n.CPUSeconds, n.CPUMsPerIntent, n.PeakRSSBytes/(1<<20), n.RSSBytesAtStart/(1<<20))
	} else {
		fmt.Fprintln(out, "node: CPU and memory unknown (no process metrics at --metrics)")
	}
	if t := r.Node; t != nil && t.ServerMs != nil {
		sm := t.ServerMs
		fmt.Fprintf(out, "node's own times: intent %.2f ms mean (p50 ≈ %.1f, p99 ≈ %.1f ms from its buckets), durable append %.2f ms, statement %.2f ms\n",
			sm.Intent, sm.IntentP50, sm.IntentP99, sm.Append, sm.Statement)
	}
	if m := r.Machine; m != nil {
		fmt.Fprintf(out, "machine: %.2f of %d cores busy while measuring, %.2f of them this load generator",
			m.BusyCores, m.CPUs, m.LoadGeneratorCores)
		if m.DatabaseCores != nil {
			fmt.Fprintf(out, ", %.2f the database", *m.DatabaseCores)
		}
		fmt.Fprintln(out)
	}
	if r.FirstError != "" {
		fmt.Fprintf(out, "first error: %s\n", r.FirstError)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pctOr is pct, or 0 for no samples (the progress line of a quiet second).
func pctOr(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return pct(sorted, p)
}

// nodeWatch reads the node's standard process metrics
// (process_cpu_seconds_total, process_resident_memory_bytes).
type nodeWatch struct {
	url    string
	client *http.Client

	ok                  bool
	rssStart, peak, rss float64
	cpu                 float64
	cpuStart, cpuEnd    float64
	measuring           bool
	// hist is the latest read of serverHistograms; histStart and histEnd
	// bound the window; histOK says every read in the window had them.
	hist, histStart, histEnd [len(serverHistograms)]histTotals
	histOK                   bool
	// intentBuckets, and their reads at the window's bounds, for the
	// intent percentiles.
	intentBuckets, intentStart, intentEnd []bucketCount
}

func newNodeWatch(url string) *nodeWatch {
	return &nodeWatch{url: url, client: &http.Client{Timeout: 2 * time.Second}}
}

// sample reads the metrics once; a failed read leaves the last values.
func (n *nodeWatch) sample() {
	if n.url == "off" {
		return
	}
	sc, err := scrapeNode(n.client, n.url)
	if err != nil {
		return
	}
	if !n.ok {
		n.rssStart = sc.rss
		n.histOK = sc.haveHist
	}
	n.ok = true
	n.cpu, n.rss = sc.cpu, sc.rss
	n.hist, n.intentBuckets = sc.hist, sc.intentBuckets
	n.histOK = n.histOK && sc.haveHist
	if n.measuring {
		n.peak = max(n.peak, sc.rss)
	}
}

func (n *nodeWatch) markStart() {
	n.sample()
	n.cpuStart, n.peak, n.measuring = n.cpu, n.rss, true
	n.histStart, n.intentStart = n.hist, n.intentBuckets
}

func (n *nodeWatch) markEnd() {
	n.cpuEnd, n.histEnd, n.intentEnd = n.cpu, n.hist, n.intentBuckets
	n.measuring = false // the peak RSS is the window's too
}

// serverTimes are the window's mean times in milliseconds, or nil where the
// node does not export the histograms.
func (n *nodeWatch) serverTimes() *ServerTimes {
	if !n.histOK {
		return nil
	}
	var ms [len(serverHistograms)]float64
	for i := range ms {
		if c := n.histEnd[i].count - n.histStart[i].count; c > 0 {
			ms[i] = (n.histEnd[i].sum - n.histStart[i].sum) * 1000 / c
		}
	}
	t := &ServerTimes{Intent: ms[0], Append: ms[1], Statement: ms[2]}
	if p, ok := quantile(0.5, n.intentStart, n.intentEnd); ok {
		t.IntentP50 = p * 1000
	}
	if p, ok := quantile(0.99, n.intentStart, n.intentEnd); ok {
		t.IntentP99 = p * 1000
	}
	return t
}

func (n *nodeWatch) usage(intents int) *NodeUsage {
	if !n.ok {
		return nil
	}
	u := &NodeUsage{CPUSeconds: n.cpuEnd - n.cpuStart, PeakRSSBytes: n.peak, RSSBytesAtStart: n.rssStart,
		ServerMs: n.serverTimes()}
	if intents > 0 {
		u.CPUMsPerIntent = u.CPUSeconds * 1000 / float64(intents)
	}
	return u
}

// scrapeNode fetches a Prometheus text exposition and returns the two
// unlabelled process gauges the Go client's process collector exports, and
// the sums and counts of serverHistograms where present.
func scrapeNode(c *http.Client, url string) (nodeScrape, error) {
	var sc nodeScrape
	resp, err := c.Get(url)
	if err != nil {
		return sc, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sc, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	var haveCPU, haveRSS bool
	var haveHist [len(serverHistograms)][2]bool
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		name, val, ok := strings.Cut(lines.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_cpu_seconds_total":
			sc.cpu, haveCPU = v, true
		case "process_resident_memory_bytes":
			sc.rss, haveRSS = v, true
		default:
			if le, ok := strings.CutPrefix(name, serverHistograms[0]+`_bucket{le="`); ok {
				if b, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil {
					sc.intentBuckets = append(sc.intentBuckets, bucketCount{le: b, count: v})
				}
				continue
			}
			for i, h := range serverHistograms {
				switch strings.TrimPrefix(name, h) {
				case "_sum":
					sc.hist[i].sum, haveHist[i][0] = v, true
				case "_count":
					sc.hist[i].count, haveHist[i][1] = v, true
				}
			}
		}
	}
	if err := lines.Err(); err != nil {
		return sc, fmt.Errorf("scrape %s: %w", url, err)
	}
	if !haveCPU || !haveRSS {
		return sc, fmt.Errorf("scrape %s: no process_cpu_seconds_total or process_resident_memory_bytes", url)
	}
	sc.haveHist = true
	for _, h := range haveHist {
		sc.haveHist = sc.haveHist && h[0] && h[1]
	}
	return sc, nil
}

// IdleReport is the result of --idle (--json prints it as is).
type IdleReport struct {
	Sessions          int     `json:"sessions"`
	Connected         int     `json:"connected"`
	Dropped           int     `json:"dropped"`
	HeldSeconds       float64 `json:"heldSeconds"`
	RSSBytesBefore    float64 `json:"rssBytesBefore"`
	RSSBytesHeld      float64 `json:"rssBytesHeld"`
	RSSBytesPerConn   float64 `json:"rssBytesPerConnection"`
	NodeCPUSecondsIdl float64 `json:"nodeCpuSecondsWhileHeld"`
	FirstError        string  `json:"firstError,omitempty"`
}

// runIdle connects --idle sessions, two per new match, that send nothing
// but the client's keep-alive pings, holds them for --idle-hold and reports
// how the node's RSS grew per connection. The figure includes everything a
// connected seat costs: the socket and its goroutines, the seat with its
// registry entry and keep-alive, and half a match grain.
func runIdle(ctx context.Context, f *loadFlags, stdout, stderr io.Writer) error {
	log := f.logger(stderr)
	admin := client.NewAdmin(f.server, f.token, nil)
	node := newNodeWatch(f.metricsURL)
	node.sample()
	if !node.ok {
		return fmt.Errorf("--idle needs the node's process metrics at %s", f.metricsURL)
	}
	rep := IdleReport{Sessions: f.idle, RSSBytesBefore: node.rss}
	var (
		mu       sync.Mutex
		sessions []*client.Session
		errs     []error
	)
	holdCtx, stopHold := context.WithCancel(ctx)
	defer stopHold()
	matches := f.idle / 2
	sem := make(chan struct{}, 32) // connect at most this many matches at once
	var wg sync.WaitGroup
	var connected atomic.Int64
	for i := range matches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, err := admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "Idle A", Deck: f.deck}, {Name: "Idle B", Deck: f.deck2}}, nil)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("match %d: create: %w", i, err))
				mu.Unlock()
				return
			}
			for seat := range 2 {
				s, err := client.Start(ctx, client.Config{
					Addr: f.gameAddr(), Ticket: admin.TicketFunc(id, seat), ClientBuild: "matchctl-idle",
					MaxAttempts: 3, Logger: log.With("match", id, "seat", seat),
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("match %s seat %d: connect: %w", id, seat, err))
					mu.Unlock()
					return
				}
				connected.Add(1)
				mu.Lock()
				sessions = append(sessions, s)
				mu.Unlock()
				go func() { // read and drop what the server pushes (clocks)
					for {
						select {
						case <-holdCtx.Done():
							return
						case _, ok := <-s.Frames():
							if !ok {
								return
							}
						}
					}
				}()
			}
			if f.progress && (i+1)%500 == 0 {
				fmt.Fprintf(stderr, "%d of %d sessions connected\n", connected.Load(), f.idle)
			}
		}()
	}
	wg.Wait()
	rep.Connected = int(connected.Load())
	fmt.Fprintf(stderr, "%d sessions connected; holding them for %v\n", rep.Connected, f.idleHold)
	node.markStart()
	heldFrom := time.Now()
	tick := time.NewTicker(time.Second)
hold:
	for time.Since(heldFrom) < f.idleHold {
		select {
		case <-ctx.Done():
			break hold
		case <-tick.C:
			node.sample()
		}
	}
	tick.Stop()
	rep.HeldSeconds = time.Since(heldFrom).Seconds()
	node.sample()
	node.markEnd()
	rep.RSSBytesHeld = node.rss
	rep.NodeCPUSecondsIdl = node.cpuEnd - node.cpuStart
	if rep.Connected > 0 {
		rep.RSSBytesPerConn = (rep.RSSBytesHeld - rep.RSSBytesBefore) / float64(rep.Connected)
	}
	mu.Lock()
	for _, s := range sessions {
		select {
		case <-s.Done():
			rep.Dropped++
		default:
		}
	}
	if len(errs) > 0 {
		rep.FirstError = errs[0].Error()
	}
	all := sessions
	mu.Unlock()
	stopHold()
	// Leave so the matches end instead of waiting out their absence timers.
	var lw sync.WaitGroup
	for i, s := range all {
		lw.Add(1)
		sem <- struct{}{}
		go func() {
			defer lw.Done()
			defer func() { <-sem }()
			lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Leave(lctx, "idle test over"); err != nil {
				log.Debug("leave", "session", i, "err", err)
			}
		}()
	}
	lw.Wait()
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else {
		fmt.Fprintf(stdout, "idle: %d of %d sessions connected (%d matches), %d dropped while held %.0f s\n",
			rep.Connected, rep.Sessions, matches, rep.Dropped, rep.HeldSeconds)
		fmt.Fprintf(stdout, "node RSS %.1f MiB before, %.1f MiB held: %.1f KiB per connection (seat, its actor and half a match grain included); node CPU while held %.2f s\n",
			rep.RSSBytesBefore/(1<<20), rep.RSSBytesHeld/(1<<20), rep.RSSBytesPerConn/1024, rep.NodeCPUSecondsIdl)
		if rep.FirstError != "" {
			fmt.Fprintf(stdout, "first error: %s\n", rep.FirstError)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d sessions failed to connect: %w", len(errs), f.idle, errs[0])
	}
	return nil
}
