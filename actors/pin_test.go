package actors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence/storetest"
)

// versionedToy is the toy engine under a rules version.
type versionedToy struct {
	ToyRules
	v string
}

func (r versionedToy) Version() string { return r.v }

// TestGrainRefusesOtherRulesVersion: a match created under rules v1 does not
// activate on a member running v2; the refusal names both versions, and
// nothing is written to the match's log. A member running v1 again plays it.
func TestGrainRefusesOtherRulesVersion(t *testing.T) {
	store := storetest.Embedded(t)
	v1 := startTestNodeRules(t, fastTiming(), store, versionedToy{v: "toy/1"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := v1.createMatch(ctx, nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	v1.node.Kill()

	v2 := startTestNodeRules(t, fastTiming(), store, versionedToy{v: "toy/2"})
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer wcancel()
	_, err = v2.matchExists(wctx, id)
	if err == nil || !errors.Is(err, errUnavailable) || !strings.Contains(err.Error(), "pinned to toy/1, this member runs toy/2") {
		t.Fatalf("activation under other rules: %v, want Unavailable naming both versions", err)
	}
	rec, err := store.Claim(ctx, id, "inspector")
	if err != nil {
		t.Fatal(err)
	}
	if rec.LastSeq() != 0 {
		t.Fatalf("the refused activation wrote %d log entries", rec.LastSeq())
	}
	v2.node.Kill()

	again := startTestNodeRules(t, fastTiming(), store, versionedToy{v: "toy/1"})
	if ok, err := again.matchExists(ctx, id); err != nil || !ok {
		t.Fatalf("the match under its own rules: exists=%v err=%v", ok, err)
	}
}
