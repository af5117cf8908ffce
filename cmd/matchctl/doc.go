// Command matchctl drives a matchgrain server from the outside, as a
// client would: it creates matches through the HTTP API and plays them with
// bots over WebSocket or TCP, so that what it reports is exactly what a
// player's client would have seen. It holds no server logic.
//
//	matchctl cluster --server http://127.0.0.1:8080 --token T
//	matchctl match --server http://127.0.0.1:8080 --token T MATCH_ID
//	matchctl replay --server http://127.0.0.1:8080 --token T MATCH_ID
//
// are the operations commands: they print what matchd's authenticated
// /api/admin/ endpoints answer (members and their matches; one match's
// owner, epoch, seqs and clocks; a replay of a match from PostgreSQL that
// must reproduce its stored snapshot bit for bit, else exit status 1), see
// docs/operations.md §4.
//
//	matchctl play --server http://127.0.0.1:8080 --token T [--deck S1 --deck2 S2] [--seed N] [--tcp HOST:PORT]
//
// creates a match and lets two bots play it to the end, printing a running
// log (turns, rides, calls, attacks, guards, checks, damage, the winner).
// The bots choose among the legalIntents of their snapshots; a bot asks for a
// fresh snapshot whenever it may be the decider. Each bot keeps a local
// view from events and checks it against every snapshot, including a fresh
// one after GameFinished; any difference fails the run (exit status 1).
// --kill-every N makes each bot drop its connection after every N intents,
// so that reconnection, resume and idempotent retries are exercised.
//
//	matchctl load --server http://127.0.0.1:8080 --token T --matches 50 [--concurrency 10]
//
// plays many matches at once with quiet bots and reports the intent
// latency (send to result) at p50, p90, p99 and max, the intents per second
// and, from the node's /metrics (process_cpu_seconds_total and
// process_resident_memory_bytes), its CPU seconds and peak RSS, and where
// it exports them the means of its own latency histograms over the window
// (an intent at the edge, its durable append, one database statement) and
// its read and write system calls per intent; on Linux
// also how many of this machine's cores were busy meanwhile and how many of
// them the load generator itself used, since on one machine shared with the
// node latency is mostly waiting for a CPU once every core is busy. With
// --database-pid PID (a PostgreSQL postmaster on this machine) it adds the
// CPU that server's processes used in the window.
//
//	matchctl load ... --matches 1000 --rate 2 --warmup 10s --duration 30s [--json]
//
// keeps 1,000 matches running (a finished match is replaced) and measures
// only after the warm-up. With --rate the load is open-loop: each match ticks
// R times a second from a random phase and each tick lets the deciding bot
// send; a tick that finds the previous intent still in flight (or the next
// one not decided yet) is counted as skipped, never made up later, so a slow
// server shows as skipped ticks and latency rather than as a lower offered
// rate. Without --rate the bots play as fast as they decide (closed loop).
// A progress line goes to stderr every second.
//
//	matchctl load ... --idle 10000 [--idle-hold 30s] [--idle-source-addrs 127.0.0.2,127.0.0.3]
//
// connects 10,000 sessions (two per new match) that send nothing but the
// client's keep-alive pings, holds them, and reports the node's RSS growth
// per connection. With --idle-source-addrs the sessions bind to those local
// addresses in turn: one address has about 28,000 ephemeral ports toward
// one server port, too few for 50,000 sessions. docs/performance.md has the
// numbers and the commands.
//
// The admin token can come from --token-file or $MATCHGRAIN_ADMIN_TOKEN
// instead of --token, which the process list shows to every user.
package main
