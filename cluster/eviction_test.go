package cluster

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestYields covers who restarts when two members declared each other
// dead: the smaller side of a clean partition, exactly one side of a tie,
// and both when the sides share their smallest member.
func TestYields(t *testing.T) {
	tests := []struct {
		name        string
		mine, other []string
		want        bool
	}{
		{"cut-off member told by the majority", []string{"c"}, []string{"a", "b", "d", "e"}, true},
		{"majority told by a cut-off member", []string{"a", "b", "d", "e"}, []string{"c"}, false},
		{"minority of a 2/3 split", []string{"d", "e"}, []string{"a", "b", "c"}, true},
		{"majority of a 2/3 split", []string{"a", "b", "c"}, []string{"d", "e"}, false},
		{"tie, the other side holds the smallest ID", []string{"c", "d"}, []string{"a", "b"}, true},
		{"tie, this side holds the smallest ID", []string{"a", "b"}, []string{"c", "d"}, false},
		{"sides sharing a member, this side holds the smallest other ID", []string{"a", "c", "e"}, []string{"b", "c", "d"}, false},
		{"sides sharing their smallest member", []string{"a", "b", "c"}, []string{"a", "d", "e"}, true},
	}
	for _, tc := range tests {
		if got := yields(tc.mine, tc.other); got != tc.want {
			t.Errorf("%s: yields(%v, %v) = %v, want %v", tc.name, tc.mine, tc.other, got, tc.want)
		}
		if !yields(tc.mine, tc.other) && !yields(tc.other, tc.mine) {
			t.Errorf("%s: neither side yields", tc.name)
		}
	}
}

// TestObeysOnlyWhoItDeclaredDead: a member obeys a notice from a member it
// never declared dead (it stalled, or only the sender lost it), however the
// sides compare; from one it declared dead, only if its side is not larger.
func TestObeysOnlyWhoItDeclaredDead(t *testing.T) {
	p := newProvider(nil, nil, 0, 0, nil, nil, nil)
	p.live = map[string]liveNode{"a": {}, "b": {}, "c": {}, "d": {}}
	p.departed = map[string]time.Time{"d": time.Now()}
	if mine, ok := p.obeys("x", []string{"x"}); !ok || !slices.Equal(mine, []string{"a", "b", "c"}) {
		t.Errorf("notice from a member never declared dead: obeys = %v, %v; want obeyed, side [a b c]", mine, ok)
	}
	if _, ok := p.obeys("d", []string{"d"}); ok {
		t.Error("a side of 3 obeyed a notice from a side of 1 it declared dead")
	}
	if _, ok := p.obeys("d", []string{"d", "e", "f", "g"}); !ok {
		t.Error("a side of 3 ignored a notice from a side of 4 it declared dead")
	}
	if _, ok := p.obeys("", nil); !ok {
		t.Error("a notice of an older member (no sender) was ignored")
	}
}

func TestEvictionNoticeRoundTrip(t *testing.T) {
	for _, side := range [][]string{{"a"}, {"a", "b", "c"}, {}} {
		sender, got, ok := parseNotice(evictionNotice("a", side))
		if !ok || sender != "a" || !slices.Equal(got, side) {
			t.Errorf("parseNotice(evictionNotice(a, %v)) = %q, %v, %v", side, sender, got, ok)
		}
	}
	if sender, side, ok := parseNotice(evictedNotice); !ok || sender != "" || side != nil {
		t.Errorf("an older member's notice parsed as %q, %v, %v; want \"\", nil, true", sender, side, ok)
	}
	for _, msg := range []string{"", "hello", string(evictedNotice) + "x", strings.TrimSuffix(string(evictedNotice), "d")} {
		if _, side, ok := parseNotice([]byte(msg)); ok {
			t.Errorf("parseNotice(%q) = %v, true; want not a notice", msg, side)
		}
	}
	long := evictionNotice("a", slices.Repeat([]string{"x"}, 2*maxNoticeSide))
	if _, side, _ := parseNotice(long); len(side) != maxNoticeSide {
		t.Errorf("a notice of %d names parsed into %d, want the cap %d", 2*maxNoticeSide, len(side), maxNoticeSide)
	}
}

func FuzzParseNotice(f *testing.F) {
	f.Add(evictionNotice("a", []string{"a", "b"}))
	f.Add(evictedNotice)
	f.Add([]byte("matchgrain/cluster: evicted\n\n\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, side, ok := parseNotice(msg)
		if !ok {
			return
		}
		if !bytes.HasPrefix(msg, evictedNotice) || len(side) > maxNoticeSide {
			t.Fatalf("parseNotice(%q) = %v", msg, side)
		}
	})
}
