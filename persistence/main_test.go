package persistence_test

import (
	"testing"

	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// TestMain gives the PostgreSQL tests a server: DATABASE_URL, or a
// throwaway one started for this binary.
func TestMain(m *testing.M) { pgtest.Main(m) }
