// Package buckets holds the bucket bounds the node's latency histograms
// share: an intent at the edge, a durable append in the grain and one
// statement of the store's group-commit writer are read against each other
// (docs/operations.md §6), which needs the same bounds in all three.
package buckets

// Latency are the upper bounds, in seconds, of the node's latency
// histograms: half a millisecond to five seconds.
var Latency = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}
