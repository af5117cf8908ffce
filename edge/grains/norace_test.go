//go:build !race

package grains_test

const raceEnabled = false
