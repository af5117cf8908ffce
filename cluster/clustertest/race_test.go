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

func TestRaceScannerClassifies(t *testing.T) {
	tests := []struct {
		name       string
		input      string
		ours       int
		thirdParty int
	}{
		{"own code behind a runtime frame", ownRace, 1, 0},
		{"dependencies only, called from our code", thirdPartyRace, 0, 1},
		{"both", thirdPartyRace + "some log line\n" + ownRace, 1, 1},
		{"no race", "level=WARN msg=hello\n", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r raceScanner
			var kept []string
			for _, l := range strings.Split(tt.input, "\n") {
				kept = append(kept, r.line(l)...)
			}
			if len(r.ours) != tt.ours || r.thirdParty != tt.thirdParty {
				t.Fatalf("ours %d (%v), third-party %d; want %d, %d", len(r.ours), r.ours, r.thirdParty, tt.ours, tt.thirdParty)
			}
			out := strings.Join(kept, "\n")
			if got := strings.Count(out, "WARNING: DATA RACE"); got != tt.ours {
				t.Fatalf("kept %d full reports, want only the %d own ones:\n%s", got, tt.ours, out)
			}
			if got := strings.Count(out, "data race inside dependencies"); got != tt.thirdParty {
				t.Fatalf("kept %d dependency summaries, want %d:\n%s", got, tt.thirdParty, out)
			}
		})
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
