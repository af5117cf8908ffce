// Package load drives a Matchgrain node with bot matches from the outside,
// as players' clients would, and reports what they saw (intent latency
// from send to result, intents per second) next to what the node says of
// the same window on its /metrics (CPU, resident memory, its own latency
// histograms) and, on Linux, how busy this machine was. A report's figures
// only cover the measured window: never the warm-up, nor the teardown.
//
// Run keeps Matches matches playing, closed-loop (bots decide as fast as
// they can) or open-loop (Rate intents a second per match at fixed ticks;
// a tick that finds the previous intent in flight is skipped, never made
// up). RunIdle holds connected, silent sessions and reports the node's
// memory per connection. cmd/matchctl's load command and
// deploy/measure.sh are their users; docs/performance.md has the numbers.
package load
