//go:build race

package grains_test

// raceEnabled: under the race detector the whole stack is several times
// slower, so the long e2e runs play fewer matches.
const raceEnabled = true
