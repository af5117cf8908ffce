package storetest

import (
	"testing"

	"github.com/matchgrain/matchgrain/persistence"
)

// Embedded opens an embedded store in the test's temporary directory and
// closes it when the test ends. Tests of the packages above the store use
// it where the store is not what they test: it needs no server, and a
// failed close (a writer that did not stop) still fails the test.
func Embedded(t testing.TB) *persistence.EmbeddedStore {
	t.Helper()
	s, err := persistence.OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close embedded store: %v", err)
		}
	})
	return s
}
