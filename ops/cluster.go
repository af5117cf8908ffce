package ops

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
)

// MemberInfo is one member of GET /api/admin/cluster.
type MemberInfo struct {
	ID      string   `json:"id"`
	Address string   `json:"address"`
	Kinds   []string `json:"kinds"`
	// Matches is how many unfinished matches the store says this member
	// claimed last (its grains, running or to be reclaimed).
	Matches int  `json:"matches"`
	Self    bool `json:"self,omitempty"`
	// RulesVersion and Build are what the member itself answered when
	// asked (cluster.Node.Describe): the rules it runs (a match pinned to
	// other rules does not activate there) and its binary's build.
	RulesVersion string `json:"rulesVersion,omitempty"`
	Build        string `json:"build,omitempty"`
	// InfoError says why the member did not answer (gone, an older build,
	// or another member id now answers at its address).
	InfoError string `json:"infoError,omitempty"`
}

// ClusterInfo is the answer of GET /api/admin/cluster.
type ClusterInfo struct {
	// Version is the rules version the answering member runs; a member
	// refuses matches pinned to another one. Every member's own is in
	// Members.
	Version string       `json:"rulesVersion"`
	Members []MemberInfo `json:"members"`
	// Elsewhere counts unfinished matches whose last owner is not in this
	// member's view (a member that died or left; the reclaimer moves them).
	Elsewhere int `json:"matchesOfOtherOwners"`
}

func (a *api) cluster(w http.ResponseWriter, r *http.Request) {
	in, ok := a.inspector(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	counts, err := in.OwnerCounts(ctx)
	if err != nil {
		a.unavailable(w, "count matches per owner", err)
		return
	}
	info := ClusterInfo{Version: actors.RulesVersion(a.Rules)}
	for _, m := range a.Node.Members() {
		info.Members = append(info.Members, MemberInfo{ID: m.ID, Address: m.Address, Kinds: m.Kinds,
			Matches: counts[m.ID], Self: m.ID == a.Node.ID()})
		delete(counts, m.ID)
	}
	for _, n := range counts {
		info.Elsewhere += n
	}
	// Every member describes itself, all at once: one slow or departed
	// member costs the answer at most Describe's bound.
	var wg sync.WaitGroup
	for i := range info.Members {
		wg.Add(1)
		go func(m *MemberInfo) {
			defer wg.Done()
			d, err := a.Node.Describe(ctx, m.Address)
			switch {
			case err != nil:
				m.InfoError = err.Error()
			case d[cluster.InfoMember] != m.ID:
				m.InfoError = fmt.Sprintf("member %s answers at this address", d[cluster.InfoMember])
			default:
				m.RulesVersion, m.Build = d[InfoRules], d[InfoBuild]
			}
		}(&info.Members[i])
	}
	wg.Wait()
	edge.WriteJSON(w, http.StatusOK, info)
}
