// Package client is the Go client library of match protocol v1: it speaks
// only the protocol (protocol/) over WebSocket or TCP and the edge's HTTP API,
// and keeps one invariant for its user: the frames a Session delivers form
// the seat's event stream exactly once and in order — no duplicate event, no
// gap other than events hidden from the seat — across reconnections.
//
// Conn is one raw connection (Dial "ws://host:port/game" or
// "tcp://host:port"; Send, Recv). Session adds what a game client needs:
// the hello with a fresh ticket per attempt, reconnection with backoff (0, 2,
// 10, 30 s by default) and resume from the last eventSeq, gap detection with
// ClientResync, re-sending unanswered intents under their original intentId,
// pings, a clock-offset estimate, and a local Board: the seat's whole
// MatchView kept from events (docs/protocol.md §13), legal intents included,
// checked against each snapshot. Admin calls the HTTP API (create a match,
// issue tickets, list decks).
//
// A minimal player, from events alone (no snapshot after the first):
//
//	admin := client.NewAdmin("http://127.0.0.1:8080", token, nil)
//	s, err := client.Start(ctx, client.Config{
//		Addr:   "ws://127.0.0.1:8080/game",
//		Ticket: admin.TicketFunc(matchID, 0),
//	})
//	for range s.Frames() {
//		if legal, _ := s.LegalIntents(); len(legal) > 1 && s.PendingIntents() == 0 {
//			s.SendIntent(legal[0])
//		}
//	}
//
// The package imports nothing of the server but the card catalog of game/
// (printed power and critical, to render a card named by an event): only
// protocol/, game/ and gorilla/websocket.
package client
