package load

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/client"
)

// IdleConfig is one run of RunIdle.
type IdleConfig struct {
	// Admin creates the matches and their tickets.
	Admin *client.Admin
	// GameAddr is where the sessions connect (ws://HOST:PORT/game or
	// tcp://HOST:PORT); Decks are the two players' decks.
	GameAddr string
	Decks    [2]string
	// Sessions is how many sessions to hold: two per match, so even.
	Sessions int
	// Hold is how long they are held once all are connected.
	Hold time.Duration
	// SourceAddrs, if any, are the local addresses the sessions bind to in
	// turn (session i to SourceAddrs[i mod len]): one address toward one
	// server port has fewer ephemeral ports than 50,000 sessions need.
	SourceAddrs []netip.Addr
	// MetricsURL is the node's Prometheus endpoint; required.
	MetricsURL string
	// Progress, if set, gets a line every 500 matches connected.
	Progress io.Writer
	// Logger gets the sessions' connection events (nil: none).
	Logger *slog.Logger
}

// Validate checks c.
func (c *IdleConfig) Validate() error {
	switch {
	case c.Admin == nil:
		return fmt.Errorf("%w: no admin client", ErrConfig)
	case c.Sessions <= 0 || c.Sessions%2 != 0:
		return fmt.Errorf("%w: --idle must be a positive even number (two seats per match)", ErrConfig)
	case c.Hold < 0:
		return fmt.Errorf("%w: --idle-hold must not be negative", ErrConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// RunIdle connects c.Sessions sessions, two per new match, that send
// nothing but the client's keep-alive pings, holds them for c.Hold and
// reports how the node's RSS grew per connection. The figure includes
// everything a connected seat costs: the socket and its goroutines, the
// seat with its registry entry and keep-alive, and half a match grain. The
// sessions then leave, so that the matches end instead of waiting out their
// absence timers. The report comes back also when sessions failed to
// connect; the error says how many.
func RunIdle(ctx context.Context, c IdleConfig) (*IdleReport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	log := c.Logger
	node := newNodeWatch(c.MetricsURL)
	node.sample()
	if !node.ok {
		return nil, fmt.Errorf("--idle needs the node's process metrics at %s", c.MetricsURL)
	}
	rep := &IdleReport{Sessions: c.Sessions, RSSBytesBefore: node.rss}
	var (
		mu       sync.Mutex
		sessions []*client.Session
		errs     []error
	)
	holdCtx, stopHold := context.WithCancel(ctx)
	defer stopHold()
	matches := c.Sessions / 2
	sem := make(chan struct{}, StartAtOnce)
	var wg sync.WaitGroup
	var connected atomic.Int64
	for i := range matches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, err := c.Admin.CreateMatch(ctx, [2]client.PlayerSpec{{Name: "Idle A", Deck: c.Decks[0]}, {Name: "Idle B", Deck: c.Decks[1]}}, nil)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("match %d: create: %w", i, err))
				mu.Unlock()
				return
			}
			for seat := range 2 {
				var dial client.DialOptions
				if n := len(c.SourceAddrs); n > 0 {
					dial.LocalAddr = c.SourceAddrs[(2*i+seat)%n]
				}
				s, err := client.Start(ctx, client.Config{
					Addr: c.GameAddr, Ticket: c.Admin.TicketFunc(id, seat), ClientBuild: "matchctl-idle",
					MaxAttempts: 3, Dial: dial, Logger: log.With("match", id, "seat", seat),
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("match %s seat %d: connect: %w", id, seat, err))
					mu.Unlock()
					return
				}
				connected.Add(1)
				mu.Lock()
				sessions = append(sessions, s)
				mu.Unlock()
				go func() { // read and drop what the server pushes (clocks)
					for {
						select {
						case <-holdCtx.Done():
							return
						case _, ok := <-s.Frames():
							if !ok {
								return
							}
						}
					}
				}()
			}
			if c.Progress != nil && (i+1)%500 == 0 {
				fmt.Fprintf(c.Progress, "%d of %d sessions connected\n", connected.Load(), c.Sessions)
			}
		}()
	}
	wg.Wait()
	rep.Connected = int(connected.Load())
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "%d sessions connected; holding them for %v\n", rep.Connected, c.Hold)
	}
	node.markStart()
	heldFrom := time.Now()
	tick := time.NewTicker(time.Second)
hold:
	for time.Since(heldFrom) < c.Hold {
		select {
		case <-ctx.Done():
			break hold
		case <-tick.C:
			node.sample()
		}
	}
	tick.Stop()
	rep.HeldSeconds = time.Since(heldFrom).Seconds()
	node.sample()
	node.markEnd()
	rep.RSSBytesHeld = node.rss
	rep.NodeCPUSecondsIdl = node.cpuEnd - node.cpuStart
	if rep.Connected > 0 {
		rep.RSSBytesPerConn = (rep.RSSBytesHeld - rep.RSSBytesBefore) / float64(rep.Connected)
	}
	mu.Lock()
	for _, s := range sessions {
		select {
		case <-s.Done():
			rep.Dropped++
		default:
		}
	}
	if len(errs) > 0 {
		rep.FirstError = errs[0].Error()
	}
	all := sessions
	mu.Unlock()
	stopHold()
	var lw sync.WaitGroup
	for i, s := range all {
		lw.Add(1)
		sem <- struct{}{}
		go func() {
			defer lw.Done()
			defer func() { <-sem }()
			lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Leave(lctx, "idle test over"); err != nil {
				log.Debug("leave", "session", i, "err", err)
			}
		}()
	}
	lw.Wait()
	if len(errs) > 0 {
		return rep, fmt.Errorf("%d of %d sessions failed to connect: %w", len(errs), c.Sessions, errs[0])
	}
	return rep, nil
}
