// Command matchd runs one Matchgrain node: a cluster member that hosts match
// grains, an edge that serves players over WebSocket and TCP, or both (the
// default). Without --database-url it uses the embedded single-node store, so
// `matchd --demo` is a complete server with a bot match to watch.
//
// Every flag also reads an environment variable (MATCHD_ and the flag name in
// upper case, dashes as underscores); `matchd --help` lists them. On start it
// prints one machine-readable line, `matchd ready member=… http=… tcp=…
// gossip=… remote=… debug=…`, for scripts and tests. --debug-listen (off by
// default, loopback addresses only, because it is unauthenticated) serves
// net/http/pprof for profiling a live node (docs/performance.md). SIGINT/SIGTERM stop the node in
// order: the edge stops taking players, the member leaves the cluster so its
// matches move, then the store closes. A member that the cluster dropped
// (a false failure detection) exits non-zero so its supervisor restarts it
// with a fresh member id.
package main
