//go:build race

package client_test

// raceEnabled: the race detector slows the rules engine about tenfold, so
// the random-play tests play fewer games under it.
const raceEnabled = true
