package ops

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence"
)

// MaxLiveMatches bounds the live matches one GET /api/admin/matches inspects.
const MaxLiveMatches = 200

// Overview is the answer of GET /api/admin/matches: the unfinished matches
// (at most MaxLiveMatches) with their grains' status, the members with how
// many of them each owns, and this member's recent takeovers.
type Overview struct {
	At        time.Time         `json:"at"`
	Self      string            `json:"self"`
	Members   []OverviewMember  `json:"members"`
	Matches   []MatchEntry      `json:"matches"`
	Truncated bool              `json:"truncated"`
	Takeovers []actors.Takeover `json:"takeovers"`
}

// OverviewMember is one member and the listed matches it owns.
type OverviewMember struct {
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

func (a *api) matches(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ov, err := a.overview(ctx)
	if err != nil {
		a.unavailable(w, "list unfinished matches", err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, ov)
}

func (a *api) overview(ctx context.Context) (*Overview, error) {
	ov := &Overview{At: time.Now().UTC(), Self: a.Node.ID(), Members: []OverviewMember{}, Takeovers: []actors.Takeover{}}
	var err error
	if ov.Matches, ov.Truncated, err = a.live(ctx, MaxLiveMatches); err != nil {
		return nil, err
	}
	perOwner := map[string]int{}
	for _, m := range ov.Matches {
		perOwner[m.Owner]++
	}
	for _, m := range a.Node.Members() {
		ov.Members = append(ov.Members, OverviewMember{Member: m, Matches: perOwner[m.ID]})
	}
	sort.Slice(ov.Members, func(i, j int) bool { return ov.Members[i].ID < ov.Members[j].ID })
	if a.Takeovers != nil {
		ov.Takeovers = append(ov.Takeovers, a.Takeovers()...)
	}
	return ov, nil
}

// live lists up to max unfinished matches from the store, each with its
// grain's status when it answers in time; truncated says there were more.
func (a *api) live(ctx context.Context, max int) (out []MatchEntry, truncated bool, err error) {
	out = []MatchEntry{}
	after := ""
	for len(out) < max {
		page, err := a.Store.ListUnfinished(ctx, after, 100)
		if err != nil {
			return nil, false, err
		}
		for _, m := range page {
			if len(out) == max {
				truncated = true
				break
			}
			out = append(out, MatchEntry{MatchID: m.MatchID, Owner: m.Owner, Epoch: m.Epoch})
		}
		if len(page) < 100 {
			break
		}
		after = page[len(page)-1].MatchID
	}
	// Ask the grains in parallel, a few at a time, each briefly: a match
	// that is moving shows its store row and the error.
	var g errgroup.Group
	g.SetLimit(8)
	for i := range out {
		e := &out[i]
		g.Go(func() error {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			st, err := a.Status(sctx, e.MatchID)
			if err != nil {
				e.Error = err.Error() // shown with the match's row, not a failure of the list
				return nil
			}
			e.Status = st
			e.Owner, e.Epoch = st.Owner, st.Epoch
			return nil
		})
	}
	_ = g.Wait()
	return out, truncated, nil
}

// MatchInfo is the answer of GET /api/admin/matches/{id}: the store's row of
// a match and the state its log rebuilds.
type MatchInfo struct {
	MatchID     string    `json:"matchId"`
	Owner       string    `json:"owner"`
	OwnerInView bool      `json:"ownerInView"`
	Epoch       int64     `json:"epoch"`
	LastSeq     int64     `json:"logSeq"`
	Finished    bool      `json:"finished"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	SnapshotSeq int64     `json:"snapshotSeq"`
	// State is rebuilt from the log (as matchctl replay does).
	State *actors.Replay `json:"state,omitempty"`
	// StateError says why the state could not be rebuilt.
	StateError string `json:"stateError,omitempty"`
}

// read answers the request itself (ok false) unless the match's row could be
// read; rerr is why its state could not be rebuilt.
func (a *api) read(w http.ResponseWriter, r *http.Request) (rec persistence.MatchRecord, rep *actors.Replay, rerr error, ok bool) {
	in, ok := a.inspector(w)
	if !ok {
		return rec, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rec, err := in.ReadMatch(ctx, r.PathValue("id"))
	if errors.Is(err, persistence.ErrMatchNotFound) {
		edge.WriteError(w, http.StatusNotFound, "match_not_found", "no such match")
		return rec, nil, nil, false
	}
	if err != nil {
		a.unavailable(w, "read match", err)
		return rec, nil, nil, false
	}
	replay, err := actors.ReplayMatch(a.Rules, a.Timing, rec.Meta, rec.Snapshot, rec.Log)
	if err != nil {
		return rec, nil, err, true
	}
	return rec, &replay, nil, true
}

func (a *api) match(w http.ResponseWriter, r *http.Request) {
	rec, rep, rerr, ok := a.read(w, r)
	if !ok {
		return
	}
	mi := MatchInfo{MatchID: rec.MatchID, Owner: rec.Owner, Epoch: rec.Epoch, LastSeq: rec.LastSeq,
		Finished: rec.Finished, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, State: rep}
	if rec.Snapshot != nil {
		mi.SnapshotSeq = rec.Snapshot.Seq
	}
	for _, m := range a.Node.Members() {
		mi.OwnerInView = mi.OwnerInView || m.ID == rec.Owner
	}
	if rerr != nil {
		mi.StateError = rerr.Error()
	}
	edge.WriteJSON(w, http.StatusOK, mi)
}

func (a *api) replay(w http.ResponseWriter, r *http.Request) {
	_, rep, rerr, ok := a.read(w, r)
	if !ok {
		return
	}
	if rerr != nil {
		edge.WriteError(w, http.StatusUnprocessableEntity, "replay_failed", rerr.Error())
		return
	}
	edge.WriteJSON(w, http.StatusOK, rep)
}
