// Package edge owns client connections — WebSocket at /game, the TCP
// fallback, tickets and the HTTP API — and keeps one invariant: a connection
// reaches a match only through a verified ClientHello, and the edge holds no
// match state, so any edge node can serve any seat.
//
// # Sessions
//
// Each connection is one session with two goroutines: a reader (hello
// deadline, ticket check, Matches.OpenSeat, then one frame at a time, with
// the size limit, the token-bucket rate limit and the heartbeat deadline) and
// a writer (a bounded outbound queue, a deadline on every write, ServerPing
// when the client is idle, and the goodbye). The same code serves WebSocket
// and TCP: on TCP the close codes of docs/protocol.md §6 become a final fatal
// ServerError (HeartbeatTimeout and SessionReplaced where WebSocket uses 4408
// and 4409). Every close has a typed CloseReason, whose label is used in
// metrics and logs.
//
// A client that does not read is disconnected when its queue overflows
// (Config.OutboundQueueFrames/Bytes) or a write passes Config.WriteTimeout,
// so memory per connection stays bounded. Frames over
// protocol.MaxFrameBytes are refused before decoding on both transports.
//
// # Matches
//
// The edge talks to the match cluster only through the Matches interface
// (grains.Gateway in edge/grains implements it): OpenSeat consumes the ticket
// durably and then pushes the seat's frames, already encoded, through a
// SeatSink; the edge never re-encodes or inspects them (it only peeks at intent
// result codes for metrics).
//
// # Tickets
//
// A ticket is an HMAC-SHA256-signed token naming match, seat, a random id and
// an expiry (format in ticket.go). Any edge holding the key verifies it
// without a shared store; single use is enforced by the match. Tickets are
// bearer credentials and are never logged; they never appear in URLs.
//
// # HTTP API
//
//	POST /api/matches      {"players":[{"name","deck"},{"name","deck"}],"seed":opt} → 201 {"matchId"}
//	POST /api/game/tickets {"matchId","seat"} → 200 {"ticket","matchId","seat","expiresAt" (Unix ms)}
//	GET  /api/decks        → 200 {"decks":[{"id","name","cards"}]}
//	GET  /healthz          → 200 {"status":"ok"}, 503 while shutting down
//	GET  /metrics          → Prometheus text format (Config.Registry)
//
// /api/* needs "Authorization: Bearer <admin token>". Errors are
// {"error":"<code>","message":"<text>"} with 400, 401, 404, 405, 413, 500 or
// 503 (the match cluster is unavailable; retry).
package edge
