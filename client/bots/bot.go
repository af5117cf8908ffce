package bots

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/game/botpolicy"
	"github.com/matchgrain/matchgrain/protocol"
)

// bot plays one seat from events alone (docs/protocol.md §13): it picks
// among the legal intents its session's Board keeps from the Decision event
// that ends every batch. It asks for a snapshot only where the protocol says
// so: an intent rejected as Stale or Illegal (its Board disagrees with the
// server), a stall without progress (stallTimeout: a safety net that
// normal play never needs), the final state in verify mode, and after every
// batch in verify mode, where the session compares the Board with each
// snapshot.
//
// Against a server that sends no Decision events (an older one, or a test
// engine), the bot falls back to asking for a snapshot after every batch,
// every result of its own that no batch follows, and every resumed hello,
// and acts on those.
//
// The bot acts only while no intent of its own is pending and once its
// Board has reached the eventSeq of its last accepted intent, so it never
// decides on the state before its own intent.
type bot struct {
	name       string
	s          *client.Session
	rng        *rand.Rand
	logf       func(format string, args ...any) // nil: quiet
	narrate    bool                             // print the match's events
	announce   bool                             // print the bot's decisions
	killEvery  int                              // drop the connection every N intents (0: never)
	chaos      bool                             // drop the connection at random, mostly after decision-only intents
	verify     bool                             // a full snapshot after every batch, compared with the Board
	think      time.Duration
	minGap     time.Duration   // at least this long between two of the bot's intents
	pace       *pacer          // nil: closed loop (send as soon as decided)
	ctx        context.Context // the match's; ends a wait for the pacer
	stallAfter time.Duration   // no progress for this long: ask for a snapshot
	stats      *Stats

	pending   string // intentId awaiting its result
	sentAt    time.Time
	waitSeq   int64 // the Board must reach this seq (the last accepted intent's) before the bot acts
	finalSeen bool
	final     *protocol.MatchView
	intents   int
	rejected  int
	snapshots int // snapshots this bot asked for

	// handledSeq is the eventSeq of the last snapshot or events frame this
	// bot has handled. The session's own seq runs ahead of it (its reader
	// takes in frames the bot has not read yet), so only this one says
	// which events a result still announces.
	handledSeq int64
}

// minStallAfter: after this long without progress a bot asks for a
// snapshot, unless its match is paced so slowly that progress comes later
// than that in normal play (see stallTimeout).
const minStallAfter = 2 * time.Second

// stallTimeout is how long a bot waits without progress before it asks for
// a snapshot. An open-loop match makes progress once per tick at best, and
// a bot that thinks before each decision once per think, so the safety net
// waits three of those: at 0.1 intents/s a fixed 2 s had every bot of a
// quiet match ask for a snapshot every 2 s, many more snapshots than
// intents, which a load test then measured as the server's work.
func stallTimeout(pace *pacer, think time.Duration) time.Duration {
	d := minStallAfter
	if pace != nil {
		d = max(d, 3*pace.interval)
	}
	return max(d, 3*think)
}

// DefaultConnectionRate keeps a bot under the protocol's 16 intents per
// second per connection (docs/protocol.md §2), with a margin for jitter.
const DefaultConnectionRate = 14

// Stats collects intent latencies over many bots; safe for concurrent use.
type Stats struct {
	// Observe, if set, sees every intent result and every open-loop tick as
	// it happens (a load tool's time windows and live progress); it may be
	// called from many goroutines at once. Set it before the first match.
	Observe func(Observation)
	// Reconnected, if set, sees every reconnect of a player's session
	// (client.Config.OnReconnect; not a spectator's): where a failover's
	// time goes on the clients' side. It may be called from many
	// goroutines at once. Set it before the first match.
	Reconnected func(client.Reconnect)

	mu        sync.Mutex
	latencies []time.Duration
	intents   int
	rejected  int
	ticks     int
	skipped   int
	snapshots int
	// spectatorFrames counts the events and snapshot frames spectators took in.
	spectatorFrames int
}

// Observation is one intent result (Tick false) or one open-loop tick.
type Observation struct {
	At       time.Time
	Tick     bool
	Skipped  bool          // a tick that found the previous intent in flight or none chosen
	Latency  time.Duration // send → result
	Accepted bool
	// Seat sent the intent; IntentID, EventSeq and Duplicate are its
	// result's (a failover workload re-sends acknowledged intents).
	Seat      int
	IntentID  string
	EventSeq  int64
	Duplicate bool
}

func (st *Stats) add(seat int, r *protocol.ServerIntentResult, d time.Duration) {
	st.mu.Lock()
	st.latencies = append(st.latencies, d)
	st.intents++
	if !r.Accepted {
		st.rejected++
	}
	st.mu.Unlock()
	if st.Observe != nil {
		st.Observe(Observation{At: time.Now(), Latency: d, Accepted: r.Accepted, Seat: seat,
			IntentID: r.IntentID, EventSeq: r.EventSeq, Duplicate: r.Duplicate})
	}
}

func (st *Stats) tick(skipped bool) {
	st.mu.Lock()
	st.ticks++
	if skipped {
		st.skipped++
	}
	st.mu.Unlock()
	if st.Observe != nil {
		st.Observe(Observation{At: time.Now(), Tick: true, Skipped: skipped})
	}
}

func (st *Stats) snapshot() {
	st.mu.Lock()
	st.snapshots++
	st.mu.Unlock()
}

// Snapshots returns how many snapshots the bots have asked for so far
// (stalls, Stale or Illegal rejections, and every batch in verify mode):
// a load test whose bots ask for many measures the snapshots too.
func (st *Stats) Snapshots() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snapshots
}

func (st *Stats) spectatorFrame() {
	st.mu.Lock()
	st.spectatorFrames++
	st.mu.Unlock()
}

// SpectatorFrames returns how many frames carrying the match (events and
// snapshots) the spectators (MatchOptions.Spectators) have received so far.
func (st *Stats) SpectatorFrames() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.spectatorFrames
}

// Ticks returns the open-loop ticks so far and how many were skipped.
func (st *Stats) Ticks() (ticks, skipped int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ticks, st.skipped
}

// Result is how one bot's match ended.
type Result struct {
	// Final is the final state: a fresh snapshot in verify mode (or when
	// the end was only seen in a snapshot), else the Board's view.
	Final *protocol.MatchView
	// Board is the bot's local view built from events.
	Board client.Board
	// Checked counts snapshots the local view was compared with; Mismatches
	// lists the differences found. ViewChecked and ViewMismatches are the
	// same for the whole view the Board keeps (MatchView but the clock).
	Checked        int
	Mismatches     []string
	ViewChecked    int
	ViewMismatches []string
	Intents        int
	Rejected       int
	Reconnects     int
	// EventComplete: the server sent Decision events (docs/protocol.md §13).
	EventComplete bool
	// Snapshots counts the snapshots the bot asked for (verify mode: one
	// per batch; otherwise only stalls, Stale or Illegal rejections).
	Snapshots int
}

var errNoEnd = errors.New("match did not end")

// play runs the bot until the match is over and a fresh snapshot has been
// compared with the local board.
func (b *bot) play(ctx context.Context) (Result, error) {
	// A timer pushed back by every sign of progress, not a ticker that
	// checks: a load tool runs thousands of bots, and a ticker woke each
	// of them every second for nothing (as many wake-ups as intents at
	// 1,000 matches × 2/s).
	stall := time.NewTimer(b.stallAfter)
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("%s: %w (lastSeq %d): %w", b.name, errNoEnd, b.s.LastSeq(), ctx.Err())
		case <-stall.C:
			if b.pending != "" {
				// Its result (or the session's resend after a reconnect)
				// is the progress to wait for; look again soon.
				stall.Reset(b.stallAfter / 2)
				continue
			}
			b.resync()
			stall.Reset(b.stallAfter)
		case f, ok := <-b.s.Frames():
			if !ok {
				return Result{}, fmt.Errorf("%s: session ended: %w", b.name, b.s.Err())
			}
			if _, clock := f.(*protocol.ServerClock); !clock {
				// Clocks tick while nothing happens: they are not progress,
				// or a stalled bot would never ask for a fresh snapshot.
				stall.Reset(b.stallAfter)
			}
			if done := b.handle(f); done {
				checked, mism := b.s.Consistency()
				vchecked, vmism := b.s.ViewConsistency()
				return Result{
					Final: b.final, Board: b.s.Board(), Checked: checked, Mismatches: mism,
					ViewChecked: vchecked, ViewMismatches: vmism, EventComplete: b.s.EventComplete(),
					Intents: b.intents, Rejected: b.rejected, Reconnects: b.s.Reconnects(), Snapshots: b.snapshots,
				}, nil
			}
		}
	}
}

func (b *bot) resync() {
	b.snapshots++
	if b.stats != nil {
		b.stats.snapshot()
	}
	if err := b.s.Resync(true); err != nil && !errors.Is(err, client.ErrNotConnected) {
		b.say("resync failed: %v", err)
	}
}

func (b *bot) say(format string, args ...any) {
	if b.logf != nil {
		b.logf("%s: "+format, append([]any{b.name}, args...)...)
	}
}

// handle processes one frame; true when the bot is done.
func (b *bot) handle(f protocol.ServerFrame) bool {
	switch f := f.(type) {
	case *protocol.ServerHello:
		if b.s.Reconnects() > 0 {
			b.say("reconnected (resumed=%v, eventSeq %d)", f.Resumed, f.EventSeq)
		}
		if b.s.PendingIntents() == 0 {
			b.pending = ""
			if b.pace != nil {
				b.pace.done()
			}
		}
		if f.Resumed && b.legacy() {
			b.resync()
		}
	case *protocol.ServerSnapshot:
		b.handledSeq = f.View.EventSeq
		return b.onSnapshot(&f.View)
	case *protocol.ServerEvents:
		b.handledSeq = max(b.handledSeq, f.ToSeq)
		for _, e := range f.Events {
			if b.narrate && b.logf != nil {
				if line := describe(e); line != "" {
					b.logf("%s", line)
				}
			}
			if _, ok := e.Event.(*protocol.GameFinishedEvent); ok {
				b.finalSeen = true
			}
		}
		if b.finalSeen {
			if b.verify {
				b.resync() // the fresh snapshot to verify against
				return false
			}
			board := b.s.Board()
			v := board.View()
			b.final = &v
			return true
		}
		if b.legacy() {
			b.resync() // the legal intents come with the snapshot
			return false
		}
		if b.verify {
			b.resync() // compared with the Board at the same seq by the session
		}
		b.decide()
	case *protocol.ServerIntentResult:
		if f.IntentID == b.pending {
			b.pending = ""
			if f.Accepted {
				b.waitSeq = max(b.waitSeq, f.EventSeq)
			}
			if b.pace != nil {
				b.pace.done()
			}
		}
		if !f.Accepted && f.Code != protocol.RejectMatchFinished {
			b.rejected++
			b.say("intent rejected: code %d %q", f.Code, f.Reason)
			if f.Code == protocol.RejectStale || f.Code == protocol.RejectIllegal {
				// The Board disagrees with the server: the protocol's answer is a snapshot.
				b.resync()
				return false
			}
		}
		if b.legacy() {
			if f.EventSeq > b.handledSeq {
				// The result comes ahead of its batch: the batch's frame
				// resyncs if the server is still without Decision events.
				// Deciding on legacy() now would race the session's
				// reader, which may or may not have taken in the batch's
				// Decision yet (the first intent of a match asked for a
				// snapshot or not by timing alone).
				return false
			}
			b.resync() // an intent may change the state without an event there
			return false
		}
		b.decide()
	case *protocol.ServerError:
		b.say("server error %d: %s", f.Code, f.Message)
	}
	return false
}

func (b *bot) onSnapshot(v *protocol.MatchView) bool {
	if v.IsFinished {
		b.final = v
		if !b.finalSeen && b.narrate && b.logf != nil {
			// GameFinished happened before this connection and the server
			// could not resume it (a fresh hello, a pruned log): only the
			// snapshot says how the match ended.
			line := fmt.Sprintf("#%-4d GAME OVER: draw", v.EventSeq)
			if v.Winner != protocol.NoWinner {
				line = fmt.Sprintf("#%-4d GAME OVER: P%d wins", v.EventSeq, v.Winner)
			}
			if v.FinishReason != nil {
				if name, ok := finishNames[*v.FinishReason]; ok {
					line += " (" + name + ")"
				}
			}
			b.logf("%s (seen in the final snapshot)", line)
		}
		return true
	}
	b.decide()
	return false
}

// legacy: the server sends no Decision events, so legal intents come from
// snapshots only.
func (b *bot) legacy() bool { return !b.s.EventComplete() }

// decide sends an intent when the Board says this seat decides.
func (b *bot) decide() {
	if b.pending != "" {
		return
	}
	legal, seq := b.s.LegalIntents()
	if seq < b.waitSeq {
		return // the events of the bot's last intent are not in yet
	}
	in := botpolicy.Choose(legal, b.rng)
	if in == nil {
		return // not the decider
	}
	if b.think > 0 {
		time.Sleep(b.think)
	}
	if wait := b.minGap - time.Since(b.sentAt); b.minGap > 0 && wait > 0 {
		time.Sleep(wait)
	}
	if b.pace != nil && !b.pace.wait(b.ctx) {
		return // the match is over for the load tool
	}
	id, err := b.s.SendIntent(in)
	if err != nil {
		if b.pace != nil {
			b.pace.done()
		}
		b.say("send intent: %v", err)
		return
	}
	b.pending, b.sentAt = id, time.Now()
	b.intents++
	if b.announce && b.logf != nil {
		b.logf("      %s decides: %s", b.name, describeIntent(in))
	}
	switch {
	case b.killEvery > 0 && b.intents%b.killEvery == 0:
		b.say("dropping the connection (chaos)")
		b.s.Drop()
	case b.chaos && b.rng.IntN(100) < chaosDropPercent(in):
		b.say("dropping the connection right after %s (chaos)", describeIntent(in))
		b.s.Drop()
	}
}

// chaosDropPercent is how often a chaos bot drops its connection right
// after sending in: often after the intents that only move a decision
// forward (they once changed the view without any event), rarely otherwise.
func chaosDropPercent(in protocol.Intent) int {
	switch in := in.(type) {
	case protocol.SelectTrigger, protocol.FinishMulligan:
		return 40
	case protocol.ResolveAbility:
		if in.Accept {
			return 40
		}
	}
	return 3
}

// Snapshot returns the latencies so far (unsorted) and the intent counts.
func (st *Stats) Snapshot() (latencies []time.Duration, intents, rejected int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]time.Duration(nil), st.latencies...), st.intents, st.rejected
}
