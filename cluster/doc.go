// Package cluster runs this process as a member of a protoactor-go cluster
// whose membership comes from hashicorp/memberlist, and keeps one invariant:
// every member routes a grain identity by the same rendezvous hash over the
// members it currently sees, so membership is advisory; safety comes from the
// store (fencing).
//
// Membership is advisory because views differ while gossip converges, during
// a partition, and on a member that peers declared dead but that still runs:
// two activations of one identity can then exist for a while
// (docs/cluster.md §3.3). Nothing here prevents that; grains must fence their
// writes in the store so that only the newest activation can commit.
//
// The package does not know what the grains are: it hosts whatever kinds it
// is given (an empty list makes an edge-only member that routes but hosts
// nothing).
//
//   - Start builds a Node from a Config: actor system with slog logging,
//     protoactor remote (MaxRetryCount 2), the protoactor cluster with the
//     disthash identity lookup, and the memberlist provider.
//   - The provider (provider.go) mirrors memberlist's live set into
//     protoactor's topology on every memberlist event and on a periodic tick.
//     memberlist is the single failure detector (FailureDetection documents
//     the knobs and the failover/false-suspicion trade-off); protoactor's own
//     heartbeat expiry is pushed far behind it.
//   - Node.Request wraps protoactor's cluster Request with a jittered
//     exponential retry bounded by the caller's context, envelope wrapping
//     of plain Go values (cluster/envelope), and re-sending when a member
//     leaves mid-attempt.
//   - Node.OwnerAddress says which member owns an identity in this member's
//     view; Reclaimer uses it to wake the grains this member owns that a
//     caller-supplied List says should be active, so orphaned grains come
//     back after a crash without any client.
//   - Security (security.go) keeps strangers out: memberlist gossip is
//     encrypted and authenticated with a keyring (rotated in place from a
//     key file), the protoactor remote runs over mutual TLS with files
//     reloaded on change, and Start refuses a member that listens or
//     advertises on a non-loopback address without both unless told it is
//     insecure on purpose (docs/security.md).
//   - Node.Leave is the graceful drain; Node.Kill simulates a crash in tests;
//     Node.Evicted reports that peers declared this live member dead.
//
// Package clustertest runs real members as child processes for tests.
package cluster
