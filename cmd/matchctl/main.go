package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/protocol"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  matchctl play --server http://HOST:PORT --token T [--deck S1] [--deck2 S2] [--seed N] [--tcp HOST:PORT] [flags]
      create a match and let two bots play it to the end, printing the match
  matchctl load --server http://HOST:PORT --token T --matches N [--concurrency C] [--tcp HOST:PORT] [flags]
      play N matches with bots at once and report intent latency
  matchctl load ... --matches N --duration D [--rate R] [--warmup W] [--json]
      keep N matches running for W+D (open loop with --rate: R intents/s per match)
      and report latency percentiles, skipped ticks and the node's CPU and memory
  matchctl load ... --idle N [--idle-hold D] [--idle-source-addrs IP,IP...]
      hold N connected, silent sessions and report the node's memory per connection
  matchctl cluster --server http://HOST:PORT --token T
      members in this member's view, unfinished matches per member, the rules version
  matchctl matches --server http://HOST:PORT --token-file F
      the live matches with their grains' status, and recent takeovers (what the console shows)
  matchctl match --server http://HOST:PORT --token T MATCH_ID
      owner, epoch, seqs, clocks and seats of a match, rebuilt from the store
  matchctl replay --server http://HOST:PORT --token T MATCH_ID
      rebuild a match from the store and check it against the stored snapshot bit for bit
run "matchctl COMMAND -h" for every flag`

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "play":
		err = cmdPlay(ctx, args[1:], stdout, stderr)
	case "load":
		err = cmdLoad(ctx, args[1:], stdout, stderr)
	case "cluster", "matches", "match", "replay":
		err = cmdOps(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "matchctl: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "matchctl: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "matchctl: %v\n", err)
		return 1
	}
}

var errUsage = errors.New("usage")

// common holds the flags both commands share.
type common struct {
	server, token, tcp string
	tokenFile          *string
	deck, deck2        string
	seed               string
	timeout            time.Duration
	killEvery          int
	botSeed            uint64
	think              time.Duration
	verbose            bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "edge HTTP base URL, http://HOST:PORT (required)")
	c.tokenFile = tokenFlags(fs, &c.token)
	fs.StringVar(&c.tcp, "tcp", "", "play over the TCP fallback at HOST:PORT instead of WebSocket")
	fs.StringVar(&c.deck, "deck", "S1", "deck of player 0")
	fs.StringVar(&c.deck2, "deck2", "S2", "deck of player 1")
	fs.StringVar(&c.seed, "seed", "", "engine seed (default: the server picks)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up when a match has not ended after this long")
	fs.IntVar(&c.killEvery, "kill-every", 0, "chaos: each bot drops its connection after every N intents and resumes")
	fs.Uint64Var(&c.botSeed, "bot-seed", 0, "seed of the bots' choices (default: random)")
	fs.DurationVar(&c.think, "think", 0, "pause before each decision (to follow a match live)")
	fs.BoolVar(&c.verbose, "v", false, "log connection events to stderr")
}

func (c *common) check() error {
	if c.server == "" {
		return fmt.Errorf("%w: --server is required", errUsage)
	}
	u, err := url.Parse(c.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: --server must be http://HOST:PORT", errUsage)
	}
	if err := resolveToken(&c.token, *c.tokenFile); err != nil {
		return err
	}
	if c.killEvery < 0 {
		return fmt.Errorf("%w: --kill-every must not be negative", errUsage)
	}
	if c.botSeed == 0 {
		c.botSeed = rand.Uint64()
	}
	return nil
}

// gameAddr is where the bots connect: the TCP fallback, or /game on the
// HTTP server.
func (c *common) gameAddr() string {
	if c.tcp != "" {
		return "tcp://" + c.tcp
	}
	u, _ := url.Parse(c.server) // checked in check
	scheme := "ws"
	if u.Scheme == "https" {
		scheme = "wss"
	}
	return scheme + "://" + u.Host + "/game"
}

func (c *common) seedValue() (*uint64, error) {
	if c.seed == "" {
		return nil, nil
	}
	v, err := strconv.ParseUint(c.seed, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: --seed must be an unsigned integer", errUsage)
	}
	return &v, nil
}

// matchOptions turns the shared flags into bot match options.
func (c *common) matchOptions(log *slog.Logger) (bots.MatchOptions, error) {
	seed, err := c.seedValue()
	if err != nil {
		return bots.MatchOptions{}, err
	}
	return bots.MatchOptions{
		GameAddr: c.gameAddr(), Decks: [2]string{c.deck, c.deck2}, Seed: seed, BotSeed: c.botSeed,
		Timeout: c.timeout, KillEvery: c.killEvery, Think: c.think, Logger: log,
	}, nil
}

func (c *common) logger(stderr io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func cmdPlay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("play", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	quiet := fs.Bool("quiet", false, "print only the summary")
	verify := fs.Bool("verify", false, "ask for a full snapshot after every batch and compare it with each bot's view kept from events (default: play from events alone)")
	chaos := fs.Bool("chaos", false, "each bot drops its connection at random, mostly right after SelectTrigger, ResolveAbility(accept) and FinishMulligan, and resumes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	log := c.logger(stderr)
	admin := client.NewAdmin(c.server, c.token, nil)
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, format+"\n", args...)
	}
	narrate := true
	if *quiet {
		logf, narrate = nil, false
	}
	start := time.Now()
	opts, err := c.matchOptions(log)
	if err != nil {
		return err
	}
	opts.Logf, opts.Narrate = logf, narrate
	opts.Verify, opts.Chaos = *verify, *chaos
	mr, err := bots.PlayMatch(ctx, admin, opts)
	if err != nil {
		return err
	}
	f := mr.Results[0].Final
	winner := "draw"
	if f.Winner != protocol.NoWinner {
		winner = fmt.Sprintf("P%d (%s)", f.Winner, f.Players[f.Winner].Name)
	}
	fmt.Fprintf(stdout, "match %s finished in %v: winner %s, %d turns, %d events\n",
		mr.ID, time.Since(start).Round(time.Millisecond), winner, f.TurnNumber, f.EventSeq)
	for seat, r := range mr.Results {
		fmt.Fprintf(stdout, "P%d: %d intents (%d rejected), %d reconnects, %d snapshots asked for; view kept from events checked against %d snapshots: OK\n",
			seat, r.Intents, r.Rejected, r.Reconnects, r.Snapshots, r.ViewChecked)
	}
	fmt.Fprintf(stdout, "bot seed %d\n", c.botSeed)
	return nil
}
