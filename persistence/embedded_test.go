package persistence_test

import (
	"path/filepath"
	"testing"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
)

func openEmbedded(t *testing.T, dir string) *persistence.EmbeddedStore {
	t.Helper()
	s, err := persistence.OpenEmbedded(dir)
	if err != nil {
		t.Fatalf("open embedded store in %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close embedded store: %v", err)
		}
	})
	return s
}

func TestEmbeddedConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) persistence.Store { return openEmbedded(t, t.TempDir()) })
}

func TestEmbeddedReopen(t *testing.T) {
	t.Parallel()
	storetest.RunReopen(t, func(t *testing.T) func() (persistence.Store, error) {
		dir := filepath.Join(t.TempDir(), "nested", "store")
		return func() (persistence.Store, error) { return persistence.OpenEmbedded(dir) }
	})
}

// TestEmbeddedSingleOpener refuses a second open of one directory while the
// first is open: two writers on one file would break fencing.
func TestEmbeddedSingleOpener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	openEmbedded(t, dir)
	s, err := persistence.OpenEmbedded(dir)
	if err == nil {
		_ = s.Close() // the test already failed; the close result adds nothing
		t.Fatal("second open of the same directory succeeded")
	}
}

func TestEmbeddedClusterKeys(t *testing.T) {
	t.Parallel()
	storetest.RunClusterKeys(t, func(t *testing.T) persistence.ClusterKeys { return openEmbedded(t, t.TempDir()) })
}

func TestEmbeddedInspector(t *testing.T) {
	t.Parallel()
	storetest.RunInspector(t, func(t *testing.T) storetest.InspectingStore { return openEmbedded(t, t.TempDir()) })
}
