package grains_test

import (
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// Spectators through the real edge and grain, on both transports: a
// spectator sees the seats' moves, its intent is refused and changes
// nothing, and one spectator more than the cap is refused with 4429 (TCP:
// a fatal SpectatorsFull) while the seats play on.
func TestSpectatorsEndToEnd(t *testing.T) {
	h := startHarness(t, harnessOpts{edge: edge.Config{MaxSpectators: 1}})
	for _, tr := range []string{"ws", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			id := h.createMatch(t, 3)
			addr := h.gameAddr(tr)
			spec, hello := dialSeat(t, h, addr, id, protocol.SeatSpectator, 0)
			if hello.PlayerIndex != protocol.SeatSpectator {
				t.Fatalf("spectator hello %+v", hello)
			}
			v := clienttest.Await(spec, 10*time.Second, clienttest.Any[*protocol.ServerSnapshot]).View
			if v.You != protocol.SeatSpectator || len(v.LegalIntents) != 0 || len(v.Players[0].Hand)+len(v.Players[1].Hand) != 0 {
				t.Fatalf("spectator view: you %d, %d legal intents, hands %d+%d", v.You, len(v.LegalIntents), len(v.Players[0].Hand), len(v.Players[1].Hand))
			}
			if r := spec.Intent("spy", v.EventSeq, protocol.Concede{}); r.Accepted || r.Code != protocol.RejectSpectator {
				t.Fatalf("a spectator's Concede: %+v", r)
			}

			var seats [2]*clienttest.Seat
			for s := range 2 {
				seats[s], _ = dialSeat(t, h, addr, id, s, 0)
				clienttest.Await(seats[s], 10*time.Second, clienttest.Any[*protocol.ServerSnapshot])
			}
			s, sv, in := clienttest.NextMove(t, seats)
			res := s.Intent("move-1", sv.EventSeq, in)
			if !res.Accepted {
				t.Fatalf("the seats' move: %+v", res)
			}
			clienttest.Await(spec, 10*time.Second, func(ev *protocol.ServerEvents) bool { return ev.ToSeq >= res.EventSeq })

			extra := connectSeat(t, h, addr, id, protocol.SeatSpectator, 0)
			code, frames := extra.CloseCode(10 * time.Second)
			var last *protocol.ServerError
			for _, f := range frames {
				if e, ok := f.(*protocol.ServerError); ok {
					last = e
				}
			}
			if last == nil || last.Code != protocol.ErrorSpectatorsFull || !last.Fatal || (tr == "ws" && code != protocol.CloseSpectatorsFull) {
				t.Fatalf("a second spectator with a cap of 1: close %d, error %+v; want 4429 and SpectatorsFull", code, last)
			}
			s, sv, in = clienttest.NextMove(t, seats)
			if res := s.Intent("move-2", sv.EventSeq, in); !res.Accepted {
				t.Fatalf("the seats' move after the refusal: %+v", res)
			}
		})
	}
}
