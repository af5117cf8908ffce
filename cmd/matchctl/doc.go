// Command matchctl drives a matchgrain server from the outside, as a
// client would: it creates matches through the HTTP API and plays them with
// bots over WebSocket or TCP, so that what it reports is exactly what a
// player's client would have seen. It holds no server logic.
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
// latency (send to result) at p50, p95 and p99.
//
// The admin token can come from $MATCHGRAIN_ADMIN_TOKEN instead of --token.
package main
