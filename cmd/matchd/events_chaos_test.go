package main

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
)

// TestChaosEventOnlyBotsAcrossKill plays one full match with bots that keep
// their whole view from events (docs/protocol.md §13), through an edge-only
// member, dropping their connections at random (mostly right after the
// intents that only move a decision forward), and kills -9 the member that
// owns the match halfway through. In verify mode each bot compares its Board
// with a snapshot after every batch and every resume. It fails if a Board
// ever differs from a snapshot at the same eventSeq, if an intent chosen
// from a Board is rejected, or if the match did not move to the other
// member. Added time: about 30 s (3 processes, PostgreSQL).
func TestChaosEventOnlyBotsAcrossKill(t *testing.T) {
	cc := startChaosCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := uint64(17)
	done := make(chan struct{})
	var run bots.MatchRun
	var err error
	go func() {
		defer close(done)
		run, err = bots.PlayMatch(ctx, cc.admin, bots.MatchOptions{
			GameAddr: "ws://" + cc.edge.http + "/game", Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: seed,
			Timeout: 150 * time.Second, Chaos: true, Verify: true, Logger: slog.New(slog.DiscardHandler),
		})
	}()
	// Once the match has some log, kill its owner.
	var id, owner string
	var epoch int64
	clustertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		var n int64
		id, owner, epoch, n = cc.onlyMatch(t)
		if n < 20 {
			return fmt.Errorf("match %q has %d log entries", id, n)
		}
		return nil
	})
	victim := cc.procByMember(owner)
	if victim == nil {
		t.Fatalf("owner %s is not a match member", owner)
	}
	victim.kill()
	t.Logf("killed the owner of %s at epoch %d", id, epoch)
	<-done
	if err != nil {
		t.Fatalf("match across the kill: %v", err)
	}
	if newOwner, newEpoch := cc.owner(t, id); newOwner == owner || newEpoch <= epoch {
		t.Fatalf("owner %s epoch %d after the kill (was %s, %d)", newOwner, newEpoch, owner, epoch)
	}
	for seat, r := range run.Results {
		t.Logf("seat %d: %d intents, %d reconnects, %d snapshots compared with the Board", seat, r.Intents, r.Reconnects, r.ViewChecked)
		if r.ViewChecked == 0 || r.Rejected > 0 {
			t.Errorf("seat %d: %d snapshots compared, %d intents rejected", seat, r.ViewChecked, r.Rejected)
		}
	}
}

// onlyMatch is the one match of the cluster's schema: its id, owner, epoch
// and log length.
func (cc *chaosCluster) onlyMatch(t *testing.T) (id, owner string, epoch, logLen int64) {
	t.Helper()
	q := fmt.Sprintf("SELECT match_id, owner, epoch, last_seq FROM %s.matches", pgx.Identifier{cc.schema}.Sanitize())
	_ = scanRow(t, q, nil, &id, &owner, &epoch, &logLen) // none yet: zero values, polled again
	return id, owner, epoch, logLen
}
