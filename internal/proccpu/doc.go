// Package proccpu reads what processes cost: CPU time, this process's and
// that of another process with its children (a PostgreSQL server: the
// postmaster and its backends), which the load tool and the store's
// benchmarks report next to the node's on a machine they share; and this
// process's read and write system calls, which the node exports so that the
// load tool can report them per intent.
package proccpu
