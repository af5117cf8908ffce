// Package proccpu reads CPU time: this process's, and that of another
// process with its children (a PostgreSQL server: the postmaster and its
// backends), which the load tool and the store's benchmarks report next to
// the node's on a machine they share.
package proccpu
