package persistence_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/persistence/storetest"
)

// openMembers opens n stores on one schema, each with its own pool, as n
// members sharing a database would.
func openMembers(t *testing.T, n int) []*persistence.PostgresStore {
	t.Helper()
	schema := pgtest.NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]*persistence.PostgresStore, n)
	for i := range out {
		s, err := persistence.OpenPostgres(ctx, pgtest.URL(t), persistence.WithSchema(schema),
			persistence.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("open member %d: %v", i, err)
		}
		t.Cleanup(func() { _ = s.Close() }) // closing twice is harmless
		out[i] = s
	}
	return out
}

// TestPGClusterKeyCreatedOnce: members starting together, each with its own
// candidate, end up with one and the same key.
func TestPGClusterKeyCreatedOnce(t *testing.T) {
	t.Parallel()
	members := openMembers(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const perMember = 4
	var wg sync.WaitGroup
	errs := make(chan error, len(members)*perMember)
	for i, m := range members {
		for j := range perMember {
			wg.Add(1)
			go func() {
				defer wg.Done()
				candidate := bytes.Repeat([]byte{byte(i*perMember + j + 1)}, 32)
				errs <- m.EnsureKey(ctx, "ticket", candidate)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("EnsureKey: %v", err)
		}
	}
	var first []byte
	for i, m := range members {
		kr, err := m.KeyRing(ctx, "ticket", time.Minute)
		if err != nil {
			t.Fatalf("member %d KeyRing: %v", i, err)
		}
		if kr.Current.Generation != 1 || len(kr.Accept) != 0 {
			t.Fatalf("member %d: generation %d, %d more accepted; want generation 1 alone", i, kr.Current.Generation, len(kr.Accept))
		}
		if first == nil {
			first = kr.Current.Secret
		} else if !bytes.Equal(first, kr.Current.Secret) {
			t.Fatalf("member %d sees another key than member 0", i)
		}
	}
	if _, err := members[0].KeyRing(ctx, "other", time.Minute); err == nil {
		t.Fatal("KeyRing of a purpose without keys: no error")
	}
}

// TestPGClusterKeyRotation walks one rotation through its phases: published
// but not active (accepted, not used), active (used; the old one still
// accepted for the overlap), and after the overlap (old one refused).
func TestPGClusterKeyRotation(t *testing.T) {
	t.Parallel()
	members := openMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if err := members[0].EnsureKey(ctx, "ticket", k1); err != nil {
		t.Fatal(err)
	}
	// Not due: the newest key is younger than an hour.
	if g, err := members[0].RotateKey(ctx, "ticket", k2, 0, time.Hour); err != nil || g != 0 {
		t.Fatalf("rotation not due: generation %d, err %v", g, err)
	}
	// Three members rotate at once: exactly one publishes generation 2.
	const activateAfter, overlap = 1500 * time.Millisecond, 1500 * time.Millisecond
	var wg sync.WaitGroup
	gens := make([]int64, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := m.RotateKey(ctx, "ticket", bytes.Repeat([]byte{byte(10 + i)}, 32), activateAfter, 0)
			if err != nil {
				t.Errorf("member %d rotate: %v", i, err)
			}
			gens[i] = g
		}()
	}
	wg.Wait()
	won := 0
	for _, g := range gens {
		switch g {
		case 0:
		case 2:
			won++
		default:
			t.Fatalf("rotation made generation %d", g)
		}
	}
	// A concurrent rotation loses on the primary key or, if the winner
	// committed first, finds generation 2 still waiting to become active.
	// check polls, for at most within, until the key ring is the wanted one:
	// activation and retirement follow the database's clock.
	check := func(phase string, within time.Duration, wantCurrent int64, wantAccept ...int64) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			kr, err := members[1].KeyRing(ctx, "ticket", overlap)
			if err != nil {
				t.Fatalf("%s: %v", phase, err)
			}
			var acc []int64
			for _, v := range kr.Accept {
				acc = append(acc, v.Generation)
			}
			if kr.Current.Generation == wantCurrent && fmt.Sprint(acc) == fmt.Sprint(wantAccept) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: current %d, accepted %v; want %d and %v", phase, kr.Current.Generation, acc, wantCurrent, wantAccept)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent rotations published generation 2 (%v), want exactly 1", won, len(members), gens)
	}
	check("published", 0, 1, 2)
	check("active", activateAfter+5*time.Second, 2, 1)
	check("after the overlap", overlap+5*time.Second, 2)
}

// TestPGClusterKeysConformance runs the suite the embedded store passes too.
func TestPGClusterKeysConformance(t *testing.T) {
	t.Parallel()
	storetest.RunClusterKeys(t, func(t *testing.T) persistence.ClusterKeys { return pgtest.NewStore(t) })
}
