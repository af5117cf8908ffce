package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/load"
)

// cmdLoad is `matchctl load`: flags into a load.Config (or load.IdleConfig
// with --idle), the run, and its report as text or JSON.
func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var cfg load.Config
	fs.IntVar(&cfg.Matches, "matches", 10, "matches to play; with --duration, matches kept running at once")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "without --duration: matches at once (default: all)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: intents per second offered per match, at fixed ticks with a random phase (0: closed loop, as fast as the bots decide)")
	fs.Float64Var(&cfg.ConnectionRate, "connection-rate", bots.DefaultConnectionRate, "intents per second each bot sends at most (a node allows 16 per connection by default; 0: no cap, for a node started with a higher --intents-per-second)")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "with --duration: run this long before measuring")
	fs.DurationVar(&cfg.Duration, "duration", 0, "measure for this long, replacing finished matches, then stop every match (0: play --matches matches to the end)")
	jsonOut := fs.Bool("json", false, "print the final report as JSON")
	progress := fs.Bool("progress", true, "print a progress line every second to stderr")
	fs.StringVar(&cfg.MetricsURL, "metrics", "", "the node's Prometheus endpoint for CPU and memory (default: --server + /metrics; \"off\": none)")
	idle := fs.Int("idle", 0, "hold this many connected, silent sessions (two per match) and report memory per connection")
	idleHold := fs.Duration("idle-hold", 30*time.Second, "with --idle: how long to hold the sessions once all are connected")
	idleSources := fs.String("idle-source-addrs", "", "with --idle: comma-separated local IP addresses the sessions bind to in turn, e.g. 127.0.0.2,127.0.0.3 (one address has about 28,000 ephemeral ports toward one server port)")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile (pprof) of this load generator over the whole run to this file: is the load tool what the machine spends its cores on?")
	failover := fs.String("failover", "", "URL=PID,URL=PID,…: the failover workload on these cluster members (matchd HTTP base URL and process id each): --matches matches at --rate (default 0.2), then SIGKILL of the member owning the most; its last line is 'failover: affected=N p50=Xms p99=Yms max=Zms never=N lost=N'")
	clusterURLs := fs.String("cluster", "", "URL,URL,…: every member of a cluster (matchd HTTP base URLs): each match's sessions connect to a member that does not own it, and the node figures are summed over the members")
	settle := fs.Duration("settle", load.DefaultFailoverSettle, "with --failover: how long every match plays once all are connected, before the kill")
	patience := fs.Duration("patience", load.DefaultFailoverPatience, "with --failover: how long after the kill a match may take to answer before it counts as never")
	fs.IntVar(&cfg.Spectators, "spectators", 0, "spectator sessions following each match (each takes in every frame; a match played to the end fails unless they all saw its end)")
	fs.IntVar(&cfg.DatabasePID, "database-pid", 0, "Linux: the pid of a PostgreSQL server on this machine (its postmaster): the report adds the CPU it and its backends used while measuring")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clusterURLs != "" {
		for _, u := range strings.Split(*clusterURLs, ",") {
			cfg.Cluster = append(cfg.Cluster, strings.TrimSuffix(strings.TrimSpace(u), "/"))
		}
		if c.server == "" {
			c.server = cfg.Cluster[0]
		}
	}
	var fc *load.FailoverConfig
	if *failover != "" {
		members, err := parseFailoverMembers(*failover)
		if err != nil {
			return err
		}
		if c.server == "" {
			c.server = members[0].Server
		}
		fc = &load.FailoverConfig{Members: members, Matches: cfg.Matches, Rate: cfg.Rate, Settle: *settle, Patience: *patience,
			DatabasePID: cfg.DatabasePID}
		if !flagSet(fs, "matches") {
			fc.Matches = 0 // the workload's default, not the flag's
		}
	}
	if err := c.check(); err != nil {
		return err
	}
	if cfg.MetricsURL == "" {
		cfg.MetricsURL = strings.TrimSuffix(c.server, "/") + "/metrics"
	}
	log := c.logger(stderr)
	cfg.Admin = client.NewAdmin(c.server, c.token, nil)
	cfg.Token = c.token
	if *progress {
		cfg.Progress = stderr
	}
	var ic *load.IdleConfig
	if *idleSources != "" && *idle == 0 {
		return fmt.Errorf("%w: --idle-source-addrs needs --idle", errUsage)
	}
	if fc != nil {
		var err error
		if fc.Match, err = c.matchOptions(log); err != nil {
			return err
		}
		if !flagSet(fs, "timeout") {
			fc.Match.Timeout = 0 // a match at a human pace outlasts --timeout's default
		}
		fc.Token, fc.BotSeed, fc.Progress = c.token, c.botSeed, cfg.Progress
		if err := fc.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	} else if *idle != 0 {
		ic = &load.IdleConfig{Admin: cfg.Admin, GameAddr: c.gameAddr(), Decks: [2]string{c.deck, c.deck2},
			Sessions: *idle, Hold: *idleHold, MetricsURL: cfg.MetricsURL, Progress: cfg.Progress, Logger: log}
		var err error
		if ic.SourceAddrs, err = parseAddrs(*idleSources); err != nil {
			return fmt.Errorf("%w: --idle-source-addrs: %w", errUsage, err)
		}
		if err := ic.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	} else {
		var err error
		if cfg.Match, err = c.matchOptions(log); err != nil {
			return err
		}
		cfg.BotSeed = c.botSeed
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	// A report comes back also when matches or sessions failed.
	var rep interface{ WriteText(io.Writer) }
	var runErr error
	if fc != nil {
		r, err := load.RunFailover(ctx, *fc)
		if r != nil {
			rep = r
		}
		runErr = err
	} else if ic != nil {
		r, err := load.RunIdle(ctx, *ic)
		if r != nil {
			rep = r
		}
		runErr = err
	} else {
		r, err := load.Run(ctx, cfg)
		if r != nil {
			rep = r
		}
		runErr = err
	}
	if rep == nil {
		return runErr
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return errors.Join(runErr, fmt.Errorf("write report: %w", err))
		}
	} else {
		rep.WriteText(stdout)
	}
	return runErr
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseFailoverMembers reads --failover: URL=PID pairs, comma-separated.
func parseFailoverMembers(v string) ([]load.FailoverMember, error) {
	var members []load.FailoverMember
	for _, kv := range strings.Split(v, ",") {
		u, p, ok := strings.Cut(strings.TrimSpace(kv), "=")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil || pid <= 0 || !strings.HasPrefix(u, "http") {
			return nil, fmt.Errorf("%w: --failover wants URL=PID pairs, got %q", errUsage, kv)
		}
		members = append(members, load.FailoverMember{Server: strings.TrimSuffix(u, "/"), PID: pid})
	}
	return members, nil
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

// parseAddrs parses a comma-separated list of IP addresses ("": none).
func parseAddrs(list string) ([]netip.Addr, error) {
	if list == "" {
		return nil, nil
	}
	var addrs []netip.Addr
	for _, f := range strings.Split(list, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("address %d of %q: %w", len(addrs)+1, list, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}
