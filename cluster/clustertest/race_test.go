package clustertest

import (
	"strings"
	"testing"
)

const ownRace = `==================
WARNING: DATA RACE
Write at 0x00c000204580 by goroutine 11:
  runtime.mapassign_faststr()
      /usr/local/go/src/runtime/map.go:1 +0x1
  github.com/matchgrain/matchgrain/cluster.Start()
      /work/main/cluster/node.go:119 +0x1579

Previous read at 0x00c000204580 by goroutine 30:
  github.com/asynkron/protoactor-go/cluster.(*MemberList).UpdateClusterTopology()
      /x/member_list.go:147 +0x2b9

Goroutine 11 (running) created at:
  github.com/matchgrain/matchgrain/cluster.Start()
      /work/main/cluster/node.go:119 +0x1579
==================
`

const thirdPartyRace = `==================
WARNING: DATA RACE
Read at 0x00c0001 by goroutine 49:
  github.com/asynkron/protoactor-go/remote.(*BlockList).BlockedMembers()
      /x/blocklist.go:50 +0x1
  github.com/matchgrain/matchgrain/cluster.(*provider).publish()
      /work/main/cluster/provider.go:200 +0x1

Previous write at 0x00c0001 by goroutine 50:
  golang.org/x/exp/maps.Keys[go.shape.map[go.shape.string]bool,go.shape.string,go.shape.bool]()
      /x/maps.go:1 +0x1

Goroutine 49 (running) created at:
  github.com/matchgrain/matchgrain/cluster.(*provider).StartMember()
      /work/main/cluster/provider.go:108 +0x117c
==================
`

// unlistedRace is a race between two dependency frames no allow-list entry
// names.
const unlistedRace = `==================
WARNING: DATA RACE
Write at 0x00c0002 by goroutine 7:
  github.com/example/dep.(*Cache).Put()
      /x/cache.go:10 +0x1

Previous read at 0x00c0002 by goroutine 8:
  github.com/example/dep.(*Cache).Get()
      /x/cache.go:20 +0x1
==================
`

func TestRaceScannerClassifies(t *testing.T) {
	blockList := []AllowedRace{{Func: "github.com/asynkron/protoactor-go/remote.(*BlockList)", Reason: "test"}}
	tests := []struct {
		name     string
		input    string
		ours     int
		unlisted int
		allowed  int
	}{
		{"own code behind a runtime frame", ownRace, 1, 0, 0},
		{"dependencies only, listed", thirdPartyRace, 0, 0, 1},
		{"dependencies only, not listed", unlistedRace, 0, 1, 0},
		{"all three", thirdPartyRace + "some log line\n" + ownRace + unlistedRace, 1, 1, 1},
		{"no race", "level=WARN msg=hello\n", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RaceScanner{Allow: blockList}
			var kept []string
			for _, l := range strings.Split(tt.input, "\n") {
				kept = append(kept, r.Line(l)...)
			}
			allowed := 0
			for _, n := range r.Allowed() {
				allowed += n
			}
			if len(r.ours) != tt.ours || len(r.unlisted) != tt.unlisted || allowed != tt.allowed {
				t.Fatalf("ours %d (%v), unlisted %d (%v), allowed %d; want %d, %d, %d",
					len(r.ours), r.ours, len(r.unlisted), r.unlisted, allowed, tt.ours, tt.unlisted, tt.allowed)
			}
			if got, want := len(r.Failures()), tt.ours+tt.unlisted; got != want {
				t.Fatalf("%d failures, want %d: %v", got, want, r.Failures())
			}
			out := strings.Join(kept, "\n")
			if got := strings.Count(out, "WARNING: DATA RACE"); got != tt.ours+tt.unlisted {
				t.Fatalf("kept %d full reports, want only the %d failing ones:\n%s", got, tt.ours+tt.unlisted, out)
			}
			if got := strings.Count(out, "allowed data race inside"); got != tt.allowed {
				t.Fatalf("kept %d allowed summaries, want %d:\n%s", got, tt.allowed, out)
			}
		})
	}
}

// Every allow-list entry names a dependency function and gives its reason:
// an entry can never excuse a race in this module.
func TestAllowedRacesAreDependencies(t *testing.T) {
	for _, a := range AllowedRaces {
		if strings.HasPrefix(a.Func, modulePath) || isStdlib(a.Func) || !strings.Contains(a.Func, ".") {
			t.Errorf("allow-list entry %q is not a dependency function", a.Func)
		}
		if len(a.Reason) < 40 {
			t.Errorf("allow-list entry %q: reason %q does not say what races and why", a.Func, a.Reason)
		}
	}
}

func TestIsStdlib(t *testing.T) {
	tests := map[string]bool{
		"runtime.mapassign_faststr":                                    true,
		"sync/atomic.AddInt64":                                         true,
		"google.golang.org/protobuf/internal/impl.pointer.Elem":        false,
		"github.com/matchgrain/matchgrain/cluster.(*Node).onEvent":     false,
		"golang.org/x/exp/maps.Keys[go.shape.map[go.shape.string]bool": false,
	}
	for fn, want := range tests {
		if got := isStdlib(fn); got != want {
			t.Errorf("isStdlib(%q) = %v, want %v", fn, got, want)
		}
	}
}
