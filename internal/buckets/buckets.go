// Package buckets holds the bucket bounds the node's latency histograms
// share: an intent at the edge, a durable append in the grain and one
// statement of the store's group-commit writer are read against each other
// (docs/operations.md §6), which needs the same bounds in all three.
package buckets

// Latency are the upper bounds, in seconds, of the node's latency
// histograms: half a millisecond to five seconds, closest between 1 and 50
// ms, where an intent's time lies; 3 and 20 ms are bounds because they are
// the median's and the 99th percentile's targets (docs/performance.md), so
// the share of intents within each is read exactly, not estimated.
var Latency = []float64{.0005, .001, .002, .003, .005, .0075, .01, .015, .02, .03, .05, .1, .2, .5, 1, 2, 5}
