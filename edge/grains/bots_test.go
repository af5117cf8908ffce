package grains_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/grains"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
	"github.com/matchgrain/matchgrain/protocol"
)

// botTiming lets bots decide within milliseconds.
func botTiming() actors.Timing {
	t := fastTiming()
	t.BotThink = 5 * time.Millisecond
	return t
}

// awaitFinished polls the grain's status until the match ended.
func awaitFinished(t *testing.T, gw *grains.Gateway, id string, total time.Duration) *actors.MatchStatus {
	t.Helper()
	var st *actors.MatchStatus
	clustertest.Eventually(t, total, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if st, err = gw.Status(ctx, id); err != nil {
			return err
		}
		if !st.Finished {
			return fmt.Errorf("match %s still running at log seq %d, turn %d", id, st.LogSeq, st.Turn)
		}
		return nil
	})
	return st
}

// TestBotVsBotMatchCompletes: a match whose two seats are bots plays itself
// to the end inside the grain, with nobody connected.
func TestBotVsBotMatchCompletes(t *testing.T) {
	matches, node := grainstest.NewMatches(t, grainstest.Options{Timing: botTiming()})
	seed := uint64(12)
	id, err := matches.CreateMatch(context.Background(), edge.MatchSpec{
		Names: [2]string{"Bot A", "Bot B"}, Decks: [2]string{"S1", "S2"}, Bots: [2]bool{true, true}, Seed: &seed,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	st := awaitFinished(t, node.Gateway, id, 60*time.Second)
	if st.Winner != 0 && st.Winner != 1 {
		t.Fatalf("bot match ended without a winner: %+v", st)
	}
	if st.LogSeq < 10 || st.Turn < 2 {
		t.Fatalf("bot match over too soon to have been played: %+v", st)
	}
	if st.Bots != [2]bool{true, true} || st.Connected != [2]bool{} {
		t.Fatalf("status seats: %+v", st)
	}
	t.Logf("bot vs bot: winner %d after %d turns, %d log entries, damage %v", st.Winner, st.Turn, st.LogSeq, st.Damage)
}

// TestBotMatchIsDeterministic: the bots' choices come from the match seed
// and the log position, so two matches with one seed play the same game.
func TestBotMatchIsDeterministic(t *testing.T) {
	matches, node := grainstest.NewMatches(t, grainstest.Options{Timing: botTiming()})
	seed := uint64(99)
	var got [2]*actors.MatchStatus
	for i := range got {
		id, err := matches.CreateMatch(context.Background(), edge.MatchSpec{
			Names: [2]string{"A", "B"}, Decks: [2]string{"S1", "S2"}, Bots: [2]bool{true, true}, Seed: &seed,
		})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got[i] = awaitFinished(t, node.Gateway, id, 60*time.Second)
	}
	a, b := got[0], got[1]
	if a.EventSeq != b.EventSeq || a.Winner != b.Winner || a.Turn != b.Turn || a.Damage != b.Damage {
		t.Fatalf("same seed, different games: %+v vs %+v", a, b)
	}
}

// TestPlayerVsBotMatchCompletes: a player connected through the edge plays
// seat 0 against the grain's bot in seat 1 until the match ends; the bot
// seat cannot be taken by a connection.
func TestPlayerVsBotMatchCompletes(t *testing.T) {
	h := startHarness(t, harnessOpts{timing: botTiming()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seed := uint64(5)
	id, err := h.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "Ann", Deck: "S1"}, {Name: "Trainer", Deck: "S2", Bot: true}}, &seed)
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	// A ticket for the bot's seat opens nothing: 4401, not a retry loop.
	intruder := connectSeat(t, h, h.gameAddr("ws"), id, 1, 0)
	if code, _ := intruder.CloseCode(10 * time.Second); code != protocol.CloseTicket {
		t.Fatalf("connection to the bot seat closed with %d, want %d", code, protocol.CloseTicket)
	}

	me, _ := dialSeat(t, h, h.gameAddr("ws"), id, 0, 0)
	var v protocol.MatchView
	moves := 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("match not over after %d moves (turn %d, seq %d)", moves, v.TurnNumber, v.EventSeq)
		}
		v = me.View()
		if v.IsFinished {
			break
		}
		in := eagerPlay(v)
		if in == nil {
			time.Sleep(40 * time.Millisecond) // the bot decides (and stay under the frame rate limit)
			continue
		}
		// Under the protocol's 16 intents per second per connection.
		time.Sleep(70 * time.Millisecond)
		res := me.Intent(fmt.Sprintf("m%d", moves), v.EventSeq, in)
		if !res.Accepted {
			t.Fatalf("move %d (%s) rejected: %+v", moves, in.IntentKind(), res)
		}
		moves++
	}
	if v.Winner != 0 && v.Winner != 1 {
		t.Fatalf("no winner: %d", v.Winner)
	}
	if v.TurnNumber < 3 {
		t.Fatalf("match over at turn %d: the bot did not play its turns", v.TurnNumber)
	}
	t.Logf("player vs bot: winner %d at turn %d after %d player moves", v.Winner, v.TurnNumber, moves)
}

// eagerPlay is a simple player: ride, attack, enter battle and move on;
// nil when the player does not decide.
func eagerPlay(v protocol.MatchView) protocol.Intent {
	rank := func(in protocol.Intent) int {
		switch in.IntentKind() {
		case protocol.IntentRide:
			return 9
		case protocol.IntentAttack:
			return 8
		case protocol.IntentEnterBattle:
			return 7
		case protocol.IntentFinishMulligan:
			return 6
		case protocol.IntentConcede:
			return -1
		case protocol.IntentEndTurn, protocol.IntentPassGuard, protocol.IntentSkipRide:
			return 2
		case protocol.IntentCall, protocol.IntentMove, protocol.IntentMulligan:
			return 0
		}
		return 1
	}
	var best protocol.Intent
	for _, in := range v.LegalIntents {
		if r := rank(in); r >= 0 && (best == nil || r > rank(best)) {
			best = in
		}
	}
	return best
}
