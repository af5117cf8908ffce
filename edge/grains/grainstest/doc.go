// Package grainstest runs the real match grains behind an edge.Matches for
// the length of one test, in the manner of net/http/httptest: NewMatches
// starts a single cluster member in this process on random 127.0.0.1 ports,
// hosting match grains of the real game, reached through grains.Gateway,
// which is the edge.Matches; the test's cleanup stops everything it started.
//
// One member is the configuration that is race-clean in one process
// (docs/cluster.md §6). The store is the caller's when Options.Store is set,
// otherwise an embedded store in t.TempDir() that the cleanup closes after
// the member is gone.
//
// It is for tests only; production wiring lives in cmd/matchd.
package grainstest
