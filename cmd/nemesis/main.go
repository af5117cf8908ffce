// Command nemesis runs the fault-injection harness (package nemesis): real
// matchd members and PostgreSQL in network namespaces, bot matches through
// random members, faults on a seeded schedule, and a checker whose report
// ends the output. It needs root (namespaces, nft, tc).
//
//	nemesis run --matchd BIN [--duration 2m] [--matches 20] [--members 5] [--seed N]
//	nemesis cleanup [--wait-pid PID]
//
// run sets up the network, starts a watchdog that removes everything if run
// is killed, and runs the harness itself inside the client namespace
// (nemesis inside, not for direct use). cleanup removes what a killed run
// left behind.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/matchgrain/matchgrain/nemesis"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "run":
		code, err = outer(os.Args[2:])
	case "inside":
		code, err = inside(os.Args[2:])
	case "cleanup":
		err = cleanup(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: nemesis run --matchd BIN [--duration D] [--matches N] [--members N] [--seed N] [--pg-ha deploy/pg-ha.sh] | nemesis cleanup [--wait-pid PID]")
	os.Exit(2)
}

// options are run's flags, passed on to inside unchanged.
type options struct {
	matchd    string
	duration  time.Duration
	matches   int
	members   int
	seed      uint64
	think     time.Duration
	faultHold time.Duration
	workDir   string
	verbose   bool
	pgHA      string
	kinds     string
}

func parse(name string, args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.matchd, "matchd", "", "the matchd binary (required)")
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "how long faults are injected")
	fs.IntVar(&o.matches, "matches", 20, "matches in play at once")
	fs.IntVar(&o.members, "members", 5, "matchd members (3 to 5)")
	fs.Uint64Var(&o.seed, "seed", 0, "the fault schedule's seed (0: random, printed)")
	fs.DurationVar(&o.think, "think", 200*time.Millisecond, "each bot's pause before an intent")
	fs.DurationVar(&o.faultHold, "fault-hold", 6*time.Second, "longest a fault lasts (at least half of it)")
	fs.StringVar(&o.workDir, "work-dir", "", "inside only: the run's directory")
	fs.BoolVar(&o.verbose, "v", false, "log the schedule and the members' restarts")
	fs.StringVar(&o.kinds, "kinds", "", "comma-separated fault kinds to inject, e.g. primary-kill,split (default: every kind)")
	fs.StringVar(&o.pgHA, "pg-ha", "", "deploy/pg-ha.sh: run the highly available PostgreSQL (pg_auto_failover) instead of one server, and kill its primary as a fault (primary-kill)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.matchd == "" {
		return nil, errors.New("--matchd is required")
	}
	if o.members < 3 || o.members > 5 {
		return nil, fmt.Errorf("--members %d: want 3 to 5", o.members)
	}
	if o.matches < 1 || o.duration <= 0 || o.faultHold < 2*time.Second {
		return nil, fmt.Errorf("--matches %d, --duration %v, --fault-hold %v: want at least 1, above 0, at least 2s", o.matches, o.duration, o.faultHold)
	}
	abs, err := filepath.Abs(o.matchd)
	if err != nil {
		return nil, err
	}
	o.matchd = abs
	if o.pgHA != "" {
		if o.pgHA, err = filepath.Abs(o.pgHA); err != nil {
			return nil, err
		}
	}
	if _, err := o.faultKinds(); err != nil {
		return nil, err
	}
	if o.seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
		o.seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	return o, nil
}

func (o *options) args() []string {
	a := []string{"--matchd", o.matchd, "--duration", o.duration.String(), "--matches", strconv.Itoa(o.matches),
		"--members", strconv.Itoa(o.members), "--seed", strconv.FormatUint(o.seed, 10), "--think", o.think.String(),
		"--fault-hold", o.faultHold.String(), "--work-dir", o.workDir}
	if o.verbose {
		a = append(a, "-v")
	}
	if o.pgHA != "" {
		a = append(a, "--pg-ha", o.pgHA)
	}
	if o.kinds != "" {
		a = append(a, "--kinds", o.kinds)
	}
	return a
}

// faultKinds parses --kinds (nil: every kind).
func (o *options) faultKinds() ([]nemesis.Kind, error) {
	if o.kinds == "" {
		return nil, nil
	}
	known := append(slices.Clone(nemesis.Kinds), nemesis.KindPrimaryKill)
	var kinds []nemesis.Kind
	for _, k := range strings.Split(o.kinds, ",") {
		kind := nemesis.Kind(strings.TrimSpace(k))
		switch {
		case !slices.Contains(known, kind):
			return nil, fmt.Errorf("--kinds: unknown fault kind %q (known: %v)", kind, known)
		case kind == nemesis.KindPrimaryKill && o.pgHA == "":
			return nil, errors.New("--kinds primary-kill needs --pg-ha")
		}
		kinds = append(kinds, kind)
	}
	return kinds, nil
}

// outer sets up the network in the root namespace, runs inside in the client
// namespace, and removes everything afterwards; a watchdog does the removal
// if outer itself is killed.
func outer(args []string) (int, error) {
	o, err := parse("run", args)
	if err != nil {
		return 2, err
	}
	if os.Geteuid() != 0 {
		return 1, errors.New("needs root (network namespaces, nft, tc)")
	}
	for _, tool := range []string{"ip", "nft", "tc", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			return 1, fmt.Errorf("%s not found (apt-get install iproute2 nftables util-linux): %w", tool, err)
		}
	}
	lock, err := nemesis.Lock()
	if err != nil {
		return 1, err
	}
	defer func() { _ = lock.Close() }() // releases the lock
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	watchdog := exec.Command(self, "cleanup", "--wait-pid", strconv.Itoa(os.Getpid()))
	watchdog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := watchdog.Start(); err != nil {
		return 1, fmt.Errorf("start the watchdog: %w", err)
	}
	_ = watchdog.Process.Release() // it outlives this process on purpose

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("nemesis: seed=%d duration=%v matches=%d members=%d\n", o.seed, o.duration, o.matches, o.members)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := nemesis.Cleanup(cctx); err != nil {
			fmt.Fprintln(os.Stderr, "nemesis: cleanup:", err)
		}
	}()
	if err := nemesis.Setup(ctx, o.members); err != nil {
		return 1, err
	}
	o.workDir, err = os.MkdirTemp("", nemesis.Prefix+"run-")
	if err != nil {
		return 1, err
	}
	if err := os.Chmod(o.workDir, 0o755); err != nil {
		return 1, err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", nemesis.ClientNamespace, self, "inside"}, o.args()...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil // inside printed why
	}
	return 0, err
}

// inside runs the harness; its last lines are the report.
func inside(args []string) (int, error) {
	o, err := parse("inside", args)
	if err != nil {
		return 2, err
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kinds, err := o.faultKinds()
	if err != nil {
		return 2, err
	}
	r, err := nemesis.Run(ctx, nemesis.Config{
		Members: o.members, Matches: o.matches, Duration: o.duration, Seed: o.seed, Matchd: o.matchd,
		Think: o.think, Timing: nemesis.DefaultTiming, FaultHold: o.faultHold, Log: lg, PGHA: o.pgHA, Kinds: kinds,
	}, o.workDir)
	if err != nil {
		return 1, fmt.Errorf("seed %d: %w", o.seed, err)
	}
	r.Write(os.Stdout)
	if !r.Pass() {
		return 1, nil
	}
	return 0, nil
}

// cleanup removes a killed run's leftovers; with --wait-pid it first waits
// for that process to end (the watchdog of a run).
func cleanup(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	pid := fs.Int("wait-pid", 0, "wait for this process to end first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid > 0 {
		for syscall.Kill(*pid, 0) == nil {
			time.Sleep(500 * time.Millisecond) // polling a process that is not our child
		}
	}
	lock, err := nemesis.Lock()
	if err != nil {
		if *pid > 0 {
			return nil // a new run holds the lock; it removed the leftovers as it started
		}
		return err
	}
	defer func() { _ = lock.Close() }() // releases the lock
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return nemesis.Cleanup(ctx)
}
