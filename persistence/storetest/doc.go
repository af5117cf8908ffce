// Package storetest is the conformance suite every persistence.Store must
// pass: the same tests, run against PostgreSQL and the embedded store, so
// that the two can never drift apart in what callers rely on.
//
// The suite uses unique match and ticket ids in every subtest, so a store
// may be shared between subtests and with other tests. Subtests run in
// parallel.
package storetest
