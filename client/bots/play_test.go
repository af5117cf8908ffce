package bots_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/edge/edgetest"
	"github.com/matchgrain/matchgrain/edge/grains/grainstest"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestBotsAskNoSnapshotWhenTheBatchTrailsItsResult: the server sends an
// accepted intent's result ahead of its batch, and a bot reads its frames
// behind the session's reader, so whether the reader had taken in the
// match's first Decision event when the bot read its first result was a
// matter of timing. A bot that took it as a server without Decision events
// asked for a snapshot (a slow open-loop load run reported "a bot asked for
// 1 snapshot" once in a while). Here a link holds back whatever follows
// each connection's first result, so the bot always reads that result
// first: bots on an event-complete server still ask for none.
func TestBotsAskNoSnapshotWhenTheBatchTrailsItsResult(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a whole match on real grains; skipped with -short")
	}
	srv := grainstest.StartEdge(t, grainstest.Options{})
	link := newTrailingLink(t, srv.TCPAddr, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The first results of both seats are what matters: the match is
	// stopped after a few more, not played to its end.
	var results atomic.Int64
	st := &bots.Stats{Observe: func(o bots.Observation) {
		if !o.Tick && results.Add(1) == 8 {
			cancel()
		}
	}}
	_, err := bots.PlayMatch(ctx, client.NewAdmin(srv.HTTPURL, edgetest.AdminToken, nil), bots.MatchOptions{
		GameAddr: "tcp://" + link.addr(), Decks: [2]string{"S1", "S2"}, BotSeed: 7, Stats: st,
		ConnectionRate: -1, Logger: slog.New(slog.DiscardHandler),
	})
	if !errors.Is(err, context.Canceled) || results.Load() < 8 {
		t.Fatalf("play: %v after %d results, want it stopped after 8", err, results.Load())
	}
	if n := link.heldBack(); n < 2 {
		t.Fatalf("the link held back after %d first results, want both seats': the test did not put a result ahead of its batch", n)
	}
	if n := st.Snapshots(); n != 0 {
		t.Errorf("the bots asked for %d snapshots in their first %d intents, want none", n, results.Load())
	}
}

// trailingLink forwards TCP protocol connections to a server and, on each,
// holds back the frames that follow the first ServerIntentResult for a
// while: a slow link on which the result and its batch arrive apart.
type trailingLink struct {
	l      net.Listener
	target string
	hold   time.Duration

	mu    sync.Mutex
	held  int
	conns []net.Conn
	wg    sync.WaitGroup
}

func newTrailingLink(t *testing.T, target string, hold time.Duration) *trailingLink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("link listen: %v", err)
	}
	k := &trailingLink{l: l, target: target, hold: hold}
	k.wg.Add(1)
	go k.accept()
	t.Cleanup(func() {
		l.Close()
		k.mu.Lock()
		for _, c := range k.conns {
			c.Close()
		}
		k.mu.Unlock()
		k.wg.Wait()
	})
	return k
}

func (k *trailingLink) addr() string { return k.l.Addr().String() }

func (k *trailingLink) heldBack() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held
}

func (k *trailingLink) accept() {
	defer k.wg.Done()
	for {
		c, err := k.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", k.target)
		if err != nil {
			c.Close()
			continue
		}
		k.mu.Lock()
		k.conns = append(k.conns, c, s)
		k.mu.Unlock()
		k.wg.Add(2)
		go func() {
			defer k.wg.Done()
			_, _ = io.Copy(s, c) // client to server as it comes
			s.Close()
			c.Close()
		}()
		go func() {
			defer k.wg.Done()
			k.serverToClient(c, s)
			s.Close()
			c.Close()
		}()
	}
}

// serverToClient forwards frame by frame and pauses once, after the
// connection's first intent result.
func (k *trailingLink) serverToClient(dst io.Writer, src io.Reader) {
	fr := protocol.NewFrameReader(src, 0)
	resultSeen := false
	for {
		payload, err := fr.ReadFrame()
		if err != nil {
			return
		}
		f, err := protocol.DecodeServerFrame(payload)
		if err != nil {
			return
		}
		if err := protocol.WriteFrame(dst, payload); err != nil {
			return
		}
		if _, ok := f.(*protocol.ServerIntentResult); ok && !resultSeen {
			resultSeen = true
			k.mu.Lock()
			k.held++
			k.mu.Unlock()
			// A slow link, not a synchronization: the bot is idle and
			// reads the result long before the batch comes.
			time.Sleep(k.hold)
		}
	}
}
