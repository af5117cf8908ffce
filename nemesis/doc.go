// Package nemesis injects the faults production networks have into a real
// cluster and judges the history: matchd members and PostgreSQL each run in
// a network namespace of their own, linked through a bridge in another, so
// that nft rules and tc token buckets at the bridge cut, drop and slow
// links one by one; processes are paused, killed and restarted. Bot matches
// play through random members meanwhile; every intent is recorded, and
// after every fault has healed the checker re-sends the acknowledged ones,
// reads each match's log from the store and measures how soon each match
// accepted an intent again after each heal (docs/operations.md §9).
//
// Everything it creates carries Prefix and lives in Subnet; Cleanup
// removes it, and cmd/nemesis runs a watchdog that does so if the harness
// is killed.
package nemesis
