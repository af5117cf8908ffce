package cluster

import cmap "github.com/orcaman/concurrent-map"

// protoactor's process registry is 1,024 buckets, each an
// orcaman/concurrent-map of cmap.SHARD_COUNT (32 by default) Go maps: 32,768
// maps. A member holds a process per running match and per seat, so at a
// few thousand of them nearly every process sits alone in a map of its own
// (a slot group of about 300 bytes for one entry), and the 32,768 shard
// headers cost 2.5 MB before the first one (measured: docs/performance.md's history,
// "Round of 2026-12-03, last"). One shard per bucket keeps the 1,024 locks
// protoactor spreads its registry over and packs the entries into 1,024
// maps.
//
// SHARD_COUNT is read on every access of every such map, so it must be set
// before the first one is made and never change: hence init, which runs
// before any actor system of this process exists. It also applies to the
// cluster's PID cache, which becomes one map behind one read-write lock;
// its lookups take the read side only.
func init() { cmap.SHARD_COUNT = 1 }
