package nemesis

import (
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// history is a clean two-intent match: acknowledged at seqs 3 and 5, both
// in the log, finished with both seats agreeing.
func history(t0 time.Time) (*History, map[string][]StoredEntry) {
	final := &protocol.MatchView{EventSeq: 9, Winner: 1}
	h := &History{
		Ops: []*Op{
			{Match: "m", Seat: 0, ID: "a", Sent: t0, Answered: t0.Add(time.Second), Accepted: true, Seq: 3},
			{Match: "m", Seat: 1, ID: "b", Sent: t0.Add(2 * time.Second), Answered: t0.Add(3 * time.Second), Accepted: true, Seq: 5},
		},
		Matches: []*Match{{ID: "m", Started: t0, Finished: t0.Add(4 * time.Second), Final: [2]*protocol.MatchView{final, final}}},
	}
	logs := map[string][]StoredEntry{"m": {
		{Seq: 1, Epoch: 1},
		{Seq: 2, Epoch: 1, IntentID: "a", Seat: 0},
		{Seq: 3, Epoch: 2},
		{Seq: 4, Epoch: 2, IntentID: "b", Seat: 1},
	}}
	return h, logs
}

func TestCheckHistoryClean(t *testing.T) {
	h, logs := history(time.Now())
	var v Verdict
	checkHistory(&v, h, logs)
	if v.violations() != 0 || v.Acknowledged != 2 {
		t.Fatalf("clean history judged %+v", v)
	}
}

// TestCheckHistoryFindsViolations breaks the clean history one way at a
// time and expects exactly the matching count to rise.
func TestCheckHistoryFindsViolations(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(h *History, logs map[string][]StoredEntry)
		count func(v *Verdict) int
	}{
		{"lost: acknowledged, not in the log", func(h *History, logs map[string][]StoredEntry) {
			logs["m"][3].IntentID = ""
		}, func(v *Verdict) int { return v.Lost }},
		{"lost: in the log of the other seat only", func(h *History, logs map[string][]StoredEntry) {
			logs["m"][3].Seat = 0
		}, func(v *Verdict) int { return v.Lost }},
		{"applied twice", func(h *History, logs map[string][]StoredEntry) {
			logs["m"][2] = StoredEntry{Seq: 3, Epoch: 2, IntentID: "a", Seat: 0}
		}, func(v *Verdict) int { return v.AppliedTwice }},
		{"gap", func(h *History, logs map[string][]StoredEntry) {
			logs["m"] = append(logs["m"][:2], logs["m"][3])
		}, func(v *Verdict) int { return v.LogGaps }},
		{"epoch drops", func(h *History, logs map[string][]StoredEntry) {
			logs["m"][3].Epoch = 1
		}, func(v *Verdict) int { return v.EpochDrops }},
		{"fork: one seq for two intents", func(h *History, logs map[string][]StoredEntry) {
			h.Ops[1].Seq = 3
		}, func(v *Verdict) int { return v.Forks }},
		{"fork: answered two ways", func(h *History, logs map[string][]StoredEntry) {
			h.answer(h.Ops[0], &protocol.ServerIntentResult{IntentID: "a", Accepted: true, EventSeq: 4}, time.Now())
		}, func(v *Verdict) int { return v.Forks }},
		{"fork: Board off a snapshot", func(h *History, logs map[string][]StoredEntry) {
			h.Matches[0].Mismatches = []string{"seat 0: hand differs"}
		}, func(v *Verdict) int { return v.Forks }},
		{"unfinished", func(h *History, logs map[string][]StoredEntry) {
			h.Matches[0].Finished = time.Time{}
		}, func(v *Verdict) int { return v.Unfinished }},
		{"seats disagree", func(h *History, logs map[string][]StoredEntry) {
			h.Matches[0].Final[1] = &protocol.MatchView{EventSeq: 9, Winner: 0}
		}, func(v *Verdict) int { return v.Disagree }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, logs := history(time.Now())
			c.spoil(h, logs)
			var v Verdict
			checkHistory(&v, h, logs)
			if c.count(&v) != 1 || v.violations() != 1 {
				t.Fatalf("want exactly this one violation, got %+v", v)
			}
			if len(v.Problems) != 1 {
				t.Fatalf("problems %q", v.Problems)
			}
		})
	}
}

func TestCheckLiveness(t *testing.T) {
	t0 := time.Now()
	h, _ := history(t0)
	bound := time.Second
	// Healed at t0+1.5s: intent b is acknowledged at t0+3s, 1.5 s later.
	faults := []Fault{{Kind: KindPause, Targets: []int{1}, Start: t0, Healed: t0.Add(1500 * time.Millisecond)}}
	var v Verdict
	checkLiveness(&v, h, faults, bound, t0.Add(time.Minute))
	if v.Late != 1 || v.Liveness != 1500*time.Millisecond {
		t.Fatalf("late heal judged %+v", v)
	}
	// Healed at t0+2.5s: b comes 0.5 s later, within the bound.
	faults[0].Healed = t0.Add(2500 * time.Millisecond)
	v = Verdict{}
	checkLiveness(&v, h, faults, bound, t0.Add(time.Minute))
	if v.Late != 0 || v.Liveness != 500*time.Millisecond {
		t.Fatalf("timely heal judged %+v", v)
	}
	// A match that never accepts again after the heal is late by the
	// whole window, up to the end of the run.
	h.Matches[0].Finished = time.Time{}
	faults[0].Healed = t0.Add(3500 * time.Millisecond)
	v = Verdict{}
	checkLiveness(&v, h, faults, bound, t0.Add(10*time.Second))
	if v.Late != 1 || v.Liveness != 6500*time.Millisecond {
		t.Fatalf("silent match judged %+v", v)
	}
}

// TestNetRules checks which links each network fault cuts: a member cut
// from its peers keeps PostgreSQL, one cut from PostgreSQL keeps its peers,
// a split's minority loses both, one-way drops one direction only.
func TestNetRules(t *testing.T) {
	has := func(rules, from, to string) bool {
		return strings.Contains(rules, `iifname "`+from+`" oifname "`+to+`" drop`)
	}
	m := func(i int) string { return port(MemberNS(i)) }
	pg := port(pgNS)

	r := netRules(Fault{Kind: KindPeersCut, Targets: []int{2}}, 3)
	if !has(r, m(2), m(1)) || !has(r, m(1), m(2)) || !has(r, m(2), m(3)) || has(r, m(2), pg) || has(r, m(1), m(3)) {
		t.Errorf("peers-cut:\n%s", r)
	}
	r = netRules(Fault{Kind: KindDBCut, Targets: []int{1}}, 3)
	if !has(r, m(1), pg) || !has(r, pg, m(1)) || has(r, m(1), m(2)) {
		t.Errorf("db-cut:\n%s", r)
	}
	r = netRules(Fault{Kind: KindSplit, Targets: []int{1, 2}}, 5)
	if !has(r, m(1), m(3)) || !has(r, m(5), m(2)) || !has(r, m(2), pg) || has(r, m(1), m(2)) || has(r, m(3), pg) || has(r, m(3), m(4)) {
		t.Errorf("split:\n%s", r)
	}
	r = netRules(Fault{Kind: KindOneWay, Targets: []int{3, 1}}, 3)
	if !has(r, m(3), m(1)) || has(r, m(1), m(3)) {
		t.Errorf("one-way:\n%s", r)
	}
	r = netRules(Fault{Kind: KindLoss, Targets: []int{2}}, 3)
	if !strings.Contains(r, `iifname "`+m(2)+`" numgen random mod 100 < 30 drop`) || !strings.Contains(r, `oifname "`+m(2)+`" numgen random mod 100`) {
		t.Errorf("loss:\n%s", r)
	}
	for _, k := range []Kind{KindPause, KindKill, KindSlow} {
		if r := netRules(Fault{Kind: k, Targets: []int{1}}, 3); r != "" {
			t.Errorf("%s has nft rules:\n%s", k, r)
		}
	}
}

// TestPickTargets: every kind picks valid, distinct targets.
func TestPickTargets(t *testing.T) {
	for _, members := range []int{3, 5} {
		for _, k := range Kinds {
			f := pick(newRand(uint64(members)), k, members)
			seen := map[int]bool{}
			for _, x := range f.Targets {
				if x < 1 || x > members || seen[x] {
					t.Fatalf("%s of %d members: targets %v", k, members, f.Targets)
				}
				seen[x] = true
			}
			want := 1
			switch k {
			case KindSplit:
				want = members / 2
			case KindOneWay:
				want = 2
			}
			if len(f.Targets) != want {
				t.Fatalf("%s of %d members: %d targets, want %d", k, members, len(f.Targets), want)
			}
		}
	}
}
