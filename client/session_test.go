package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/protocol"
)

var quickBackoff = []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// env is a toy match behind a real edge server.
type env struct {
	srv     *edgetest.Server
	matches *edgetest.Matches
	admin   *client.Admin
	matchID string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// Registered first, so it runs after every session and server is closed.
	t.Cleanup(func() { checkNoGoroutines(t, "client.(*Session)") })
	m := edgetest.NewMatches()
	srv := edgetest.Start(t, m, func(c *edge.Config) {
		c.Logger = testLogger(t)
		c.MaxSpectators = 8
	})
	admin := client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil)
	id, err := admin.CreateMatch(context.Background(), [2]client.PlayerSpec{{Name: "Ann", Deck: "S1"}, {Name: "Bob", Deck: "S2"}}, nil)
	if err != nil {
		t.Fatalf("create match: %v", err)
	}
	return &env{srv: srv, matches: m, admin: admin, matchID: id}
}

func (e *env) addr(transport string) string {
	if transport == "tcp" {
		return "tcp://" + e.srv.TCPAddr
	}
	return e.srv.WSURL
}

func (e *env) start(t *testing.T, addr string, seat int, mod func(*client.Config)) *client.Session {
	t.Helper()
	cfg := client.Config{
		Addr:        addr,
		Ticket:      e.admin.TicketFunc(e.matchID, seat),
		ClientBuild: "client-test",
		Backoff:     quickBackoff,
		Logger:      testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := client.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start seat %d: %v", seat, err)
	}
	t.Cleanup(s.Close)
	return s
}

// outcome is what a toy player saw.
type outcome struct {
	seqs     []int64 // event seqs delivered, in order
	winner   int
	finished bool
	err      error
}

// playToy plays the toy game: EndTurn whenever a snapshot offers it, a
// snapshot request after each own result and on each clock naming this seat.
// onEvent, if set, runs after each delivered event.
func playToy(s *client.Session, timeout time.Duration, onEvent func(seq int64)) outcome {
	var o outcome
	o.winner = protocol.NoWinner
	deadline := time.After(timeout)
	var snapSeq int64 = -1
	pending := false
	for {
		var f protocol.ServerFrame
		var ok bool
		select {
		case f, ok = <-s.Frames():
			if !ok {
				o.err = fmt.Errorf("session ended: %w", s.Err())
				return o
			}
		case <-deadline:
			o.err = fmt.Errorf("no end within %v (lastSeq %d)", timeout, s.LastSeq())
			return o
		}
		switch f := f.(type) {
		case *protocol.ServerSnapshot:
			snapSeq = f.View.EventSeq
			if f.View.IsFinished {
				if o.finished {
					return o // the final snapshot after GameFinished
				}
				o.finished, o.winner = true, f.View.Winner
				_ = s.Resync(true)
				continue
			}
			if pending {
				continue // a snapshot after the result shows the new state
			}
			for _, in := range f.View.LegalIntents {
				if _, ok := in.(protocol.EndTurn); ok {
					pending = true
					if _, err := s.SendIntent(protocol.EndTurn{}); err != nil {
						o.err = err
						return o
					}
				}
			}
		case *protocol.ServerIntentResult:
			pending = false
			_ = s.Resync(true) // reconnecting: the hello brings a snapshot anyway
		case *protocol.ServerClock:
			if f.Clock.DecisionPlayer == s.Seat() && !pending && snapSeq < s.LastSeq() {
				_ = s.Resync(true)
			}
		case *protocol.ServerHello:
			pending = s.PendingIntents() > 0
			if f.Resumed {
				// Events only: ask for the legal intents.
				_ = s.Resync(true)
			}
		case *protocol.ServerEvents:
			for _, e := range f.Events {
				o.seqs = append(o.seqs, e.Seq)
				if g, ok := e.Event.(*protocol.GameFinishedEvent); ok {
					o.finished, o.winner = true, g.Winner
					_ = s.Resync(true) // a fresh snapshot to compare the Board with
				}
				if onEvent != nil {
					onEvent(e.Seq)
				}
			}
		}
	}
}

func checkOutcome(t *testing.T, name string, s *client.Session, o outcome) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("%s: %v", name, o.err)
	}
	if !o.finished || o.winner != 0 {
		t.Errorf("%s: finished %v winner %d, want seat 0 to win", name, o.finished, o.winner)
	}
	for i := 1; i < len(o.seqs); i++ {
		if o.seqs[i] != o.seqs[i-1]+1 {
			t.Errorf("%s: event seqs not continuous: %v", name, o.seqs)
			break
		}
	}
	checked, mism := s.Consistency()
	if checked == 0 || len(mism) > 0 {
		t.Errorf("%s: board checked %d times, mismatches %v", name, checked, mism)
	}
	b := s.Board()
	if !b.Finished || b.Winner != 0 || b.Players[1].Damage != edgetest.DamageToWin {
		t.Errorf("%s: final board %+v", name, b)
	}
}

func TestSessionPlaysToyMatch(t *testing.T) {
	for _, tr := range []string{"ws", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnv(t)
			var sessions [2]*client.Session
			var outcomes [2]outcome
			for seat := range 2 {
				sessions[seat] = e.start(t, e.addr(tr), seat, nil)
			}
			var wg sync.WaitGroup
			for seat := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outcomes[seat] = playToy(sessions[seat], 20*time.Second, nil)
				}()
			}
			wg.Wait()
			for seat := range 2 {
				checkOutcome(t, fmt.Sprintf("seat %d", seat), sessions[seat], outcomes[seat])
			}
			if fin, w := e.matches.Finished(e.matchID); !fin || w != 0 {
				t.Errorf("server: finished %v winner %d", fin, w)
			}
			for seat := range 2 {
				if err := sessions[seat].Leave(context.Background(), "done"); err != nil {
					t.Errorf("leave: %v", err)
				}
				if err := sessions[seat].Err(); err != nil {
					t.Errorf("Err after Leave = %v", err)
				}
				if closed, left := e.matches.Seat(e.matchID, seat).Closed(); !closed || !left {
					t.Errorf("seat %d closed %v left %v after Leave", seat, closed, left)
				}
			}
		})
	}
}

// TestSessionSurvivesCuts cuts every connection several times during the
// match; the sessions reconnect, resume, and finish with continuous events
// and a Board that agrees with the server.
func TestSessionSurvivesCuts(t *testing.T) {
	for _, tr := range []string{"ws", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnv(t)
			target := e.srv.TCPAddr
			if tr == "ws" {
				target = strings.TrimPrefix(strings.TrimSuffix(e.srv.WSURL, "/game"), "ws://")
			}
			p := newProxy(t, target)
			addr := "tcp://" + p.addr()
			if tr == "ws" {
				addr = "ws://" + p.addr() + "/game"
			}
			var sessions [2]*client.Session
			var outcomes [2]outcome
			for seat := range 2 {
				sessions[seat] = e.start(t, addr, seat, func(c *client.Config) { c.MaxAttempts = -1 })
			}
			var cutMu sync.Mutex
			cutAt := map[int64]bool{4: true, 9: true, 15: true}
			onEvent := func(seq int64) {
				cutMu.Lock()
				defer cutMu.Unlock()
				if cutAt[seq] {
					delete(cutAt, seq)
					p.cut()
				}
			}
			var wg sync.WaitGroup
			for seat := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outcomes[seat] = playToy(sessions[seat], 30*time.Second, onEvent)
				}()
			}
			wg.Wait()
			reconnects := 0
			for seat := range 2 {
				checkOutcome(t, fmt.Sprintf("seat %d", seat), sessions[seat], outcomes[seat])
				reconnects += sessions[seat].Reconnects()
			}
			if reconnects < 3 {
				t.Errorf("%d reconnects in total, want at least 3", reconnects)
			}
		})
	}
}

// sendWhileCut cuts the session's connection through p, keeps p down,
// waits until the session knows it is not connected, and sends an EndTurn
// intent, which the session keeps for the reconnect; it returns its id.
func sendWhileCut(t *testing.T, p *proxy, s *client.Session) string {
	t.Helper()
	p.setDown(true)
	p.cut()
	pollUntil(t, func() bool { return errors.Is(s.Resync(false), client.ErrNotConnected) })
	id, err := s.SendIntent(protocol.EndTurn{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSessionResendsPendingIntent: an intent sent while the network is down
// is sent after the reconnect, under the same id.
func TestSessionResendsPendingIntent(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.srv.TCPAddr)
	s := e.start(t, "tcp://"+p.addr(), 0, func(c *client.Config) { c.MaxAttempts = -1 })
	waitFrame[*protocol.ServerSnapshot](t, s)
	id := sendWhileCut(t, p, s)
	p.setDown(false)
	r := waitFrame[*protocol.ServerIntentResult](t, s)
	if r.IntentID != id || !r.Accepted {
		t.Fatalf("result %+v for intent %s", *r, id)
	}
	if s.PendingIntents() != 0 || s.Reconnects() != 1 {
		t.Errorf("pending %d reconnects %d", s.PendingIntents(), s.Reconnects())
	}
}

// roundTrips records what a session's OnIntentResult reports.
type roundTrips struct {
	mu  sync.Mutex
	ids []string
	rtt []time.Duration
}

func (r *roundTrips) add(res *protocol.ServerIntentResult, rtt time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, res.IntentID)
	r.rtt = append(r.rtt, rtt)
}

func (r *roundTrips) get() ([]string, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids), slices.Clone(r.rtt)
}

// TestSessionReportsIntentRoundTrips: OnIntentResult reports each intent's
// result once, on the session's reader (before the application reads the
// result from Frames), timed from the intent's first send: an intent sent
// while the connection is down and answered after the reconnect counts the
// time it waited.
func TestSessionReportsIntentRoundTrips(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.srv.TCPAddr)
	var got roundTrips
	s := e.start(t, "tcp://"+p.addr(), 0, func(c *client.Config) {
		c.MaxAttempts = -1
		c.OnIntentResult = got.add
	})
	waitFrame[*protocol.ServerSnapshot](t, s)

	// Answered while nobody reads Frames: the reader reports it anyway.
	before := time.Now()
	first, err := s.SendIntent(protocol.EndTurn{})
	if err != nil {
		t.Fatal(err)
	}
	pollUntil(t, func() bool { ids, _ := got.get(); return len(ids) == 1 })
	ids, rtts := got.get()
	if ids[0] != first || rtts[0] <= 0 || rtts[0] > time.Since(before) {
		t.Fatalf("reported %v %v for intent %s sent %v ago", ids, rtts, first, time.Since(before))
	}
	if r := waitFrame[*protocol.ServerIntentResult](t, s); r.IntentID != first {
		t.Fatalf("result %+v, want intent %s", *r, first)
	}

	// Sent while the connection is down: the wait is part of its round trip.
	second := sendWhileCut(t, p, s)
	const down = 150 * time.Millisecond
	time.Sleep(down)
	p.setDown(false)
	if r := waitFrame[*protocol.ServerIntentResult](t, s); r.IntentID != second {
		t.Fatalf("result %+v, want intent %s", *r, second)
	}
	ids, rtts = got.get()
	if len(ids) != 2 || ids[1] != second || rtts[1] < down {
		t.Fatalf("reported %v %v, want %s with a round trip of at least %v", ids, rtts, second, down)
	}
}

// TestSessionReportsReconnects: OnReconnect reports each replaced
// connection once (not the first connection): when the loss was seen, the
// attempts it took, and the successful attempt's phases, each timed and
// within the whole reconnect.
// reconnects records what a session's Config.OnReconnect reports.
type reconnects struct {
	mu  sync.Mutex
	got []client.Reconnect
}

func (r *reconnects) record(rc client.Reconnect) {
	r.mu.Lock()
	r.got = append(r.got, rc)
	r.mu.Unlock()
}

func (r *reconnects) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// nth waits for the n-th report (from 1) and returns it.
func (r *reconnects) nth(t *testing.T, n int) client.Reconnect {
	t.Helper()
	pollUntil(t, func() bool { return r.count() >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[n-1]
}

func TestSessionReportsReconnects(t *testing.T) {
	e := newEnv(t)
	p := newProxy(t, e.srv.TCPAddr)
	var got reconnects
	const ticketWait = 30 * time.Millisecond
	s := e.start(t, "tcp://"+p.addr(), 0, func(c *client.Config) {
		c.MaxAttempts = -1
		ticket := c.Ticket
		c.Ticket = func(ctx context.Context) (string, error) {
			time.Sleep(ticketWait)
			return ticket(ctx)
		}
		c.OnReconnect = got.record
	})
	waitFrame[*protocol.ServerSnapshot](t, s)
	if n := got.count(); n != 0 {
		t.Fatalf("the first connection was reported as a reconnect (%d reports)", n)
	}

	// Down for a while: the attempts made meanwhile fail, and the one
	// after it comes back succeeds.
	cutAt := time.Now()
	sendWhileCut(t, p, s)
	const down = 150 * time.Millisecond
	time.Sleep(down)
	p.setDown(false)
	waitFrame[*protocol.ServerIntentResult](t, s)
	r := got.nth(t, 1)
	if r.Lost.Before(cutAt) || !r.Done.After(r.Lost) || r.Done.Sub(r.Lost) < down {
		t.Errorf("lost %v after the cut, done %v after the loss; want the loss after the cut and done at least %v later",
			r.Lost.Sub(cutAt), r.Done.Sub(r.Lost), down)
	}
	if r.Attempts < 2 {
		t.Errorf("%d attempts; want the failed ones while down counted too", r.Attempts)
	}
	if r.Ticket < ticketWait || r.Dial <= 0 || r.Hello <= 0 || r.Ticket+r.Dial+r.Hello > r.Done.Sub(r.Lost) {
		t.Errorf("phases ticket %v, dial %v, hello %v in a reconnect of %v; want each timed (the ticket at least %v) and within it",
			r.Ticket, r.Dial, r.Hello, r.Done.Sub(r.Lost), ticketWait)
	}
	if n := s.Reconnects(); n != 1 {
		t.Errorf("Reconnects() = %d, want 1", n)
	}
}

// TestSessionGapResync: a ServerEvents frame that skips seqs is withheld and
// answered with a ClientResync.
func TestSessionGapResync(t *testing.T) {
	e := newEnv(t)
	s := e.start(t, e.addr("ws"), 1, nil)
	snap := waitFrame[*protocol.ServerSnapshot](t, s)
	seat := e.matches.Seat(e.matchID, 1)
	gap := &protocol.ServerEvents{FromSeq: snap.View.EventSeq + 5, ToSeq: snap.View.EventSeq + 5, Events: []protocol.EventEnvelope{
		{Seq: snap.View.EventSeq + 5, Event: &protocol.TurnStartedEvent{TurnNumber: 99}},
	}}
	b, err := protocol.EncodeServerFrame(gap)
	if err != nil {
		t.Fatal(err)
	}
	before := e.matches.Resyncs()
	seat.Sink().Deliver([][]byte{b})
	pollUntil(t, func() bool { return e.matches.Resyncs() == before+1 })
	// The resync answer says "up to date"; the gap frame was never delivered.
	ev := waitFrame[*protocol.ServerEvents](t, s)
	if ev.FromSeq != snap.View.EventSeq+1 || len(ev.Events) != 0 {
		t.Fatalf("delivered %+v, want the empty resync answer", *ev)
	}
	if s.LastSeq() != snap.View.EventSeq || s.Board().TurnNumber == 99 {
		t.Fatalf("gap frame applied: lastSeq %d board %+v", s.LastSeq(), s.Board())
	}
}

func TestSessionReplaced(t *testing.T) {
	e := newEnv(t)
	first := e.start(t, e.addr("ws"), 0, nil)
	waitFrame[*protocol.ServerSnapshot](t, first)
	second := e.start(t, e.addr("tcp"), 0, nil)
	waitFrame[*protocol.ServerSnapshot](t, second)
	select {
	case <-first.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("replaced session still running")
	}
	if err := first.Err(); !errors.Is(err, client.ErrReplaced) {
		t.Fatalf("Err = %v, want ErrReplaced", err)
	}
}

func TestSessionGivesUp(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name   string
		addr   string
		ticket client.TicketFunc
	}{
		{"bad ticket", e.addr("ws"), func(context.Context) (string, error) { return "forged", nil }},
		{"ticket service down", e.addr("tcp"), func(context.Context) (string, error) { return "", errors.New("meta API down") }},
		{"nothing listening", "tcp://127.0.0.1:1", e.admin.TicketFunc(e.matchID, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := client.Start(context.Background(), client.Config{Addr: tc.addr, Ticket: tc.ticket, Backoff: quickBackoff, Logger: testLogger(t)})
			if !errors.Is(err, client.ErrGaveUp) {
				t.Fatalf("err = %v, want ErrGaveUp", err)
			}
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("gave up after %v: the backoff was not waited", d)
			}
		})
	}
}

func TestConnCloseCodes(t *testing.T) {
	e := newEnv(t)
	expired, err := e.srv.Edge.Tickets().IssueAt(time.Now().Add(-time.Hour), e.matchID, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		hello   protocol.ClientHello
		code    int
		errCode protocol.ErrorCode
	}{
		{"version", protocol.ClientHello{ProtocolVersion: 7, Ticket: e.srv.Ticket(t, e.matchID, 0)}, protocol.CloseUnsupportedVersion, protocol.ErrorUnsupportedVersion},
		{"forged ticket", protocol.ClientHello{ProtocolVersion: 1, Ticket: "forged"}, protocol.CloseTicket, protocol.ErrorInvalidTicket},
		{"expired ticket", protocol.ClientHello{ProtocolVersion: 1, Ticket: expired.Token}, protocol.CloseTicket, protocol.ErrorTicketExpired},
	}
	for _, tc := range cases {
		for _, tr := range []string{"ws", "tcp"} {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				c, err := client.Dial(context.Background(), e.addr(tr), client.DialOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := c.Send(&tc.hello); err != nil {
					t.Fatal(err)
				}
				if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
					t.Fatal(err)
				}
				var ce *client.CloseError
				for {
					_, err := c.Recv()
					if err == nil {
						continue
					}
					if !errors.As(err, &ce) {
						t.Fatalf("Recv: %v, want a CloseError", err)
					}
					break
				}
				if ce.Code != tc.code || ce.ServerError == nil || ce.ServerError.Code != tc.errCode {
					t.Fatalf("close %+v, want code %d with ServerError %d", ce, tc.code, tc.errCode)
				}
			})
		}
	}
}

func TestAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	decks, err := e.admin.Decks(ctx)
	if err != nil || len(decks) != 2 || decks[1].ID != "S2" {
		t.Fatalf("decks %+v, %v", decks, err)
	}
	seed := uint64(1<<63 + 5)
	id, err := e.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "a", Deck: "S1"}, {Name: "b", Deck: "S1"}}, &seed)
	if err != nil || id == "" {
		t.Fatalf("create: %q %v", id, err)
	}
	tk, err := e.admin.Ticket(ctx, id, 1)
	if err != nil || tk.Seat != 1 || tk.MatchID != id || time.Until(tk.ExpiresAt) < 30*time.Second {
		t.Fatalf("ticket %+v, %v", tk, err)
	}
	var apiErr *client.APIError
	if _, err := e.admin.Ticket(ctx, "missing", 0); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "match_not_found" {
		t.Fatalf("ticket for a missing match: %v", err)
	}
	bad := client.NewAdmin(e.srv.HTTPURL, "wrong", nil)
	if _, err := bad.Decks(ctx); !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != "unauthorized" {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := e.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "a", Deck: "S7"}, {Name: "b", Deck: "S1"}}, nil); !errors.As(err, &apiErr) || apiErr.Code != "unknown_deck" {
		t.Fatalf("unknown deck: %v", err)
	}
}

func waitFrame[T protocol.ServerFrame](t *testing.T, s *client.Session) T {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-s.Frames():
			if !ok {
				t.Fatalf("session ended: %v", s.Err())
			}
			if v, ok := f.(T); ok {
				return v
			}
		case <-timeout:
			var zero T
			t.Fatalf("no %T within 5s", zero)
		}
	}
}

func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkNoGoroutines fails if goroutines running functions matching fn
// outlive the test.
func checkNoGoroutines(t *testing.T, fn string) {
	t.Helper()
	var stacks string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, fn) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines in %s still running:\n%s", fn, stacks)
}

// A spectator's Session (a ticket for seat 2): hello as seat 2, no legal
// intents, every event of a match two seats play to the end without a gap,
// and an intent refused with code Spectator.
func TestSpectatorSession(t *testing.T) {
	e := newEnv(t)
	spec := e.start(t, e.addr("ws"), protocol.SeatSpectator, nil)
	if h := waitFrame[*protocol.ServerHello](t, spec); h.PlayerIndex != protocol.SeatSpectator || spec.Seat() != protocol.SeatSpectator {
		t.Fatalf("spectator hello %+v, Seat %d", h, spec.Seat())
	}
	snap := waitFrame[*protocol.ServerSnapshot](t, spec)
	if legal, _ := spec.LegalIntents(); len(legal) != 0 || snap.View.You != protocol.SeatSpectator {
		t.Fatalf("a spectator's session offers %v", legal)
	}
	id, err := spec.SendIntent(protocol.Concede{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitFrame[*protocol.ServerIntentResult](t, spec); r.IntentID != id || r.Accepted || r.Code != protocol.RejectSpectator {
		t.Fatalf("a spectator's Concede: %+v, want refused with code Spectator", r)
	}
	seats := [2]*client.Session{e.start(t, e.addr("ws"), 0, nil), e.start(t, e.addr("tcp"), 1, nil)}
	done := make(chan outcome, 2)
	for _, s := range seats {
		go func() { done <- playToy(s, 20*time.Second, nil) }()
	}
	for range seats {
		if o := <-done; o.err != nil {
			t.Fatal(o.err)
		}
	}
	last := e.matches.Seat(e.matchID, 0).LastSeq()
	seen := snap.View.EventSeq
	for seen < last {
		ev := waitFrame[*protocol.ServerEvents](t, spec)
		if ev.FromSeq > seen+1 {
			t.Fatalf("the spectator's events jump from %d to %d", seen, ev.FromSeq)
		}
		seen = max(seen, ev.ToSeq)
	}
	if b := spec.Board(); !b.View().IsFinished {
		t.Fatalf("the spectator's board does not know the match ended")
	}
}
