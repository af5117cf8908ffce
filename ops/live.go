package ops

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/matchgrain/matchgrain/edge"
)

// MaxPublicLive bounds the matches GET /api/play/live lists.
const MaxPublicLive = 50

// LiveMatch is one match anyone may watch (docs/protocol.md §14): what the
// spectator page lists, nothing a spectator would not see.
type LiveMatch struct {
	MatchID    string    `json:"matchId"`
	Names      [2]string `json:"names"`
	Bots       [2]bool   `json:"bots"`
	Turn       int       `json:"turn"`
	Spectators int       `json:"spectators"`
}

// PublicLive serves edge.LivePath: the running matches of this cluster to
// watch, at most MaxPublicLive, those whose grain answered in time. It
// checks no token: the edge mounts it with public play (edge.Config.Live)
// and rate limits it.
func PublicLive(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	a := &api{d}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		entries, _, err := a.live(ctx, MaxPublicLive)
		if err != nil {
			a.unavailable(w, "list live matches", err)
			return
		}
		out := struct {
			Matches []LiveMatch `json:"matches"`
		}{Matches: []LiveMatch{}}
		for _, e := range entries {
			if st := e.Status; st != nil && !st.Finished {
				out.Matches = append(out.Matches, LiveMatch{MatchID: e.MatchID, Names: st.Names, Bots: st.Bots, Turn: st.Turn, Spectators: st.Spectators})
			}
		}
		edge.WriteJSON(w, http.StatusOK, out)
	})
}
