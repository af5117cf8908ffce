package clusterkeys_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/clusterkeys"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func gossipKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func identity(t *testing.T, name string, keys ...[]byte) [][]byte {
	t.Helper()
	ids, err := cluster.Security{GossipKeys: keys}.Identity(name)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestCheckIdentity: the first member records its cluster's identity in the
// database; members of that cluster start, also with a rotation's second
// key, after which the new key alone is the cluster's; a member with another
// key, another cluster name or no key is refused.
func TestCheckIdentity(t *testing.T) {
	store := pgtest.NewStore(t)
	ctx := context.Background()
	k1, k2, other := gossipKey(t), gossipKey(t), gossipKey(t)
	for _, c := range []struct {
		name    string
		ids     [][]byte
		foreign bool
	}{
		{"first member", identity(t, "c", k1), false},
		{"second member", identity(t, "c", k1), false},
		{"another key", identity(t, "c", other), true},
		{"another cluster name", identity(t, "d", k1), true},
		{"no key", identity(t, "c"), true},
		{"rotation: both keys", identity(t, "c", k2, k1), false},
		{"after the rotation: the new key", identity(t, "c", k2), false},
		{"another key still", identity(t, "c", other), true},
	} {
		err := clusterkeys.CheckIdentity(ctx, store, c.ids)
		if errors.Is(err, clusterkeys.ErrForeignCluster) != c.foreign || (err != nil && !c.foreign) {
			t.Fatalf("%s: %v, want foreign=%v", c.name, err, c.foreign)
		}
	}
	embedded, err := persistence.OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = embedded.Close() }()
	if err := clusterkeys.CheckIdentity(ctx, embedded, identity(t, "c", other)); err != nil {
		t.Fatalf("the embedded store serves one node: %v", err)
	}
}

// TestLoadEmbedded: a node without a token and a database keeps its
// generated admin token in a file only its owner reads and its ticket key in
// its store, and finds both again after a restart; a given token wins and
// writes nothing.
func TestLoadEmbedded(t *testing.T) {
	dir := t.TempDir()
	store, err := persistence.OpenEmbedded(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	ctx := context.Background()
	o := clusterkeys.Options{DataDir: dir, TicketTTL: time.Minute, Refresh: time.Second}
	first, err := clusterkeys.Load(ctx, o, store)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, clusterkeys.AdminTokenFile)
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 || first.AdminTokenAt != file || len(first.AdminToken) < 32 {
		t.Fatalf("token file %v %v, told %q, token length %d", fi, err, first.AdminTokenAt, len(first.AdminToken))
	}
	again, err := clusterkeys.Load(ctx, o, store)
	if err != nil || again.AdminToken != first.AdminToken || !bytes.Equal(again.TicketKey, first.TicketKey) || len(again.TicketKey) != clusterkeys.TicketKeyLen {
		t.Fatalf("restart: %v, token kept %v, ticket key kept %v (%d bytes)", err, again.AdminToken == first.AdminToken,
			bytes.Equal(again.TicketKey, first.TicketKey), len(again.TicketKey))
	}
	given := t.TempDir()
	o.DataDir, o.AdminToken = given, "given-token"
	s, err := clusterkeys.Load(ctx, o, store)
	if _, statErr := os.Stat(filepath.Join(given, clusterkeys.AdminTokenFile)); err != nil || s.AdminToken != "given-token" || statErr == nil {
		t.Fatalf("given token: %v, %q, file written: %v", err, s.AdminToken, statErr == nil)
	}
}

// TestSharedTicketKeysRotate: members on one database agree on the admin
// token and the ticket key, and a running member picks up the key a
// rotation publishes (polled, not slept for).
func TestSharedTicketKeysRotate(t *testing.T) {
	store := pgtest.NewStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := clusterkeys.Options{TicketTTL: time.Second, Refresh: 50 * time.Millisecond, Rotation: 300 * time.Millisecond}
	a, err := clusterkeys.Load(ctx, o, store)
	if err != nil {
		t.Fatal(err)
	}
	b, err := clusterkeys.Load(ctx, o, store)
	if err != nil {
		t.Fatal(err)
	}
	if a.AdminToken != b.AdminToken || !bytes.Equal(a.TicketKey, b.TicketKey) || !a.Shared() {
		t.Fatal("two members on one database disagree on their secrets")
	}
	var mu sync.Mutex
	var current []byte
	go a.RefreshTicketKeys(ctx, func(key []byte, _ ...[]byte) error {
		mu.Lock()
		defer mu.Unlock()
		current = bytes.Clone(key)
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		rotated := current != nil && !bytes.Equal(current, a.TicketKey)
		mu.Unlock()
		if rotated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the ticket key did not rotate within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
