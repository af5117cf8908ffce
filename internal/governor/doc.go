// Package governor adjusts two process-wide knobs of the Go runtime from
// what the node is doing: the collector's goal (GC: GOGC lower while the
// node allocates little for its heap) and the number of processors (Proc:
// one while the node is light). Each samples on a ticker and steps a small
// state machine whose inputs (CPU read, allocation counters) and outputs
// (setters) are fields, so tests drive it with a made-up history.
//
// Both set settings of the whole process, which only the program may
// decide: a library that did would surprise whoever embeds it. That is why
// this package is internal and only cmd/matchd starts a governor, from its
// flags; each stands down when the operator set the environment variable
// it would otherwise override.
package governor
