package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// RunClusterKeys runs the conformance suite of persistence.ClusterKeys: one
// key per purpose however many callers race to create it, a rotation through
// its phases (published, active with the old key accepted, old key retired),
// and bad arguments refused. open returns a ready store for one subtest,
// closed by the caller's cleanup.
func RunClusterKeys(t *testing.T, open func(t *testing.T) persistence.ClusterKeys) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s persistence.ClusterKeys)
	}{
		{"CreatedOnce", testKeyCreatedOnce},
		{"Rotation", testKeyRotation},
		{"InvalidArguments", testKeyInvalidArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func testKeyCreatedOnce(t *testing.T, s persistence.ClusterKeys) {
	ctx := testContext(t)
	purpose := newID(t, "purpose")
	if _, err := s.KeyRing(ctx, purpose, time.Minute); !errors.Is(err, persistence.ErrNoKey) {
		t.Fatalf("KeyRing before any key: err = %v, want ErrNoKey", err)
	}
	if g, err := s.RotateKey(ctx, purpose, []byte("k"), 0, 0); err != nil || g != 0 {
		t.Fatalf("RotateKey before any key: generation %d, err %v; want 0 and no error", g, err)
	}
	const callers = 8
	errs := make([]error, callers)
	parallel(callers, func(i int) {
		errs[i] = s.EnsureKey(ctx, purpose, bytes.Repeat([]byte{byte(i + 1)}, 32))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("EnsureKey %d: %v", i, err)
		}
	}
	kr := mustKeyRing(t, s, purpose, time.Minute)
	if kr.Current.Generation != 1 || len(kr.Accept) != 0 || len(kr.Current.Secret) != 32 {
		t.Fatalf("after %d EnsureKey: generation %d with %d bytes, %d more accepted; want generation 1 (32 bytes) alone",
			callers, kr.Current.Generation, len(kr.Current.Secret), len(kr.Accept))
	}
	first := kr.Current.Secret
	if err := s.EnsureKey(ctx, purpose, bytes.Repeat([]byte{0xee}, 32)); err != nil {
		t.Fatalf("EnsureKey with a key present: %v", err)
	}
	if kr := mustKeyRing(t, s, purpose, time.Minute); !bytes.Equal(kr.Current.Secret, first) {
		t.Fatal("EnsureKey replaced an existing key")
	}
	if _, err := s.KeyRing(ctx, newID(t, "other"), time.Minute); !errors.Is(err, persistence.ErrNoKey) {
		t.Fatalf("KeyRing of another purpose: err = %v, want ErrNoKey", err)
	}
}

func testKeyRotation(t *testing.T, s persistence.ClusterKeys) {
	ctx := testContext(t)
	purpose := newID(t, "purpose")
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	if err := s.EnsureKey(ctx, purpose, k1); err != nil {
		t.Fatal(err)
	}
	if g, err := s.RotateKey(ctx, purpose, k2, 0, time.Hour); err != nil || g != 0 {
		t.Fatalf("rotation not due (key younger than an hour): generation %d, err %v", g, err)
	}
	// Long enough to see the published phase on a loaded machine; the
	// later phases are polled for.
	const activateAfter, overlap = 3 * time.Second, time.Second
	if g, err := s.RotateKey(ctx, purpose, k2, activateAfter, 0); err != nil || g != 2 {
		t.Fatalf("due rotation: generation %d, err %v; want 2", g, err)
	}
	if g, err := s.RotateKey(ctx, purpose, k3, 0, 0); err != nil || g != 0 {
		t.Fatalf("rotation while generation 2 waits to become active: generation %d, err %v; want 0", g, err)
	}
	phase := func(kr persistence.KeyRing) string {
		gens := make([]int64, len(kr.Accept))
		for i, v := range kr.Accept {
			gens[i] = v.Generation
		}
		return fmt.Sprintf("current %d, accepted %v", kr.Current.Generation, gens)
	}
	kr := mustKeyRing(t, s, purpose, overlap)
	if got, want := phase(kr), "current 1, accepted [2]"; got != want {
		t.Fatalf("published: %s; want %s", got, want)
	}
	if !bytes.Equal(kr.Current.Secret, k1) || !bytes.Equal(kr.Accept[0].Secret, k2) {
		t.Fatal("published: the secrets are not the ones given")
	}
	waitFor(t, func() bool { return phase(mustKeyRing(t, s, purpose, overlap)) != "current 1, accepted [2]" }, "generation 2 is active")
	// The overlap is measured from generation 2's activation; a slow
	// machine may already be past it.
	if got := phase(mustKeyRing(t, s, purpose, overlap)); got != "current 2, accepted [1]" && got != "current 2, accepted []" {
		t.Fatalf("active: %s; want current 2 with 1 still accepted (or retired after the overlap)", got)
	}
	waitFor(t, func() bool { return phase(mustKeyRing(t, s, purpose, overlap)) == "current 2, accepted []" }, "generation 1 is retired")
	if kr := mustKeyRing(t, s, purpose, time.Hour); phase(kr) != "current 2, accepted [1]" {
		t.Fatalf("with an hour of overlap: %s; want generation 1 accepted again", phase(kr))
	}
}

func testKeyInvalidArguments(t *testing.T, s persistence.ClusterKeys) {
	ctx := testContext(t)
	purpose := newID(t, "purpose")
	if err := s.EnsureKey(ctx, "", []byte("k")); err == nil {
		t.Error("EnsureKey with an empty purpose: no error")
	}
	if err := s.EnsureKey(ctx, purpose, nil); err == nil {
		t.Error("EnsureKey with an empty secret: no error")
	}
	if _, err := s.KeyRing(ctx, purpose, time.Minute); !errors.Is(err, persistence.ErrNoKey) {
		t.Errorf("refused EnsureKey calls created a key: KeyRing err = %v", err)
	}
	if err := s.EnsureKey(ctx, purpose, []byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RotateKey(ctx, purpose, nil, 0, 0); err == nil {
		t.Error("RotateKey with an empty secret: no error")
	}
	if _, err := s.RotateKey(ctx, purpose, []byte("k2"), -time.Second, 0); err == nil {
		t.Error("RotateKey with a negative delay: no error")
	}
	if kr := mustKeyRing(t, s, purpose, time.Minute); kr.Current.Generation != 1 || len(kr.Accept) != 0 {
		t.Errorf("refused rotations changed the keys: generation %d, %d accepted", kr.Current.Generation, len(kr.Accept))
	}
}

func mustKeyRing(t *testing.T, s persistence.ClusterKeys, purpose string, overlap time.Duration) persistence.KeyRing {
	t.Helper()
	kr, err := s.KeyRing(testContext(t), purpose, overlap)
	if err != nil {
		t.Fatalf("KeyRing %s: %v", purpose, err)
	}
	return kr
}
