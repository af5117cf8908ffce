package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/storetest"
)

// node is a member alone in its view.
type node struct{}

func (node) ID() string { return "m1" }
func (node) Members() []cluster.Member {
	return []cluster.Member{{ID: "m1", Address: "127.0.0.1:1", Kinds: []string{actors.MatchKind}}}
}
func (node) Describe(context.Context, string) (map[string]string, error) {
	return map[string]string{cluster.InfoMember: "m1"}, nil
}

func get(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: %d %q is not a JSON object: %v", path, rec.Code, rec.Body, err)
	}
	return rec.Code, body
}

// TestHandler: the live matches come from the real embedded store with
// each grain's status (or why it did not answer); a match reads whole from
// it; a store that cannot read one says so; unknown paths answer the edge's
// JSON 404.
func TestHandler(t *testing.T) {
	store := storetest.Embedded(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if err := store.CreateMatch(ctx, id, []byte("meta")); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Claim(ctx, id, "m1"); err != nil {
			t.Fatal(err)
		}
	}
	h := ops.Handler(ops.Deps{Node: node{}, Store: store, Rules: actors.GameRules{}, Timing: actors.DefaultTiming(),
		Status: func(_ context.Context, id string) (*actors.MatchStatus, error) {
			if id == "b" {
				return nil, errors.New("moving")
			}
			return &actors.MatchStatus{MatchID: id, Owner: "m1", Epoch: 1}, nil
		},
	})

	code, body := get(t, h, "/api/admin/matches")
	matches, _ := body["matches"].([]any)
	if code != http.StatusOK || len(matches) != 2 || body["self"] != "m1" {
		t.Fatalf("live matches: %d %v", code, body)
	}
	first, second := matches[0].(map[string]any), matches[1].(map[string]any)
	if first["status"] == nil || second["error"] != "moving" {
		t.Fatalf("grain answers not shown: %v", matches)
	}
	members, _ := body["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["matches"] != 2.0 {
		t.Fatalf("members: %v", members)
	}

	// The embedded store reads a match whole, like PostgreSQL.
	if code, body := get(t, h, "/api/admin/cluster"); code != http.StatusOK || body["matchesOfOtherOwners"] != 0.0 {
		t.Errorf("cluster: %d %v", code, body)
	}
	if code, body := get(t, h, "/api/admin/matches/a"); code != http.StatusOK || body["matchId"] != "a" ||
		body["owner"] != "m1" || body["epoch"] != 1.0 || body["finished"] != false {
		t.Errorf("match a: %d %v", code, body)
	}

	// A store that cannot read a match whole says so.
	blind := ops.Handler(ops.Deps{Node: node{}, Store: struct{ persistence.Store }{store}, Rules: actors.GameRules{},
		Timing: actors.DefaultTiming()})
	for path, want := range map[string]string{
		"/api/admin/cluster":          "not_supported",
		"/api/admin/matches/a":        "not_supported",
		"/api/admin/matches/a/replay": "not_supported",
		"/api/admin/else":             "not_found",
	} {
		_, body := get(t, blind, path)
		if msg, _ := body["message"].(string); body["error"] != want || msg == "" {
			t.Errorf("%s: %v, want error %s", path, body, want)
		}
	}
	for path, want := range map[string]string{
		"/api/admin/matches/zz":        "match_not_found",
		"/api/admin/matches/zz/replay": "match_not_found",
		"/api/admin/else":              "not_found",
	} {
		_, body := get(t, h, path)
		if msg, _ := body["message"].(string); body["error"] != want || msg == "" {
			t.Errorf("%s: %v, want error %s", path, body, want)
		}
	}
}
