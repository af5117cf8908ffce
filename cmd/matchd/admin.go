package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/persistence"
)

// adminAPI serves the operator endpoints under /api/admin/ (matchctl
// cluster, match, replay; docs/operations.md §4). They need the same bearer
// token as the rest of /api and only read: nothing here claims or writes a
// match.
type adminAPI struct {
	token  string
	node   *cluster.Node
	store  persistence.Store
	rules  actors.Rules
	timing actors.Timing
	log    *slog.Logger
}

// wrap serves /api/admin/ and hands every other request to next.
func (a *adminAPI) wrap(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/admin/cluster", a.cluster)
	mux.HandleFunc("GET /api/admin/matches/{id}", a.match)
	mux.HandleFunc("GET /api/admin/matches/{id}/replay", a.replay)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/admin/") {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			writeJSON(w, http.StatusUnauthorized, apiError{"unauthorized", "missing or wrong bearer token"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

// Keys of the description every member gives of itself (cluster.Config.Info).
const (
	infoRules = "rulesVersion"
	infoBuild = "build"
)

type memberInfo struct {
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

type clusterInfo struct {
	// Version is the rules version the answering member runs; a member
	// refuses matches pinned to another one. Every member's own is in
	// Members.
	Version string       `json:"rulesVersion"`
	Members []memberInfo `json:"members"`
	// Elsewhere counts unfinished matches whose last owner is not in this
	// member's view (a member that died or left; the reclaimer moves them).
	Elsewhere int `json:"matchesOfOtherOwners"`
}

func (a *adminAPI) inspector(w http.ResponseWriter) (persistence.Inspector, bool) {
	in, ok := a.store.(persistence.Inspector)
	if !ok {
		writeJSON(w, http.StatusNotImplemented, apiError{"not_supported", "needs the PostgreSQL store (--database-url)"})
	}
	return in, ok
}

func (a *adminAPI) cluster(w http.ResponseWriter, r *http.Request) {
	in, ok := a.inspector(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	counts, err := in.OwnerCounts(ctx)
	if err != nil {
		a.log.Warn("admin cluster", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{"unavailable", "store unavailable"})
		return
	}
	info := clusterInfo{Version: actors.RulesVersion(a.rules)}
	for _, m := range a.node.Members() {
		info.Members = append(info.Members, memberInfo{ID: m.ID, Address: m.Address, Kinds: m.Kinds,
			Matches: counts[m.ID], Self: m.ID == a.node.ID()})
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
		go func(m *memberInfo) {
			defer wg.Done()
			d, err := a.node.Describe(ctx, m.Address)
			switch {
			case err != nil:
				m.InfoError = err.Error()
			case d[cluster.InfoMember] != m.ID:
				m.InfoError = fmt.Sprintf("member %s answers at this address", d[cluster.InfoMember])
			default:
				m.RulesVersion, m.Build = d[infoRules], d[infoBuild]
			}
		}(&info.Members[i])
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, info)
}

// matchInfo is the store's row of a match and the state its log rebuilds.
type matchInfo struct {
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

func (a *adminAPI) read(w http.ResponseWriter, r *http.Request) (persistence.MatchRecord, *actors.Replay, error, bool) {
	in, ok := a.inspector(w)
	if !ok {
		return persistence.MatchRecord{}, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rec, err := in.ReadMatch(ctx, r.PathValue("id"))
	if errors.Is(err, persistence.ErrMatchNotFound) {
		writeJSON(w, http.StatusNotFound, apiError{"match_not_found", "no such match"})
		return rec, nil, nil, false
	}
	if err != nil {
		a.log.Warn("admin read match", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{"unavailable", "store unavailable"})
		return rec, nil, nil, false
	}
	rep, err := actors.ReplayMatch(a.rules, a.timing, rec.Meta, rec.Snapshot, rec.Log)
	if err != nil {
		return rec, nil, err, true
	}
	return rec, &rep, nil, true
}

func (a *adminAPI) match(w http.ResponseWriter, r *http.Request) {
	rec, rep, rerr, ok := a.read(w, r)
	if !ok {
		return
	}
	mi := matchInfo{MatchID: rec.MatchID, Owner: rec.Owner, Epoch: rec.Epoch, LastSeq: rec.LastSeq,
		Finished: rec.Finished, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, State: rep}
	if rec.Snapshot != nil {
		mi.SnapshotSeq = rec.Snapshot.Seq
	}
	for _, m := range a.node.Members() {
		mi.OwnerInView = mi.OwnerInView || m.ID == rec.Owner
	}
	if rerr != nil {
		mi.StateError = rerr.Error()
	}
	writeJSON(w, http.StatusOK, mi)
}

func (a *adminAPI) replay(w http.ResponseWriter, r *http.Request) {
	_, rep, rerr, ok := a.read(w, r)
	if !ok {
		return
	}
	if rerr != nil {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{"replay_failed", rerr.Error()})
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
