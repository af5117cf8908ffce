package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/game/botpolicy"
	"github.com/matchgrain/matchgrain/protocol"
)

// Op is one intent of the history: what a seat sent, through which member,
// and what came back.
type Op struct {
	Match  string
	Seat   int
	ID     string
	Intent protocol.Intent
	Member int // the member the seat's connection went through when it was sent (0: none yet)
	Sent   time.Time

	// Set by the first answer; Conflict when a later answer for the same
	// id disagrees with it (another seq, or accepted against rejected).
	Answered  time.Time
	Accepted  bool
	Duplicate bool
	Code      protocol.IntentRejectCode
	Seq       int64
	Conflict  string
}

// Match is one match of the workload.
type Match struct {
	ID       string
	Started  time.Time // both seats connected
	Finished time.Time // zero: never seen to finish
	// Final is each seat's view at the end: winner and last seq.
	Final      [2]*protocol.MatchView
	Mismatches []string // the sessions' Board-against-snapshot disagreements
	Err        error

	players [2]*player // while it plays: what each seat waits for (stuck)
}

// stuck describes what each seat of a match still in play waits for.
func (m *Match) stuck() string {
	var parts []string
	for s, p := range m.players {
		if p == nil {
			continue
		}
		legal, seq := p.s.LegalIntents()
		parts = append(parts, fmt.Sprintf("seat %d: lastSeq %d, Board at %d with %d legal intents, pending intent %q, waiting for seq %d, via m%d, %d reconnects",
			s, p.s.LastSeq(), seq, len(legal), p.pendingNow(), p.waitSeq.Load(), p.proxy.current.Load(), p.s.Reconnects()))
	}
	return strings.Join(parts, "; ")
}

// History is everything the workload saw, for the checker.
type History struct {
	mu      sync.Mutex
	Ops     []*Op
	Matches []*Match
}

// meanLength is the mean time the finished matches took (0 before the first).
func (h *History) meanLength() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var sum time.Duration
	n := 0
	for _, m := range h.Matches {
		if !m.Finished.IsZero() {
			sum += m.Finished.Sub(m.Started)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

func (h *History) addOp(o *Op) {
	h.mu.Lock()
	h.Ops = append(h.Ops, o)
	h.mu.Unlock()
}

// answer records an answer to o; the first wins, a later disagreeing one
// is a conflict.
func (h *History) answer(o *Op, r *protocol.ServerIntentResult, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o.Answered.IsZero() {
		o.Answered, o.Accepted, o.Duplicate, o.Code, o.Seq = at, r.Accepted, r.Duplicate, r.Code, r.EventSeq
		return
	}
	if o.Accepted && (r.Accepted != o.Accepted || r.EventSeq != o.Seq) {
		o.Conflict = fmt.Sprintf("answered accepted at seq %d, then accepted=%v seq %d", o.Seq, r.Accepted, r.EventSeq)
	}
}

// workload plays bot matches through random members and records them.
type workload struct {
	members []*member
	admin   *client.Admin
	timing  Timing
	think   time.Duration
	hist    *History
	lg      *slog.Logger
}

// randomMember is a member's number, as a load balancer without health
// checks would choose.
func (w *workload) randomMember() int { return rand.IntN(len(w.members)) + 1 }

// newAdmin is the API client: every request goes to a random member.
func newAdmin(w *workload, token string) *client.Admin {
	d := &net.Dialer{Timeout: 2 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, w.members[w.randomMember()-1].httpAddr())
		},
		DisableKeepAlives: true,
	}
	return client.NewAdmin("http://matchgrain", token, &http.Client{Transport: tr, Timeout: 10 * time.Second})
}

// seatProxy is a seat's load balancer: each connection the seat's session
// makes goes to a random member, and the proxy remembers which.
type seatProxy struct {
	w       *workload
	ln      net.Listener
	current atomic.Int32
}

func newSeatProxy(w *workload) (*seatProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("seat proxy: %w", err)
	}
	p := &seatProxy{w: w, ln: ln}
	go p.serve()
	return p, nil
}

func (p *seatProxy) addr() string { return "ws://" + p.ln.Addr().String() + "/game" }

func (p *seatProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		go p.pipe(c)
	}
}

func (p *seatProxy) pipe(down net.Conn) {
	n := p.w.randomMember()
	up, err := net.DialTimeout("tcp", p.w.members[n-1].httpAddr(), 2*time.Second)
	if err != nil {
		_ = down.Close() // the client sees a failed attempt and retries
		return
	}
	p.current.Store(int32(n))
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side fails or closes
		done <- struct{}{}
	}
	go cp(up, down)
	go cp(down, up)
	<-done
	_ = up.Close()
	_ = down.Close()
	<-done
}

func (p *seatProxy) close() { _ = p.ln.Close() }

// Client timing: a connection silent this long is dead. Scaled down from
// the client's defaults (15 s ping, 45 s read) like the members' timers,
// so that a seat behind a cut link notices within seconds.
const (
	clientPing        = time.Second
	clientReadTimeout = 5 * time.Second
)

// clientBackoff is the seats' reconnection backoff, scaled down from the
// client's default (0, 2, 10, 30 s).
var clientBackoff = []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}

// playMatch creates one match and plays it to the end with two seats.
func (w *workload) playMatch(ctx context.Context, botSeed uint64) {
	m := &Match{}
	var id string
	err := retry(ctx, 60*time.Second, func(ctx context.Context) error {
		var err error
		id, err = w.admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "A", Deck: "S1"}, {Name: "B", Deck: "S2"}}, nil)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			w.lg.Warn("create match failed", "err", err)
		}
		return
	}
	m.ID = id
	w.hist.mu.Lock()
	w.hist.Matches = append(w.hist.Matches, m)
	w.hist.mu.Unlock()
	var sessions [2]*client.Session
	var proxies [2]*seatProxy
	defer func() {
		for s := range 2 {
			if sessions[s] != nil {
				sessions[s].Close()
			}
			if proxies[s] != nil {
				proxies[s].close()
			}
		}
	}()
	for s := range 2 {
		p, err := newSeatProxy(w)
		if err != nil {
			m.Err = err
			return
		}
		proxies[s] = p
		sess, err := client.Start(ctx, client.Config{
			Addr: p.addr(), Ticket: w.admin.TicketFunc(id, s), ClientBuild: "matchgrain-nemesis",
			Backoff: clientBackoff, MaxAttempts: -1, PingInterval: clientPing, ReadTimeout: clientReadTimeout,
			Logger: w.lg.With("match", id, "seat", s),
		})
		if err != nil {
			m.Err = fmt.Errorf("match %s seat %d: connect: %w", id, s, err)
			return
		}
		sessions[s] = sess
	}
	w.hist.mu.Lock()
	m.Started = time.Now()
	w.hist.mu.Unlock()
	var wg sync.WaitGroup
	var errs [2]error
	for s := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl := &player{w: w, m: m, seat: s, s: sessions[s], proxy: proxies[s], rng: rand.New(rand.NewPCG(botSeed, uint64(s))), ops: map[string]*Op{}}
			w.hist.mu.Lock()
			m.players[s] = pl
			w.hist.mu.Unlock()
			errs[s] = pl.play(ctx)
		}()
	}
	wg.Wait()
	w.hist.mu.Lock()
	defer w.hist.mu.Unlock()
	m.Err = errors.Join(errs[:]...)
	if m.Err == nil {
		m.Finished = time.Now()
	}
	for s := range 2 {
		_, mism := sessions[s].Consistency()
		_, vmism := sessions[s].ViewConsistency()
		for _, x := range append(mism, vmism...) {
			m.Mismatches = append(m.Mismatches, fmt.Sprintf("seat %d: %s", s, x))
		}
	}
}

// player plays one seat with the bots' policy (botpolicy.Choose) and records
// every intent it sends.
type player struct {
	w     *workload
	m     *Match
	seat  int
	s     *client.Session
	proxy *seatProxy
	rng   *rand.Rand
	ops   map[string]*Op

	pendingMu sync.Mutex
	pending   string       // the intent awaiting its result
	waitSeq   atomic.Int64 // act only once the Board reached the seq of the last accepted intent
}

func (p *player) pendingNow() string {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	return p.pending
}

func (p *player) setPending(id string) {
	p.pendingMu.Lock()
	p.pending = id
	p.pendingMu.Unlock()
}

// stallAfter: no progress this long, ask for a snapshot (as the bots do).
const stallAfter = 2 * time.Second

func (p *player) play(ctx context.Context) error {
	stall := time.NewTimer(stallAfter)
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("match %s seat %d: not finished (lastSeq %d): %w", p.m.ID, p.seat, p.s.LastSeq(), ctx.Err())
		case <-stall.C:
			if p.pending == "" {
				_ = p.s.Resync(true) // not connected: the next hello brings the state anyway
			}
			stall.Reset(stallAfter)
		case f, ok := <-p.s.Frames():
			if !ok {
				return fmt.Errorf("match %s seat %d: session ended: %w", p.m.ID, p.seat, p.s.Err())
			}
			if _, clock := f.(*protocol.ServerClock); !clock {
				stall.Reset(stallAfter)
			}
			if p.handle(f) {
				b := p.s.Board()
				v := b.View()
				p.w.hist.mu.Lock()
				p.m.Final[p.seat] = &v
				p.w.hist.mu.Unlock()
				return nil
			}
		}
	}
}

// handle takes one frame; true once the match is over for this seat.
func (p *player) handle(f protocol.ServerFrame) bool {
	switch f := f.(type) {
	case *protocol.ServerHello:
		if p.s.PendingIntents() == 0 {
			p.setPending("")
		}
	case *protocol.ServerSnapshot:
		if f.View.IsFinished {
			return true
		}
	case *protocol.ServerEvents:
		for _, e := range f.Events {
			if _, ok := e.Event.(*protocol.GameFinishedEvent); ok {
				return true
			}
		}
	case *protocol.ServerIntentResult:
		if o := p.ops[f.IntentID]; o != nil {
			p.w.hist.answer(o, f, time.Now())
		}
		if f.IntentID == p.pending {
			p.setPending("")
			if f.Accepted {
				p.waitSeq.Store(max(p.waitSeq.Load(), f.EventSeq))
			}
		}
		if !f.Accepted && (f.Code == protocol.RejectStale || f.Code == protocol.RejectIllegal) {
			_ = p.s.Resync(true) // the Board disagrees with the server: the protocol's answer is a snapshot
			return false
		}
	default:
		return false
	}
	p.decide()
	return false
}

// decide sends an intent when this seat decides.
func (p *player) decide() {
	if p.pending != "" {
		return
	}
	legal, seq := p.s.LegalIntents()
	if seq < p.waitSeq.Load() {
		return
	}
	in := botpolicy.Choose(legal, p.rng)
	if in == nil {
		return
	}
	if p.w.think > 0 {
		time.Sleep(p.w.think) // the player thinks; the match's other seat waits on the server, not on this
	}
	o := &Op{Match: p.m.ID, Seat: p.seat, Intent: in, Member: int(p.proxy.current.Load()), Sent: time.Now()}
	id, err := p.s.SendIntent(in)
	if err != nil {
		return
	}
	o.ID = id
	p.ops[id] = o
	p.w.hist.addOp(o)
	p.setPending(id)
}

// retry calls f until it succeeds, ctx ends or patience runs out, with a
// short pause between attempts.
func retry(ctx context.Context, patience time.Duration, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(patience)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(300 * time.Millisecond):
		}
	}
}
