package bots

import (
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

func TestVerify(t *testing.T) {
	final := &protocol.MatchView{EventSeq: 30, IsFinished: true, Winner: 0}
	good := Result{Final: final, Board: client.BoardFromView(final)}
	if err := Verify(MatchRun{ID: "m", Results: [2]Result{good, good}}); err != nil {
		t.Fatalf("consistent run: %v", err)
	}
	other := &protocol.MatchView{EventSeq: 30, IsFinished: true, Winner: 1}
	bad := Result{Final: other, Board: client.BoardFromView(other)}
	if err := Verify(MatchRun{ID: "m", Results: [2]Result{good, bad}}); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("winner disagreement: %v", err)
	}
	drift := good
	drift.Board.Players[1].Damage = 3
	drift.Mismatches = []string{"seq 12: players[1].damage: local 2, server 3"}
	err := Verify(MatchRun{ID: "m", Results: [2]Result{good, drift}})
	if err == nil || !strings.Contains(err.Error(), "local view") || !strings.Contains(err.Error(), "final board") {
		t.Fatalf("board drift: %v", err)
	}
}

func TestStallTimeout(t *testing.T) {
	cases := []struct {
		rate  float64
		think time.Duration
		want  time.Duration
	}{
		{0, 0, minStallAfter},             // closed loop
		{2, 0, minStallAfter},             // a tick every 0.5 s
		{0.1, 0, 30 * time.Second},        // a tick every 10 s
		{0, time.Second, 3 * time.Second}, // a bot that thinks 1 s
	}
	for _, c := range cases {
		var p *pacer
		if c.rate > 0 {
			p = newPacer(c.rate, &Stats{})
		}
		if got := stallTimeout(p, c.think); got != c.want {
			t.Errorf("rate %g, think %v: stall after %v, want %v", c.rate, c.think, got, c.want)
		}
	}
}
