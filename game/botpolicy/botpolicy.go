// Package botpolicy is the one bot move policy: how a bot picks among the legal
// intents of its seat. The match grain plays bot seats with it (a training
// match) and the test and load bots of client/bots play with it too.
//
// The grain's choice is a pure function of the match seed, the seat and the
// log position (Source), so that an activation that takes a match over in
// the middle of a bot's decision makes the choice the old one would have.
// That makes the policy part of what a match does: a change to Weight or
// Choose changes the play of every match with a bot seat, and must come
// with a new rules revision (actors.RulesRevision), like a rules change.
// A test in actors pins the policy to the revision.
//
// It imports only the protocol, so a client plays with it without linking
// the rules engine.
package botpolicy

import (
	"math/rand/v2"

	"github.com/matchgrain/matchgrain/protocol"
)

// Choose picks one of legal at random, in proportion to Weight; nil when no
// intent has weight (Concede is the only one left: the other player
// decides). rng is the caller's: the grain's is Source, a client's its own.
func Choose(legal []protocol.Intent, rng *rand.Rand) protocol.Intent {
	total := 0
	weights := make([]int, len(legal))
	for i, in := range legal {
		weights[i] = Weight(in)
		total += weights[i]
	}
	if total == 0 {
		return nil
	}
	r := rng.IntN(total)
	for i, w := range weights {
		if r < w {
			return legal[i]
		}
		r -= w
	}
	return nil
}

// Source is the generator of the grain's choice for seat at log position
// pos (the seq of the entry the choice will be): the same on every member.
func Source(seed uint64, pos int64, seat int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(pos)<<1|uint64(seat)))
}

// Weight makes random play purposeful enough to end: ride, call and attack
// are preferred to passing, boosts to plain attacks, and a bot never
// concedes.
func Weight(in protocol.Intent) int {
	switch in := in.(type) {
	case protocol.Concede:
		return 0
	case protocol.FinishMulligan:
		return 8
	case protocol.Ride:
		return 20
	case protocol.Call:
		return 4
	case protocol.ActivateAbility:
		return 2
	case protocol.EnterBattle:
		return 6
	case protocol.Attack:
		if in.BoosterSlot != nil {
			return 10
		}
		return 6
	case protocol.Guard:
		return 2
	case protocol.PassGuard:
		return 3
	case protocol.ResolveAbility:
		if in.Accept {
			return 3
		}
		return 1
	case protocol.EndTurn:
		return 2
	default:
		// Mulligan, SkipRide, Move, Intercept and whatever comes next.
		return 1
	}
}
