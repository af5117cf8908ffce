// Package persistence is the durable home of matches, and it guarantees that
// only the activation holding a match's current epoch can write to it and that
// every write it acknowledges is durable.
//
// It stores opaque bytes per match and knows nothing of actors or the game:
// the creation meta, an append-only log of entries numbered 1, 2, 3, … with
// no gaps, and the latest snapshot (the state after log entries 1..Seq). It
// also records used ticket ids, so that a ticket is single-use across nodes.
//
// # Fencing
//
// An activation starts with Claim, which bumps the match's epoch and returns
// the snapshot and the log tail after it. Every later write (Append,
// SaveSnapshot, MarkFinished) carries that epoch and is refused with
// ErrFenced, writing nothing, once a newer Claim happened. A writer whose
// seq is already taken gets ErrFenced too: two activations can never both
// write one seq. An activation that sees ErrFenced must stop at once and
// never answer a client again. The other sentinels also mean that nothing
// was written; any error that is not a sentinel (a lost connection, a
// cancelled ctx) leaves the outcome unknown, so the activation must stop as
// well and let the next Claim rebuild the truth from the store. The
// PostgreSQL store makes that rare: an append cut off by the database going
// away (a crash, a failover to a standby) is retried until ctx ends, and the
// compare-and-set tells whether its first attempt had committed (failover.go).
//
// # High availability
//
// With a synchronous standby (docs/operations.md), a commit is acknowledged
// only once the standby has flushed it, and that holds for outcomes found
// out after a failover too. SynchronousStandbys says whether the primary
// waits for a standby right now.
//
// # Backends
//
//   - PostgresStore (OpenPostgres): for production, shared by all nodes.
//     Schema migrations are embedded and applied at start-up under an
//     advisory transaction lock. Each fenced write is one statement that
//     compare-and-sets the match row and writes only if it matched. By
//     default a group-commit writer lets appends of many matches share a
//     statement and a commit (WithoutGroupCommit turns it off).
//   - EmbeddedStore (OpenEmbedded): one bbolt file for a single node, same
//     semantics, fsync on every commit, concurrent writes share a commit.
//   - FaultyStore: wraps either to inject failures, lost replies and latency
//     in tests of the code above.
//
// The conformance suite in persistence/storetest runs against every backend;
// persistence/pgtest gives tests a PostgreSQL.
//
// # Deadlocks
//
// Single-match writes lock one row and cannot deadlock. Group-commit batches
// of one node never contain the same match twice at once. Batches of two
// nodes can only share a match while two activations of it exist (one is
// about to be fenced); if their row locks then cross, PostgreSQL aborts one
// batch after deadlock_timeout, and its appends are retried one by one, so
// the cost is latency, not correctness.
package persistence
