package actors

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// ErrBadRequest: the request is invalid (unknown deck, bad seat).
var ErrBadRequest = errors.New("bad request")

// MatchSpec describes a match to create.
type MatchSpec struct {
	// Names are the players' display names, Decks their deck ids.
	Names, Decks [2]string
	// Bots marks the seats the match grain plays itself (a training match);
	// no connection can take such a seat.
	Bots [2]bool
	// Guests marks the seats left for a player who joins later (a friend
	// match): the decision clock is held until each has attached once.
	Guests [2]bool
	// Seed is the engine seed; nil picks a random one.
	Seed *uint64
}

// CreateMatch validates spec's decks against rules and records the match
// (seat kinds and rules version included) durably in store, returning its
// new id. It does not wake the match's grain: the caller does, so that its
// clocks and bots run from now (a match left asleep loses nothing, its
// clocks run from CreatedAt). The match's record is the grain's own format,
// so only this package writes it.
func CreateMatch(ctx context.Context, store persistence.Store, rules Rules, spec MatchSpec) (string, error) {
	names, decks := spec.Names, spec.Decks
	var s uint64
	if spec.Seed != nil {
		s = *spec.Seed
	} else {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("match seed: %w", err)
		}
		s = binary.LittleEndian.Uint64(b[:])
	}
	if _, _, err := rules.New(s, decks); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	id, err := newMatchID()
	if err != nil {
		return "", err
	}
	meta, err := encodeMatchMeta(matchMeta{Names: names, Decks: decks, Seed: s, CreatedAt: time.Now().UnixMilli(),
		Bots: spec.Bots, Guests: spec.Guests}, rules)
	if err != nil {
		return "", err
	}
	if err := store.CreateMatch(ctx, id, meta); err != nil {
		return "", fmt.Errorf("create match %s: %w", id, err)
	}
	return id, nil
}

func newMatchID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("match id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
