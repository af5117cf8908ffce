package cluster

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestYields covers who restarts after a healed partition: the smaller side
// of a clean one, exactly one side of a tie, and a member whose side
// overlaps the sender's (it stalled, or a link failed one way) as before.
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
		{"woken frozen member that declared nobody dead", []string{"a", "b", "c"}, []string{"a", "b"}, true},
		{"woken member that declared the sender dead", []string{"b", "c", "d"}, []string{"a", "b", "d"}, true},
	}
	for _, tc := range tests {
		if got := yields(tc.mine, tc.other); got != tc.want {
			t.Errorf("%s: yields(%v, %v) = %v, want %v", tc.name, tc.mine, tc.other, got, tc.want)
		}
		if !tc.want && yields(tc.other, tc.mine) != true {
			t.Errorf("%s: neither side yields", tc.name)
		}
	}
}

func TestEvictionNoticeRoundTrip(t *testing.T) {
	for _, side := range [][]string{{"a"}, {"a", "b", "c"}} {
		got, ok := parseNotice(evictionNotice(side))
		if !ok || !slices.Equal(got, side) {
			t.Errorf("parseNotice(evictionNotice(%v)) = %v, %v", side, got, ok)
		}
	}
	if side, ok := parseNotice(evictedNotice); !ok || side != nil {
		t.Errorf("an older member's notice parsed as %v, %v; want nil, true", side, ok)
	}
	for _, msg := range []string{"", "hello", string(evictedNotice) + "x", strings.TrimSuffix(string(evictedNotice), "d")} {
		if side, ok := parseNotice([]byte(msg)); ok {
			t.Errorf("parseNotice(%q) = %v, true; want not a notice", msg, side)
		}
	}
	long := evictionNotice(slices.Repeat([]string{"x"}, 2*maxNoticeSide))
	if side, _ := parseNotice(long); len(side) != maxNoticeSide {
		t.Errorf("a notice of %d names parsed into %d, want the cap %d", 2*maxNoticeSide, len(side), maxNoticeSide)
	}
}

func FuzzParseNotice(f *testing.F) {
	f.Add(evictionNotice([]string{"a", "b"}))
	f.Add(evictedNotice)
	f.Add([]byte("matchgrain/cluster: evicted\n\n\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		side, ok := parseNotice(msg)
		if !ok {
			return
		}
		if !bytes.HasPrefix(msg, evictedNotice) || len(side) > maxNoticeSide {
			t.Fatalf("parseNotice(%q) = %v", msg, side)
		}
	})
}
