package grains_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// matchSeed has eight distinct, non-zero bytes, so finding it in a traffic
// dump cannot be a coincidence of small numbers.
const matchSeed uint64 = 0x1E3779B97F4A7C15

// playBots plays one full match with two bots through a recording proxy
// and returns the run and every recorded connection, per seat.
func playBots(t *testing.T, h *harness, transport string, botSeed uint64, killEvery int) (bots.MatchRun, [2][]stream) {
	t.Helper()
	p := startProxy(t, h, transport)
	seed := matchSeed
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := bots.PlayMatch(ctx, h.admin, bots.MatchOptions{
		GameAddr: p.addr(), Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: botSeed,
		Timeout: 55 * time.Second, KillEvery: killEvery, Logger: discardLog(),
		Verify: true, // a snapshot after every batch, compared with each bot's Board
	})
	if err != nil {
		t.Fatalf("play match over %s: %v", transport, err)
	}
	// PlayMatch leaves at the end; the proxy has every byte once the edge
	// has closed the connections.
	var seats [2][]stream
	clustertest.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		seats = bySeat(p.streams(t))
		for s := range 2 {
			if len(seats[s]) == 0 {
				return fmt.Errorf("no connection of seat %d recorded", s)
			}
			if !hasFinish(seats[s]) {
				return fmt.Errorf("seat %d's record has no GameFinished yet", s)
			}
		}
		return nil
	})
	return run, seats
}

func hasFinish(ss []stream) bool {
	for _, s := range ss {
		for _, wf := range s.frames {
			if ev, ok := wf.f.(*protocol.ServerEvents); ok {
				for _, e := range ev.Events {
					if _, ok := e.Event.(*protocol.GameFinishedEvent); ok {
						return true
					}
				}
			}
			if sn, ok := wf.f.(*protocol.ServerSnapshot); ok && sn.View.IsFinished {
				return true
			}
		}
	}
	return false
}

// events returns the distinct events one seat received, by seq (an event
// re-sent by a resync must be identical to the first copy).
func events(t *testing.T, ss []stream) map[int64]protocol.EventEnvelope {
	t.Helper()
	out := map[int64]protocol.EventEnvelope{}
	for _, s := range ss {
		for _, wf := range s.frames {
			ev, ok := wf.f.(*protocol.ServerEvents)
			if !ok {
				continue
			}
			for _, e := range ev.Events {
				if e.Seq < ev.FromSeq || e.Seq > ev.ToSeq {
					t.Errorf("event #%d outside its frame's range %d..%d", e.Seq, ev.FromSeq, ev.ToSeq)
				}
				if prev, ok := out[e.Seq]; ok && !reflect.DeepEqual(prev.Event, e.Event) { // by value: %#v would compare the addresses of nested cards
					t.Errorf("event #%d delivered twice with different contents: %#v vs %#v", e.Seq, prev.Event, e.Event)
				}
				out[e.Seq] = e
			}
		}
	}
	return out
}

// searchBotSeeds are the bot seeds TestE2EFullMatch tries, in order, until
// both seats search a card (A2, RideSearch) in the recorded match. With
// matchSeed the bots play deterministically and the first one does: the
// others only keep the test meaningful if the game or the bots change.
var searchBotSeeds = []uint64{8, 24, 6}

// TestE2EFullMatch plays a whole match with two bots over each transport
// (acceptance criteria 1 and 3). It fails if any of ride, call, attack,
// guard, drive check, damage check, damage or a victory is missing from the
// event stream, if GameFinished is not unique and last, if the bots' local
// boards disagree with the server's final snapshot, or if the traffic dump
// of either seat holds any hidden information of the other (checkNoLeaks).
// A card searched out of the deck is hidden information the server names
// to its owner alone (CardSearchedView), so the test also fails if none of
// searchBotSeeds makes both seats search, or if a searched card's
// instanceId or printing reaches the opponent before it is public.
func TestE2EFullMatch(t *testing.T) {
	for _, transport := range []string{"ws", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			h := startHarness(t, harnessOpts{})
			var run bots.MatchRun
			var seats [2][]stream
			found := false
			for _, bs := range searchBotSeeds {
				run, seats = playBots(t, h, transport, bs, 0)
				n := [2]int{len(searchedBy(t, seats[0], 0)), len(searchedBy(t, seats[1], 1))}
				if n[0] > 0 && n[1] > 0 {
					t.Logf("bot seed %d: seats searched %d and %d card(s)", bs, n[0], n[1])
					found = true
					break
				}
				t.Logf("bot seed %d: seats searched %d and %d card(s); trying the next seed", bs, n[0], n[1])
			}
			if !found {
				t.Fatalf("no bot seed of %v made both seats search a card: the check on searched cards would prove nothing", searchBotSeeds)
			}
			for seat := range 2 {
				evs := events(t, seats[seat])
				kinds := map[protocol.EventKind]int{}
				var maxSeq, finishSeq int64
				finishes := 0
				for seq, e := range evs {
					kinds[e.Event.EventKind()]++
					maxSeq = max(maxSeq, seq)
					if gf, ok := e.Event.(*protocol.GameFinishedEvent); ok {
						finishes++
						finishSeq = seq
						if gf.Winner != run.Results[seat].Final.Winner {
							t.Errorf("seat %d: GameFinished winner %d, final snapshot %d", seat, gf.Winner, run.Results[seat].Final.Winner)
						}
						if gf.Winner == protocol.NoWinner {
							t.Errorf("seat %d: the match ended without a victory (reason %d)", seat, gf.Reason)
						}
					}
				}
				for _, k := range []protocol.EventKind{protocol.EventRide, protocol.EventCall, protocol.EventAttack,
					protocol.EventGuard, protocol.EventDriveCheck, protocol.EventDamageCheck, protocol.EventDamage} {
					if kinds[k] == 0 {
						t.Errorf("seat %d: no event of kind %d in the match", seat, k)
					}
				}
				if finishes != 1 || finishSeq != maxSeq || finishSeq != run.Results[seat].Final.EventSeq {
					t.Errorf("seat %d: %d GameFinished, at #%d; last event #%d; final eventSeq %d", seat, finishes, finishSeq, maxSeq, run.Results[seat].Final.EventSeq)
				}
				t.Logf("seat %d: %d events seen of %d, %d connection(s)", seat, len(evs), maxSeq, len(seats[seat]))
			}
			for a := range 2 {
				rep := checkNoLeaks(t, seats, a, matchSeed)
				t.Logf("traffic to seat %d: %d bytes, %d frames scanned; %d hidden cards and %d printings of seat %d (%d searched) checked",
					1-a, rep.bytesScanned, rep.framesScanned, rep.hiddenIDs, rep.hiddenPrints, a, len(rep.searched))
				window := 0
				for _, sc := range rep.searched {
					t.Logf("seat %d searched card %d (%s) at #%d; public to seat %d at #%d (printing at #%d); %d of its frames in between",
						a, sc.id, sc.printing, sc.seq, 1-a, sc.idPublic, sc.printPublic, sc.framesHidden)
					window += sc.framesHidden
				}
				if window == 0 {
					t.Errorf("seat %d: no frame reached seat %d while a searched card was secret (%d searched): nothing was checked", a, 1-a, len(rep.searched))
				}
			}
		})
	}
}

// TestE2EClientKilledAtRandomSteps drops both bots' connections abruptly
// (no ClientLeave) every few intents, at a random period per run; each
// reconnects with a fresh ticket and resumeFromSeq = lastSeq (criterion 2).
// It fails if a bot's local board ever disagrees with a server snapshot at
// the same seq (PlayMatch verifies), if a reconnect does not resume from the
// journal, or if some seq 1..N reached neither seat's stream other than as
// an owner-only event of the opponent.
func TestE2EClientKilledAtRandomSteps(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	rs := randomSeed(t)
	killEvery := 2 + rand.New(rand.NewPCG(rs, 0)).IntN(4)
	t.Logf("random seed %d: dropping every %d intents", rs, killEvery)
	run, seats := playBots(t, h, "ws", rs, killEvery)
	for seat, r := range run.Results {
		if r.Checked == 0 {
			t.Errorf("seat %d: no snapshot was compared with the local board", seat)
		}
		t.Logf("seat %d: %d intents, %d reconnects, %d snapshots checked", seat, r.Intents, r.Reconnects, r.Checked)
	}
	n := run.Results[0].Final.EventSeq
	evs := [2]map[int64]protocol.EventEnvelope{events(t, seats[0]), events(t, seats[1])}
	for seat := range 2 {
		if len(seats[seat]) < 2 {
			t.Errorf("seat %d: %d connection(s); the kills did not happen", seat, len(seats[seat]))
		}
		// covered: every seq some ServerEvents range or the first
		// snapshot vouches for.
		covered := make([]bool, n+1)
		// bySnapshot: seqs the first hello's snapshot stood in for; the
		// seat rightly never got those events.
		bySnapshot := make([]bool, n+1)
		resumed := 0
		for ci, s := range seats[seat] {
			for fi, wf := range s.frames {
				switch f := wf.f.(type) {
				case *protocol.ServerHello:
					if ci > 0 && f.Resumed {
						resumed++
					}
				case *protocol.ServerSnapshot:
					// The answer to a hello. A reconnect resumes, also after
					// the end (docs/protocol.md §9.8): the log holds every event.
					if fi <= 1 && ci > 0 {
						t.Errorf("seat %d: reconnect %d answered with a snapshot at seq %d, not the events it missed", seat, ci, f.View.EventSeq)
					}
					if fi <= 1 {
						for q := int64(1); q <= min(f.View.EventSeq, n); q++ {
							if !covered[q] {
								bySnapshot[q] = true
							}
							covered[q] = true
						}
					}
				case *protocol.ServerEvents:
					for q := max(f.FromSeq, 1); q <= min(f.ToSeq, n); q++ {
						covered[q] = true
					}
				}
			}
		}
		if resumed == 0 {
			t.Errorf("seat %d: no reconnect was served from the journal (resumed=true)", seat)
		}
		first := int64(-1)
		for q := int64(1); q <= n; q++ {
			if !covered[q] {
				t.Errorf("seat %d: seq %d never covered by an events frame: eventSeq not continuous", seat, q)
				break
			}
			if _, ok := evs[seat][q]; ok || bySnapshot[q] {
				continue
			}
			// A gap is only allowed for an owner-only event of the other seat.
			other, ok := evs[1-seat][q]
			if ok && protocol.EventVisibility(other.Event.EventKind()) == protocol.OwnerOnly && eventPlayer(other.Event) == 1-seat {
				continue
			}
			if first < 0 && q > 3 { // the opening events may predate the first snapshot
				first = q
				t.Errorf("seat %d: event #%d missing (other seat has %#v)", seat, q, other.Event)
			}
		}
	}
}

// TestE2EDuplicateIntent re-sends an acknowledged intentId, once as it was
// and once with a different body (criterion 4). It fails if the answer is
// not the stored result with duplicate = true, if any ServerEvents follows,
// or if the match's eventSeq or state changes.
func TestE2EDuplicateIntent(t *testing.T) {
	for _, transport := range []string{"ws", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			h := startHarness(t, harnessOpts{})
			id := h.createMatch(t, 42)
			var seats [2]*clienttest.Seat
			for s := range 2 {
				seats[s], _ = dialSeat(t, h, h.gameAddr(transport), id, s, 0)
				clienttest.Await(seats[s], 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
			}
			moves := clienttest.Play(t, seats, "dup", 4)
			before := seats[0].View()
			for _, m := range moves {
				// Once as sent, once with another body (Concede): the id
				// alone decides, so neither may change anything.
				for _, in := range []protocol.Intent{m.Intent, protocol.Concede{}} {
					res := seats[m.Seat].Intent(m.ID, 0, in)
					if !res.Accepted || !res.Duplicate || res.EventSeq != m.Seq {
						t.Fatalf("re-sent %s (%T): %+v, want accepted duplicate with eventSeq %d", m.ID, in, res, m.Seq)
					}
				}
			}
			// Nothing may follow: no ServerEvents on either seat.
			time.Sleep(200 * time.Millisecond) // time for a wrongly produced batch to be pushed
			for _, c := range seats {
				for _, f := range c.Drain() {
					if ev, ok := f.(*protocol.ServerEvents); ok {
						t.Fatalf("seat %d got ServerEvents %d..%d after a duplicate", c.Index, ev.FromSeq, ev.ToSeq)
					}
				}
			}
			after := seats[0].View()
			if after.EventSeq != before.EventSeq || after.IsFinished || client.BoardFromView(&after).Diff(client.BoardFromView(&before)) != nil {
				t.Fatalf("state changed by duplicates: eventSeq %d -> %d, finished %v", before.EventSeq, after.EventSeq, after.IsFinished)
			}
		})
	}
}

// TestE2EHeartbeat stops sending after the hello (criterion 5, heartbeat
// half). It fails if no ServerPing comes after HeartbeatIdle, if the close
// is not 4408 (TCP: fatal HeartbeatTimeout), or if either comes too early
// or much later than configured.
func TestE2EHeartbeat(t *testing.T) {
	const idle, timeout = 200 * time.Millisecond, 400 * time.Millisecond
	h := startHarness(t, harnessOpts{edge: edge.Config{HeartbeatIdle: idle, HeartbeatTimeout: timeout}})
	for _, transport := range []string{"ws", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			id := h.createMatch(t, 5)
			start := time.Now()
			s, _ := dialSeat(t, h, h.gameAddr(transport), id, 0, 0)
			var pingAt time.Duration
			code, frames := s.CloseCode(5 * time.Second)
			closedAt := time.Since(start)
			for _, f := range frames {
				if _, ok := f.(*protocol.ServerPing); ok && pingAt == 0 {
					pingAt = time.Since(start) // upper bound: frames were read after the fact
				}
			}
			if pingAt == 0 {
				t.Fatalf("no ServerPing before the close (frames %d)", len(frames))
			}
			if code != protocol.CloseHeartbeatTimeout {
				t.Fatalf("close code %d, want %d", code, protocol.CloseHeartbeatTimeout)
			}
			if closedAt < timeout-50*time.Millisecond || closedAt > timeout+2*time.Second {
				t.Fatalf("closed after %v, heartbeat timeout %v", closedAt, timeout)
			}
			t.Logf("%s: closed 4408 after %v (timeout %v)", transport, closedAt, timeout)
		})
	}
}

// TestE2EHeartbeatPingArrivesAfterIdle measures the ServerPing itself: it
// fails if the ping comes before HeartbeatIdle or not before the close.
func TestE2EHeartbeatPingArrivesAfterIdle(t *testing.T) {
	const idle, timeout = 200 * time.Millisecond, 400 * time.Millisecond
	h := startHarness(t, harnessOpts{edge: edge.Config{HeartbeatIdle: idle, HeartbeatTimeout: timeout}})
	id := h.createMatch(t, 6)
	s := connectSeat(t, h, h.gameAddr("ws"), id, 0, 0)
	sent := time.Now()
	for {
		f, err := s.Next(2 * time.Second)
		if err != nil {
			t.Fatalf("no ServerPing before the connection ended: %v", err)
		}
		if _, ok := f.(*protocol.ServerPing); ok {
			if got := time.Since(sent); got < idle-20*time.Millisecond {
				t.Fatalf("ServerPing after %v, before heartbeat-idle %v", got, idle)
			} else {
				t.Logf("ServerPing %v after the last client frame (idle %v)", got, idle)
			}
			return
		}
	}
}

// TestE2EAbsenceLoses cuts one seat's transport and keeps it away
// (criterion 5, absence half). It fails if the match does not end with
// GameFinished(winner = the present seat, reason Absence) within a bound
// of AbsenceTimeout, or ends before it, or if the returning seat does not
// resume to the GameFinished it missed, or a hello with no resume is not
// answered with a finished snapshot that carries the reason.
func TestE2EAbsenceLoses(t *testing.T) {
	timing := fastTiming()
	timing.AbsenceTimeout = time.Second
	h := startHarness(t, harnessOpts{timing: timing})
	id := h.createMatch(t, 9)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		seats[s], _ = dialSeat(t, h, h.gameAddr("ws"), id, s, 0)
		clienttest.Await(seats[s], 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	if err := seats[1].Conn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	gone := time.Now()
	var lastSeq int64
	ev := clienttest.Await(seats[0], 10*time.Second, func(f *protocol.ServerEvents) bool {
		lastSeq = max(lastSeq, f.ToSeq)
		for _, e := range f.Events {
			if _, ok := e.Event.(*protocol.GameFinishedEvent); ok {
				return true
			}
		}
		return false
	})
	after := time.Since(gone)
	gf := ev.Events[len(ev.Events)-1].Event.(*protocol.GameFinishedEvent)
	if gf.Winner != 0 || gf.Reason != protocol.FinishAbsence {
		t.Fatalf("GameFinished %+v, want winner 0 reason Absence", gf)
	}
	if after < timing.AbsenceTimeout-100*time.Millisecond || after > timing.AbsenceTimeout+3*time.Second {
		t.Fatalf("absence ended the match %v after the seat left; timeout %v", after, timing.AbsenceTimeout)
	}
	t.Logf("absence loss %v after the transport was cut (timeout %v)", after, timing.AbsenceTimeout)

	// The seat comes back from seq 2: it gets what it missed, the reason
	// it lost among it (docs/protocol.md §9.8).
	back, hello := dialSeat(t, h, h.gameAddr("ws"), id, 1, 2)
	if !hello.Resumed || hello.EventSeq != lastSeq {
		t.Fatalf("hello resuming a finished match from 2: %+v, want resumed at seq %d", hello, lastSeq)
	}
	clienttest.Await(back, 10*time.Second, func(f *protocol.ServerEvents) bool {
		for _, e := range f.Events {
			if g, ok := e.Event.(*protocol.GameFinishedEvent); ok {
				if *g != *gf {
					t.Fatalf("resumed GameFinished %+v, live %+v", g, gf)
				}
				return true
			}
		}
		return false
	})
	// A hello with no resume gets the final snapshot, which says why.
	fresh, hello := dialSeat(t, h, h.gameAddr("ws"), id, 1, 0)
	if hello.Resumed {
		t.Fatalf("hello with no resume to a finished match resumed=true")
	}
	snap := clienttest.Await(fresh, 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	if v := snap.View; !v.IsFinished || v.Winner != 0 || v.EventSeq != lastSeq || v.FinishReason == nil || *v.FinishReason != protocol.FinishAbsence {
		t.Fatalf("returning seat's snapshot: finished=%v winner=%d eventSeq=%d reason=%v (want true, 0, %d, Absence)",
			v.IsFinished, v.Winner, v.EventSeq, v.FinishReason, lastSeq)
	}
}

// TestE2EClockTimeout lets the first decider do nothing (criterion 6). It
// fails if the match does not end on Timeout for that player after about
// DecisionTime + BankTime, or if two consecutive ServerClock frames are ever
// further apart, by the server's own clock (serverTimeMs), than
// ClockInterval plus a slack. The slack (3 intervals) absorbs late timers on
// a loaded 2-core machine under -race, yet is shorter than the decision
// time, so a clock sent only when the decision changes still fails.
func TestE2EClockTimeout(t *testing.T) {
	timing := fastTiming()
	timing.DecisionTime, timing.BankTime, timing.ClockInterval = time.Second, time.Second, 200*time.Millisecond
	const slack = 600 * time.Millisecond
	h := startHarness(t, harnessOpts{timing: timing})
	for _, transport := range []string{"ws", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			created := time.Now()
			id := h.createMatch(t, 13)
			s, _ := dialSeat(t, h, h.gameAddr(transport), id, 0, 0)
			var clocks []int64 // serverTimeMs of each ServerClock
			decider := -1
			var gf *protocol.GameFinishedEvent
			deadline := time.Now().Add(10 * time.Second)
			for gf == nil {
				if time.Now().After(deadline) {
					t.Fatalf("no GameFinished within 10 s")
				}
				switch f := s.Recv(time.Until(deadline)).(type) {
				case *protocol.ServerClock:
					clocks = append(clocks, f.Clock.ServerTimeMs)
					if decider < 0 && f.Clock.IsRunning {
						decider = f.Clock.DecisionPlayer
					}
				case *protocol.ServerSnapshot:
					if decider < 0 && f.View.Clock.IsRunning {
						decider = f.View.Clock.DecisionPlayer
					}
				case *protocol.ServerEvents:
					for _, e := range f.Events {
						if g, ok := e.Event.(*protocol.GameFinishedEvent); ok {
							gf = g
						}
					}
				}
			}
			ended := time.Since(created)
			if decider < 0 {
				t.Fatalf("no running clock seen")
			}
			if gf.Reason != protocol.FinishTimeout || gf.Winner != 1-decider {
				t.Fatalf("GameFinished %+v, want Timeout won by %d", gf, 1-decider)
			}
			if ended < timing.DecisionTime+timing.BankTime-50*time.Millisecond {
				t.Fatalf("timed out %v after creation, before decision+bank %v", ended, timing.DecisionTime+timing.BankTime)
			}
			if len(clocks) < 2 {
				t.Fatalf("%d ServerClock frames in %v", len(clocks), ended)
			}
			var maxGap time.Duration
			for i := 1; i < len(clocks); i++ {
				maxGap = max(maxGap, time.Duration(clocks[i]-clocks[i-1])*time.Millisecond)
			}
			if maxGap > timing.ClockInterval+slack {
				t.Fatalf("ServerClock gap %v, interval %v", maxGap, timing.ClockInterval)
			}
			t.Logf("%s: timeout after %v (decision+bank %v); %d ServerClock, max gap %v (interval %v)",
				transport, ended, timing.DecisionTime+timing.BankTime, len(clocks), maxGap, timing.ClockInterval)
		})
	}
}

// TestE2EBadFramesRejected sends a 300 KiB frame and garbage after a valid
// hello (criterion 7). It fails if the answer is not MalformedFrame with
// close 4400 (TCP: a fatal ServerError), if another connection of the same
// match stops being served, or if a full match cannot be played afterwards.
func TestE2EBadFramesRejected(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	id := h.createMatch(t, 17)
	other, _ := dialSeat(t, h, h.gameAddr("ws"), id, 1, 0)
	clienttest.Await(other, 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i)
	}
	bad := []struct {
		name  string
		frame []byte
	}{
		{"300KiB", big},
		{"garbage", []byte{0xc1, 0xff, 0x00, 0x13, 0x37}},
		{"truncated", []byte{0x92, 0x01}},
	}
	for _, transport := range []string{"ws", "tcp"} {
		for _, b := range bad {
			t.Run(transport+"/"+b.name, func(t *testing.T) {
				var code int
				var frames []protocol.ServerFrame
				if transport == "tcp" {
					code, frames = rawTCPBadFrame(t, h, id, b.frame)
				} else {
					s, _ := dialSeat(t, h, h.gameAddr(transport), id, 0, 0)
					if err := s.Conn.SendRaw(b.frame); err != nil {
						t.Fatalf("send: %v", err)
					}
					code, frames = s.CloseCode(5 * time.Second)
				}
				var se *protocol.ServerError
				for _, f := range frames {
					if e, ok := f.(*protocol.ServerError); ok {
						se = e
					}
				}
				if code != protocol.CloseProtocolViolation {
					t.Fatalf("close code %d, want %d", code, protocol.CloseProtocolViolation)
				}
				if transport == "tcp" && (se == nil || !se.Fatal || se.Code != protocol.ErrorMalformedFrame) {
					t.Fatalf("TCP: final ServerError %+v, want fatal MalformedFrame", se)
				}
				if se != nil && se.Code != protocol.ErrorMalformedFrame {
					t.Fatalf("ServerError code %d, want MalformedFrame", se.Code)
				}
				// The other connection is still served.
				nonce := time.Now().UnixNano()
				other.Send(&protocol.ClientPing{Nonce: nonce, ClientTimeMs: time.Now().UnixMilli()})
				clienttest.Await(other, 5*time.Second, func(p *protocol.ServerPong) bool { return p.Nonce == nonce })
			})
		}
	}
	run, _ := playBots(t, h, "tcp", 3, 0)
	if run.Results[0].Final == nil || !run.Results[0].Final.IsFinished {
		t.Fatalf("the match after the bad frames did not finish")
	}
}

// TestPGE2EDurableResumeAcrossActivationChange fences the live activation by
// claiming the match from the test (criterion 2 with failover, PostgreSQL).
// It fails if the connected clients have to reconnect, if the fenced
// activation acknowledges anything, if an intent acknowledged before the
// change is lost or applied again, or if a re-sent intentId is not a
// duplicate on the new activation.
func TestPGE2EDurableResumeAcrossActivationChange(t *testing.T) {
	h := startHarness(t, harnessOpts{postgres: true})
	id := h.createMatch(t, 21)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		// TCP: a passed read deadline does not break the connection, so
		// the client can wait a bounded time for an answer and re-send.
		seats[s], _ = dialSeat(t, h, h.gameAddr("tcp"), id, s, 0)
		clienttest.Await(seats[s], 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	moves := clienttest.Play(t, seats, "before", 5)
	lastSeq := moves[len(moves)-1].Seq
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := h.store.Claim(ctx, id, "intruder")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if rec.LastSeq() < 1 {
		t.Fatalf("the durable log is empty after 5 acknowledged intents")
	}

	// The next intent reaches the fenced activation, which must stay
	// silent; the same id is re-sent until a fresh activation answers.
	var decider *clienttest.Seat
	var v protocol.MatchView
	for _, s := range seats {
		if v = s.View(); clienttest.FirstPlay(v) != nil {
			decider = s
			break
		}
	}
	if decider == nil {
		t.Fatalf("nobody can move at seq %d", v.EventSeq)
	}
	if v.EventSeq != lastSeq {
		t.Fatalf("eventSeq %d after the claim, last acknowledged %d", v.EventSeq, lastSeq)
	}
	in := clienttest.FirstPlay(v)
	var res *protocol.ServerIntentResult
	attempts := 0
	clustertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		attempts++
		decider.Send(&protocol.ClientIntent{IntentID: "after", BasedOnSeq: v.EventSeq, Intent: in})
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			f, err := decider.Next(time.Until(deadline))
			if err != nil {
				var ce *client.CloseError
				if errors.As(err, &ce) {
					t.Fatalf("the connection closed (%v): the client had to reconnect", err)
				}
				return err
			}
			if r, ok := f.(*protocol.ServerIntentResult); ok && r.IntentID == "after" {
				res = r
				return nil
			}
		}
		return errors.New("no answer yet")
	})
	if !res.Accepted || res.EventSeq <= v.EventSeq {
		t.Fatalf("intent after the activation change: %+v", res)
	}
	t.Logf("answered by the new activation after %d send(s); result %+v", attempts, res)

	again := decider.Intent("after", 0, in)
	if !again.Duplicate || again.EventSeq != res.EventSeq {
		t.Fatalf("re-sent id after the change: %+v, want duplicate with eventSeq %d", again, res.EventSeq)
	}
	for _, m := range moves {
		r := seats[m.Seat].Intent(m.ID, 0, m.Intent)
		if !r.Duplicate || r.EventSeq != m.Seq {
			t.Fatalf("intent %s acknowledged before the change: %+v, want duplicate with eventSeq %d", m.ID, r, m.Seq)
		}
	}
	// Both connections are the original ones and agree with each other.
	views := [2]protocol.MatchView{seats[0].View(), seats[1].View()}
	for s, w := range views {
		if w.EventSeq != res.EventSeq {
			t.Fatalf("seat %d at eventSeq %d, want %d", s, w.EventSeq, res.EventSeq)
		}
	}
	if d := client.BoardFromView(&views[0]).Diff(client.BoardFromView(&views[1])); d != nil {
		t.Fatalf("seats disagree after the change: %s", strings.Join(d, "; "))
	}
	var owner string
	var epoch int64
	q := fmt.Sprintf("SELECT owner, epoch FROM %q.matches WHERE match_id = $1", h.schema)
	if err := pgQueryRow(t, q, id, &owner, &epoch); err != nil {
		t.Fatalf("read owner: %v", err)
	}
	if epoch <= rec.Epoch || owner == "intruder" {
		t.Fatalf("owner %q epoch %d; the intruder claimed epoch %d", owner, epoch, rec.Epoch)
	}
}

// rawTCPBadFrame says hello on a plain TCP socket, then writes payload with
// its own length prefix (client.Conn refuses to send an oversized frame),
// and returns the close code the final fatal ServerError stands for.
func rawTCPBadFrame(t *testing.T, h *harness, matchID string, payload []byte) (int, []protocol.ServerFrame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tk, err := h.admin.Ticket(ctx, matchID, 0)
	if err != nil {
		t.Fatalf("ticket: %v", err)
	}
	c, err := net.Dial("tcp", h.tcpAddr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	hello, err := protocol.EncodeClientFrame(&protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: tk.Ticket})
	if err != nil {
		t.Fatalf("encode hello: %v", err)
	}
	if err := protocol.WriteFrame(c, hello); err != nil {
		t.Fatalf("write hello: %v", err)
	}
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(payload)))); err != nil {
		t.Fatalf("write header: %v", err)
	}
	// The server may close before taking all of an oversized payload.
	_, _ = c.Write(payload) //nolint:errcheck // see above
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	fr := protocol.NewFrameReader(c, protocol.MaxFrameBytes)
	var frames []protocol.ServerFrame
	for {
		b, err := fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("read: %v", err)
			}
			break
		}
		f, err := protocol.DecodeServerFrame(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		frames = append(frames, f)
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if e, ok := frames[i].(*protocol.ServerError); ok && e.Fatal {
			return client.CloseCodeFor(e.Code), frames
		}
	}
	return 1006, frames
}
