//go:build race

package protocol

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of pooled paths are only checked without it.
const raceEnabled = true
