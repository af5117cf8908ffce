package grains_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client/bots"
)

// eventOnlyMatches is how many full matches TestE2EEventOnlyClients plays,
// half over WebSocket, half over TCP (about 80 s on a shared 2-core
// machine: go test -run TestE2EEventOnlyClients ./edge/grains);
// eventOnlyMatchesRace under the race detector (make test), where the stack
// is several times slower and heavy request traffic makes protoactor's
// Future report a race of its own (a timed-out request meeting its answer).
const (
	eventOnlyMatches     = 50
	eventOnlyMatchesRace = 4
)

// TestE2EEventOnlyClients plays full matches with bots that keep their whole
// view from events and act on the legal intents of the Decision event alone
// (docs/protocol.md §13), over the real stack (edge, gateway, grain, real
// engine), dropping their connections at random and mostly right after
// SelectTrigger, ResolveAbility(accept=true) and FinishMulligan. In verify
// mode each bot also asks for a snapshot after every batch, including the
// batch that follows every resume, and the session compares its Board with
// it. It fails if any Board differs from a snapshot at the same eventSeq,
// if an intent chosen from the Board is rejected as Stale or Illegal, or if
// the drops did not happen.
func TestE2EEventOnlyClients(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	rs := randomSeed(t)
	matches := eventOnlyMatches
	if raceEnabled {
		matches = eventOnlyMatchesRace
	}
	t.Logf("random seed %d (MATCHGRAIN_SEED replays it), %d matches", rs, matches)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var (
		mu                                  sync.Mutex
		checked, reconnects, intents, stale int
		errs                                []error
		wg                                  sync.WaitGroup
		sem                                 = make(chan struct{}, 8)
	)
	for i := range matches {
		transport := []string{"ws", "tcp"}[i%2]
		seed := rs + uint64(i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			run, err := bots.PlayMatch(ctx, h.admin, bots.MatchOptions{
				GameAddr: h.gameAddr(transport), Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: seed,
				Timeout: 3 * time.Minute, Chaos: true, Verify: true, Logger: discardLog(),
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("match %d over %s (seed %d): %w", i, transport, seed, err))
				return
			}
			for _, r := range run.Results {
				checked += r.ViewChecked
				reconnects += r.Reconnects
				intents += r.Intents
				stale += r.Rejected
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d matches: %d intents, %d reconnects, %d snapshots compared with the Boards, %d rejected intents",
		matches, intents, reconnects, checked, stale)
	if checked < matches*2*10 {
		t.Errorf("only %d snapshots compared with the Boards", checked)
	}
	if reconnects < matches {
		t.Errorf("only %d reconnects in %d matches: the drops did not happen", reconnects, matches)
	}
	if stale > 0 {
		t.Errorf("%d intents chosen from the Board were rejected", stale)
	}
}
