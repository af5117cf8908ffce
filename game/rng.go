package game

import (
	"math/bits"
	"math/rand/v2"
)

// rng is the match's only source of randomness (docs/rules.md §13): a PCG from
// math/rand/v2 of which only Uint64 is used. Bounded integers and shuffles are
// implemented here so that replays never depend on library helpers a Go
// release could change.
type rng struct {
	pcg rand.PCG
}

// newRNG seeds the generator: PCG state (hi = seed, lo = 0).
func newRNG(seed uint64) rng {
	var r rng
	r.pcg.Seed(seed, 0)
	return r
}

// bounded returns a uniform integer in [0, n) by Lemire's multiply-and-reject
// (nearly divisionless) method. n must be ≥ 1.
func (r *rng) bounded(n uint64) uint64 {
	hi, lo := bits.Mul64(r.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), n)
		}
	}
	return hi
}

// shuffle is Fisher–Yates: i from len-1 down to 1, j = bounded(i+1). A slice
// of length 0 or 1 consumes nothing.
func shuffle[T any](r *rng, s []T) {
	for i := len(s) - 1; i >= 1; i-- {
		j := r.bounded(uint64(i + 1))
		s[i], s[j] = s[j], s[i]
	}
}
