package bots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

// spectatorCatchUp bounds how long a spectator may trail the seats once
// they saw the end: the server flushes a delayed spectator's batches at the
// end, so only the network and a busy machine stand between.
const spectatorCatchUp = 30 * time.Second

// spectator is one read-only session following a match: it takes in every
// frame (a load's spectators cost the server what a real viewer would) and
// reports when it has seen the seats' last event.
type spectator struct {
	s       *client.Session
	target  atomic.Int64 // the seats' last eventSeq; MaxInt64 until known
	reached chan struct{}
	once    sync.Once
	done    chan struct{}
}

// startSpectators connects n spectators to match id at addr; on an error
// the ones already connected are closed.
func startSpectators(ctx context.Context, admin *client.Admin, o MatchOptions, id string, n int, st *Stats, log *slog.Logger) ([]*spectator, error) {
	out := make([]*spectator, 0, n)
	for i := range n {
		s, err := client.Start(ctx, client.Config{
			Addr:        o.GameAddr,
			Fallback:    o.Fallback,
			Ticket:      admin.TicketFunc(id, protocol.SeatSpectator),
			ClientBuild: "matchgrain-bot",
			MaxAttempts: -1,
			Logger:      log.With("spectator", i),
		})
		if err != nil {
			for _, sp := range out {
				sp.s.Close()
			}
			return nil, fmt.Errorf("match %s spectator %d: connect: %w", id, i, err)
		}
		sp := &spectator{s: s, reached: make(chan struct{}), done: make(chan struct{})}
		sp.target.Store(math.MaxInt64)
		go sp.read(st)
		out = append(out, sp)
	}
	return out, nil
}

// read drains the session's frames until it ends, counting the ones that
// carry the match (events and snapshots).
func (sp *spectator) read(st *Stats) {
	defer close(sp.done)
	for f := range sp.s.Frames() {
		switch f.(type) {
		case *protocol.ServerEvents, *protocol.ServerSnapshot:
			st.spectatorFrame()
		}
		if sp.s.LastSeq() >= sp.target.Load() {
			sp.once.Do(func() { close(sp.reached) })
		}
	}
}

// await waits until the spectator has seen eventSeq last, or fails after
// spectatorCatchUp or when ctx ends.
func (sp *spectator) await(ctx context.Context, last int64) error {
	sp.target.Store(last)
	// The frame that reached last may have been read before the target was
	// known: look once more.
	if sp.s.LastSeq() >= last {
		return nil
	}
	t := time.NewTimer(spectatorCatchUp)
	defer t.Stop()
	select {
	case <-sp.reached:
		return nil
	case <-sp.done:
		return fmt.Errorf("session ended at eventSeq %d, before %d: %w", sp.s.LastSeq(), last, sp.s.Err())
	case <-t.C:
		return fmt.Errorf("still at eventSeq %d %v after the seats saw %d", sp.s.LastSeq(), spectatorCatchUp, last)
	case <-ctx.Done():
		return fmt.Errorf("at eventSeq %d of %d: %w", sp.s.LastSeq(), last, ctx.Err())
	}
}

// leave ends the spectator's session and waits for its reader.
func (sp *spectator) leave(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sp.s.Leave(ctx, "match over"); err != nil {
		log.Debug("spectator leave", "err", err)
	}
	<-sp.done
}

// awaitSpectators checks that every spectator reached the seats' last
// event: a spectator's stream ends where the match did.
func awaitSpectators(ctx context.Context, id string, sps []*spectator, last int64) error {
	var errs []error
	for i, sp := range sps {
		if err := sp.await(ctx, last); err != nil {
			errs = append(errs, fmt.Errorf("match %s spectator %d: %w", id, i, err))
		}
	}
	return errors.Join(errs...)
}
