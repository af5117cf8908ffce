package grains

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/game/catalog"
	"github.com/matchgrain/matchgrain/persistence"
)

// DeckInfos lists the starter decks the game's grains accept, for the
// edge's deck list (edge.Config.Decks).
func DeckInfos() []edge.DeckInfo {
	var out []edge.DeckInfo
	for _, d := range catalog.Decks() {
		out = append(out, edge.DeckInfo{ID: string(d.ID), Name: d.Name, Cards: d.Cards})
	}
	return out
}

// UseOnce is the edge's single-use check of friend invites
// (edge.Config.UseOnce) on the store's used tickets, so that an invite is
// used once across every edge of the cluster.
func UseOnce(store persistence.Store) func(ctx context.Context, id string, expires time.Time, claimant string) error {
	return func(ctx context.Context, id string, expires time.Time, claimant string) error {
		err := store.ConsumeTicket(ctx, id, expires, claimant)
		if errors.Is(err, persistence.ErrTicketUsed) {
			return fmt.Errorf("%w: %w", edge.ErrTicketUsed, err)
		}
		return err
	}
}
