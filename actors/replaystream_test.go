package actors

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// A finished match replayed from its durable log, as a spectator, is the
// stream its live spectator got: the same batches, byte for byte, after a
// snapshot of the same state. A seat's replay shows that seat's cards and
// not the other's; a pruned log answers with the result; a running match
// is not replayed.
func TestStreamReplay(t *testing.T) {
	r := startBotMatch(t, 4)
	r.attachSpectator("spec-a", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := StreamReplay(GameRules{}, r.core.deps.Timing, "m_spect", nil, false, nil, nil, protocol.SeatSpectator,
		func([]byte) error { return nil }); !errors.Is(err, ErrNotFinished) {
		t.Fatalf("replay of a running match: %v, want ErrNotFinished", err)
	}
	r.playToEnd("spec-a")
	rec, err := r.store.Claim(ctx, "m_spect", "reader")
	if err != nil {
		t.Fatal(err)
	}
	log, err := r.store.(persistence.LogReader).ReadLog(ctx, "m_spect", 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(viewer int) []protocol.ServerFrame {
		t.Helper()
		var got []protocol.ServerFrame
		res, err := StreamReplay(GameRules{}, r.core.deps.Timing, "m_spect", rec.Meta, true, rec.Snapshot, log, viewer, func(b []byte) error {
			f, err := protocol.DecodeServerFrame(b)
			got = append(got, f)
			return err
		})
		if err != nil {
			t.Fatalf("replay as %d: %v", viewer, err)
		}
		if want := r.core.result(); res != want {
			t.Fatalf("replay result %+v, the match's %+v", res, want)
		}
		return got
	}
	got := replay(protocol.SeatSpectator)
	live := r.raw["spec-a"]
	var liveBatches, replayBatches [][]byte
	for i, f := range r.got["spec-a"] {
		if _, ok := f.(*protocol.ServerEvents); ok {
			liveBatches = append(liveBatches, live[i])
		}
	}
	for _, f := range got[2:] {
		b, err := protocol.EncodeServerFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		replayBatches = append(replayBatches, b)
	}
	if len(liveBatches) != len(replayBatches) {
		t.Fatalf("the live spectator got %d batches, the replay has %d", len(liveBatches), len(replayBatches))
	}
	for i := range liveBatches {
		if !bytes.Equal(liveBatches[i], replayBatches[i]) {
			t.Fatalf("batch %d differs between the live spectator and the replay", i)
		}
	}
	h, ok := got[0].(*protocol.ServerHello)
	if !ok || h.PlayerIndex != protocol.SeatSpectator || h.EventSeq != r.core.engine.LastSeq() || h.MatchID != "m_spect" {
		t.Fatalf("replay hello %+v", got[0])
	}
	snap, _ := got[1].(*protocol.ServerSnapshot)
	liveSnap, _ := r.got["spec-a"][1].(*protocol.ServerSnapshot)
	if snap == nil || liveSnap == nil {
		t.Fatalf("no snapshot after the hello: %T, live %T", got[1], r.got["spec-a"][1])
	}
	snap.View.Clock, liveSnap.View.Clock = protocol.ClockView{}, protocol.ClockView{}
	a, _ := protocol.EncodeServerFrame(snap)
	b, _ := protocol.EncodeServerFrame(liveSnap)
	if !bytes.Equal(a, b) {
		t.Fatalf("the replay starts from another state than the live spectator:\n%+v\n%+v", snap.View, liveSnap.View)
	}

	// Seat 0's replay: its own draws with their cards, the other's without.
	own, other := 0, 0
	for _, f := range replay(0) {
		if ev, ok := f.(*protocol.ServerEvents); ok {
			for _, e := range ev.Events {
				if d, ok := e.Event.(*protocol.CardsDrawnEvent); ok && len(d.Cards) > 0 {
					if d.Player == 0 {
						own++
					} else {
						other++
					}
				}
			}
		}
	}
	if own == 0 || other != 0 {
		t.Fatalf("seat 0's replay shows %d of its draws and %d of the other seat's", own, other)
	}

	// Retention pruned the log: the result, from the final snapshot.
	res, err := StreamReplay(GameRules{}, r.core.deps.Timing, "m_spect", rec.Meta, true, rec.Snapshot, nil, protocol.SeatSpectator,
		func([]byte) error { t.Fatal("a pruned replay emitted a frame"); return nil })
	if !errors.Is(err, ErrLogPruned) || res != r.core.result() {
		t.Fatalf("pruned replay: %+v, %v; want ErrLogPruned with %+v", res, err, r.core.result())
	}
}
