//go:build !race

package protocol

// raceEnabled: see race_test.go.
const raceEnabled = false
