package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// restartPostgres restarts the private server in dir (fast mode: sessions
// are cut, as in a failover or a crash-restart of the database).
func restartPostgres(t *testing.T, dir string) {
	t.Helper()
	pgBin := os.Getenv("PG_BIN")
	if pgBin == "" {
		pgBin = "/usr/lib/postgresql/15/bin"
	}
	// -l: without a log file the new postmaster keeps pg_ctl's output pipe
	// open, and CombinedOutput would wait for it for ever.
	args := []string{filepath.Join(pgBin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log"),
		"-m", "fast", "-w", "-t", "60", "restart"}
	if os.Geteuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("restart PostgreSQL: %v\n%s", err, out)
	}
}

// TestChaosPostgresRestart restarts PostgreSQL while bots play matches on
// two members: intents in flight fail or are retried, every match still
// ends with both bots agreeing with the server's fresh snapshot (nothing
// acknowledged was lost), and the members recover by themselves.
func TestChaosPostgresRestart(t *testing.T) {
	// A server of its own: restarting the shared one would cut the tests
	// other packages run against it at the same time.
	pgURL, pgDir := pgtest.Private(t)
	cc := &chaosCluster{schema: "public", url: pgURL}
	common := []string{
		"--database-url", pgURL,
		"--cluster-name", "pgrestart-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--seat-keepalive", "200ms", "--reclaim-interval", "2s",
	}
	a := startProc(t, "a", common...)
	b := startProc(t, "b", append(common, "--join", a.gossip)...)
	admins := []*client.Admin{client.NewAdmin("http://"+a.http, testAdminToken, nil), client.NewAdmin("http://"+b.http, testAdminToken, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		runs     []bots.MatchRun
		failures []error
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(500 + w)
			p := []*proc{a, b}[w%2]
			mr, err := bots.PlayMatch(ctx, admins[w%2], bots.MatchOptions{GameAddr: "ws://" + p.http + "/game",
				Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: seed, Think: 30 * time.Millisecond,
				Timeout: 3 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, fmt.Errorf("worker %d: %w", w, err))
				return
			}
			runs = append(runs, mr)
		}()
	}
	time.Sleep(3 * time.Second) // matches under way
	start := time.Now()
	restartPostgres(t, pgDir)
	t.Logf("PostgreSQL restarted in %v while 4 matches were played", time.Since(start).Round(time.Millisecond))
	wg.Wait()
	if err := errors.Join(failures...); err != nil {
		t.Fatalf("matches failed across the PostgreSQL restart:\n%v", err)
	}
	reconnects := 0
	for _, mr := range runs {
		for _, r := range mr.Results {
			reconnects += r.Reconnects
		}
		if epochs := cc.logEpochs(t, mr.ID); !slices.IsSorted(epochs) {
			t.Fatalf("match %s: log epochs out of order: %v", mr.ID, epochs)
		}
	}
	// The restart must have hit the matches: some append was cut off by it
	// (and settled by the store, or failed, answered Unavailable and retried
	// by the gateway), and still every match above finished and verified.
	appendErrors := sumCounter(t, "matchgrain_store_append_errors_total", a, b)
	settled := sumCounter(t, "matchgrain_store_append_unknown_outcomes_total", a, b)
	if appendErrors+settled < 1 {
		t.Fatalf("no append was cut off by the restart: the test did not exercise the outage")
	}
	t.Logf("%d matches finished and verified; %d reconnects; %.0f appends cut off by the restart were settled by the store, %.0f failed",
		len(runs), reconnects, settled, appendErrors)
}
