package web

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/persistence"
)

// ConsoleDeps is what the ops console's API reads. Every function must be
// safe for concurrent use.
type ConsoleDeps struct {
	// Authorized reports whether a request carries the admin token.
	Authorized func(*http.Request) bool
	// Self is this member's id; Members the cluster as this member sees it.
	Self    string
	Members func() []cluster.Member
	// Unfinished pages through the store's unfinished matches.
	Unfinished func(ctx context.Context, after string, limit int) ([]persistence.MatchInfo, error)
	// Status asks a match grain for its status.
	Status func(ctx context.Context, matchID string) (*actors.MatchStatus, error)
	// Takeovers are the recent takeovers of this member.
	Takeovers func() []actors.Takeover
}

// MaxConsoleMatches bounds the live matches one overview inspects.
const MaxConsoleMatches = 200

// Overview is the answer of GET /console/api/overview.
type Overview struct {
	At        time.Time         `json:"at"`
	Self      string            `json:"self"`
	Members   []MemberInfo      `json:"members"`
	Matches   []MatchEntry      `json:"matches"`
	Truncated bool              `json:"truncated"`
	Takeovers []actors.Takeover `json:"takeovers"`
}

// MemberInfo is one member and the unfinished matches the store says it owns.
type MemberInfo struct {
	cluster.Member
	Matches int `json:"matches"`
}

// MatchEntry is one unfinished match: the store's row and, if the grain
// answered in time, its status.
type MatchEntry struct {
	MatchID string              `json:"matchId"`
	Owner   string              `json:"owner"`
	Epoch   int64               `json:"epoch"`
	Status  *actors.MatchStatus `json:"status,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// ConsoleAPI serves GET /console/api/overview to holders of the admin token.
func ConsoleAPI(d ConsoleDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if d.Authorized == nil || !d.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="matchgrain"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": "missing or wrong bearer token"})
			return
		}
		if r.URL.Path != "/console/api/overview" {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "message": "no such endpoint"})
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed", "message": "use GET"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		ov, err := overview(ctx, d)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "unavailable", "message": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, ov)
	})
}

func overview(ctx context.Context, d ConsoleDeps) (*Overview, error) {
	ov := &Overview{At: time.Now().UTC(), Self: d.Self, Members: []MemberInfo{}, Matches: []MatchEntry{}, Takeovers: []actors.Takeover{}}
	after := ""
	for len(ov.Matches) < MaxConsoleMatches {
		page, err := d.Unfinished(ctx, after, 100)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if len(ov.Matches) == MaxConsoleMatches {
				ov.Truncated = true
				break
			}
			ov.Matches = append(ov.Matches, MatchEntry{MatchID: m.MatchID, Owner: m.Owner, Epoch: m.Epoch})
		}
		if len(page) < 100 {
			break
		}
		after = page[len(page)-1].MatchID
	}
	// Ask the grains in parallel, a few at a time, each briefly: a match
	// that is moving shows its store row and the error.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range ov.Matches {
		wg.Add(1)
		sem <- struct{}{}
		go func(e *MatchEntry) {
			defer wg.Done()
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			st, err := d.Status(sctx, e.MatchID)
			if err != nil {
				e.Error = err.Error()
				return
			}
			e.Status = st
			e.Owner, e.Epoch = st.Owner, st.Epoch
		}(&ov.Matches[i])
	}
	wg.Wait()
	perOwner := map[string]int{}
	for _, m := range ov.Matches {
		perOwner[m.Owner]++
	}
	for _, m := range d.Members() {
		ov.Members = append(ov.Members, MemberInfo{Member: m, Matches: perOwner[m.ID]})
	}
	sort.Slice(ov.Members, func(i, j int) bool { return ov.Members[i].ID < ov.Members[j].ID })
	if d.Takeovers != nil {
		ov.Takeovers = append(ov.Takeovers, d.Takeovers()...)
	}
	return ov, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may have gone
}
