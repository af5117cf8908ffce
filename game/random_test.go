package game

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// Random play (docs/rules.md §14): the decider picks uniformly among its legal
// commands (Concede excluded); every invariant is checked after every
// command. The normal suite plays 2,000 games plus 400 with random
// server-decided ends. For the long run:
//
//	MATCHGRAIN_GAMES=1000000 go test ./game -run TestRandomPlay -timeout 0 -v
//
// MATCHGRAIN_SEED shifts the first seed; a failure names its seed, and
// MATCHGRAIN_GAMES=1 MATCHGRAIN_SEED=<seed> replays exactly that game.
const (
	defaultGames        = 2000
	defaultConcedeGames = 400
)

func envUint(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// runGames plays n games with seeds first, first+1, ... on GOMAXPROCS
// workers and reports violations (the first few in full).
func runGames(t *testing.T, first, n uint64, opts playOpts) {
	t.Helper()
	var (
		next       atomic.Uint64
		commands   atomic.Int64
		violations atomic.Int64
		mu         sync.Mutex
		errs       []error
		reasons    [protocol.FinishDraw + 1]atomic.Int64
		wg         sync.WaitGroup
	)
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				if n >= 100000 && i > 0 && i%50000 == 0 {
					t.Logf("progress: %d games started, %d violations, %v", i, violations.Load(), time.Since(start).Round(time.Second))
				}
				st, err := playGame(first+i, opts)
				commands.Add(int64(st.commands))
				if err != nil {
					violations.Add(1)
					mu.Lock()
					if len(errs) < 10 {
						errs = append(errs, err)
					}
					mu.Unlock()
					continue
				}
				reasons[st.reason].Add(1)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	el := time.Since(start)
	var rs []string
	for r := range reasons {
		rs = append(rs, fmt.Sprintf("%s=%d", name(reasonNames[:], r), reasons[r].Load()))
	}
	t.Logf("%d games (seeds %d..%d), %d commands, %d violations, %v on %d workers (%.0f commands/s with checks); ends: %v",
		n, first, first+n-1, commands.Load(), violations.Load(), el.Round(time.Millisecond), workers,
		float64(commands.Load())/el.Seconds(), rs)
}

func TestRandomPlay(t *testing.T) {
	first := envUint(t, "MATCHGRAIN_SEED", 1)
	games := envUint(t, "MATCHGRAIN_GAMES", defaultGames)
	t.Run("Plain", func(t *testing.T) {
		runGames(t, first, games, fullChecks)
	})
	if os.Getenv("MATCHGRAIN_GAMES") != "" {
		return // a long run plays the plain variant only
	}
	t.Run("ServerFinish", func(t *testing.T) {
		opts := fullChecks
		opts.concede = true
		runGames(t, first+1<<32, defaultConcedeGames, opts)
	})
}
