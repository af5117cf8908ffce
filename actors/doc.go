// Package actors owns the match grain: one protoactor actor per match that
// hosts the rules engine and is the single writer of that match's durable
// command log while its fencing epoch is current.
//
// Invariant: an intent is acknowledged to a seat only after the command that
// produced it is durably appended under the grain's epoch; an activation that
// learns it is fenced stops and never answers again. Everything else the grain
// keeps (idempotency journal, event journal, clocks, absence, seat
// attachments) is derived from the command log, so a new activation rebuilds
// it from snapshot + log tail.
//
// The logic of one activation is Core (core.go), a state machine that takes
// one input at a time and returns a Ready of what must happen; the
// protoactor grain (grain.go) only carries Readys out, and the simulator
// (actors/sim) drives the same core under a virtual clock with faults.
//
// A seat can be a bot (a training match, MatchSpec.Bots): the grain plays it
// itself after Timing.BotThink, choosing among the engine's legal commands
// from a generator seeded by the match seed and the log position, and submits
// the choice through the same path as a player's intent (checks, durable
// append, then broadcast). The seat kind is in the match's creation meta, so
// the bot moves with its grain (bot.go).
//
// The edge's side of the conversation (creating matches, attaching seats,
// keep-alives, re-attaches) is edge/grains' Gateway; this package gives it
// CreateMatch and the messages below. It knows nothing about WebSocket or
// SQL: transports live in edge/, storage behind persistence.Store, and
// cross-node routing in cluster/. Its tests drive grains through the
// messages alone (driver_test.go).
//
// Messages between edge and grain are plain Go structs carried through
// protoactor remote inside the msgpack envelope of cluster/envelope; the
// grain pushes frames already encoded per seat (protocol bytes), so the edge
// never re-encodes and never sees another seat's data.
package actors
