package load

import (
	"fmt"
	"io"
	"time"
)

// Report is the result of Run (matchctl load --json prints it as is).
type Report struct {
	Mode         string  `json:"mode"` // "closed" or "open"
	Matches      int     `json:"matches"`
	RatePerMatch float64 `json:"ratePerMatch,omitempty"`
	// ConnectionRate is the most intents per second a bot sent (0: no cap).
	ConnectionRate  float64 `json:"connectionRate"`
	WarmupSeconds   float64 `json:"warmupSeconds"`
	MeasuredSeconds float64 `json:"measuredSeconds"`
	MatchesStarted  int     `json:"matchesStarted"`
	MatchesFinished int     `json:"matchesFinished"`
	Intents         int     `json:"intents"`
	IntentsPerSec   float64 `json:"intentsPerSecond"`
	Rejected        int     `json:"rejected"`
	Errors          int     `json:"errors"`
	Ticks           int     `json:"ticks,omitempty"`
	SkippedTicks    int     `json:"skippedTicks"`
	// SnapshotsAsked counts the full snapshots the bots asked for in the
	// window (a stall, a Stale or Illegal rejection): they cost the server
	// far more than an intent, so a run with many measures them too.
	SnapshotsAsked int `json:"snapshotsAsked"`
	// Spectators is how many spectators followed each match; SpectatorFrames
	// the frames carrying the match (events, snapshots) they took in during
	// the window.
	Spectators      int `json:"spectators,omitempty"`
	SpectatorFrames int `json:"spectatorFrames,omitempty"`
	LatencyMs       struct {
		P50 float64 `json:"p50"`
		P90 float64 `json:"p90"`
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"latencyMs"`
	// Node is the node's usage; on a cluster (Config.Cluster), the sum
	// over its members (peak RSS summed too; no server times), each
	// member's being in Members.
	Node       *NodeUsage   `json:"node,omitempty"`
	Members    []*NodeUsage `json:"members,omitempty"`
	FirstError string       `json:"firstError,omitempty"`
	// Machine is this (the load generator's) machine during the window;
	// absent where it cannot be read.
	Machine *MachineUsage `json:"machine,omitempty"`
}

// NodeUsage is what the node's /metrics said about the measured window.
type NodeUsage struct {
	CPUSeconds      float64 `json:"cpuSeconds"`
	CPUMsPerIntent  float64 `json:"cpuMsPerIntent"`
	PeakRSSBytes    float64 `json:"peakRssBytes"`
	RSSBytesAtStart float64 `json:"rssBytesAtStart"`
	// ReadCallsPerIntent and WriteCallsPerIntent are the node's read-like
	// and write-like system calls over the window per intent
	// (matchgrain_process_read_syscalls_total and _write_: its sockets'
	// reads and writes, recvmsg and sendmsg not counted); absent where the
	// node does not export them (not Linux), or on a cluster where one
	// member does not.
	ReadCallsPerIntent  float64 `json:"readCallsPerIntent,omitempty"`
	WriteCallsPerIntent float64 `json:"writeCallsPerIntent,omitempty"`
	// ServerMs is the node's own account of the window, where it exports
	// the histograms (absent otherwise).
	ServerMs *ServerTimes `json:"serverMs,omitempty"`
}

// ServerTimes are the node's mean times over the measured window, from its
// latency histograms: set beside the client's latency they say how much of
// it the server spent, and how much of that the durable append and the
// database's statement. A zero is a histogram that saw nothing (a node on
// the embedded store runs no statements).
type ServerTimes struct {
	// Intent: from an intent frame's arrival at the edge to the match's answer.
	Intent float64 `json:"intent"`
	// Append: every durable append (intents', and the server's own: presence, finish).
	Append float64 `json:"append"`
	// Statement: one group-commit statement, without the writer's queue.
	Statement float64 `json:"statement"`
	// IntentP50 and IntentP99 are percentiles of Intent, estimated as
	// Prometheus's histogram_quantile does: linearly within the bucket
	// that holds them, so no finer than the buckets' bounds
	// (internal/buckets: …, 2, 3, 5, 7.5, 10, 15, 20, 30, 50 ms, …). Zero
	// when the window saw no intent. Only an unlabelled histogram is read
	// (the edge's has no label but le).
	IntentP50 float64 `json:"intentP50"`
	IntentP99 float64 `json:"intentP99"`
	// AppendP99 and StatementP99 are the same estimate of the durable
	// append's and the statement's p99: set beside IntentP99 they say
	// whether an intent's tail is the database's or the node's.
	AppendP99    float64 `json:"appendP99"`
	StatementP99 float64 `json:"statementP99"`
}

// WriteText writes the report for a person to read.
func (r *Report) WriteText(out io.Writer) {
	mode := "closed loop (bots decide as fast as they can)"
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %g intents/s per match", r.RatePerMatch)
	}
	capped := "no per-connection cap"
	if r.ConnectionRate > 0 {
		capped = fmt.Sprintf("at most %g intents/s per connection", r.ConnectionRate)
	}
	fmt.Fprintf(out, "load: %d matches at once, %s, %s; %d matches started, %d finished\n", r.Matches, mode, capped, r.MatchesStarted, r.MatchesFinished)
	fmt.Fprintf(out, "measured %.1f s after %.1f s warm-up: %d intents (%d rejected), %.0f intents/s, %d errors\n",
		r.MeasuredSeconds, r.WarmupSeconds, r.Intents, r.Rejected, r.IntentsPerSec, r.Errors)
	if r.Mode == "open" {
		fmt.Fprintf(out, "ticks: %d, skipped %d (previous intent still in flight or next one not decided yet)\n", r.Ticks, r.SkippedTicks)
	}
	fmt.Fprintf(out, "snapshots the bots asked for: %d (after a stall without progress, or an intent rejected as Stale or Illegal)\n", r.SnapshotsAsked)
	if r.Spectators > 0 {
		fmt.Fprintf(out, "spectators: %d per match, %d frames delivered to them (%.0f/s)\n", r.Spectators, r.SpectatorFrames,
			float64(r.SpectatorFrames)/max(r.MeasuredSeconds, 1e-9))
	}
	fmt.Fprintf(out, "intent latency (send → result): p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms\n",
		r.LatencyMs.P50, r.LatencyMs.P90, r.LatencyMs.P99, r.LatencyMs.Max)
	if n := r.Node; n != nil {
		fmt.Fprintf(out, "node: %.2f CPU s while measuring, %.3f ms CPU per intent, peak RSS %.1f MiB (%.1f MiB before the run)\n",
			n.CPUSeconds, n.CPUMsPerIntent, n.PeakRSSBytes/(1<<20), n.RSSBytesAtStart/(1<<20))
		if n.ReadCallsPerIntent > 0 || n.WriteCallsPerIntent > 0 {
			fmt.Fprintf(out, "node's system calls per intent: %.1f reads, %.1f writes\n", n.ReadCallsPerIntent, n.WriteCallsPerIntent)
		}
	} else {
		fmt.Fprintln(out, "node: CPU and memory unknown (no process metrics at --metrics)")
	}
	for i, m := range r.Members {
		if m == nil {
			continue
		}
		fmt.Fprintf(out, "  member %d: %.2f CPU s, %.3f ms CPU per intent, %.1f reads and %.1f writes per intent (the node lines sum the members)\n",
			i, m.CPUSeconds, m.CPUMsPerIntent, m.ReadCallsPerIntent, m.WriteCallsPerIntent)
	}
	if t := r.Node; t != nil && t.ServerMs != nil {
		sm := t.ServerMs
		fmt.Fprintf(out, "node's own times: intent %.2f ms mean (p50 ≈ %.1f, p99 ≈ %.1f ms from its buckets), durable append %.2f ms (p99 ≈ %.1f), statement %.2f ms (p99 ≈ %.1f)\n",
			sm.Intent, sm.IntentP50, sm.IntentP99, sm.Append, sm.AppendP99, sm.Statement, sm.StatementP99)
	}
	if m := r.Machine; m != nil {
		fmt.Fprintf(out, "machine: %.2f of %d cores busy while measuring, %.2f of them this load generator",
			m.BusyCores, m.CPUs, m.LoadGeneratorCores)
		if m.DatabaseCores != nil {
			fmt.Fprintf(out, ", %.2f the database", *m.DatabaseCores)
		}
		fmt.Fprintln(out)
	}
	if r.FirstError != "" {
		fmt.Fprintf(out, "first error: %s\n", r.FirstError)
	}
}

// IdleReport is the result of RunIdle (matchctl load --idle --json prints
// it as is).
type IdleReport struct {
	Sessions          int     `json:"sessions"`
	Connected         int     `json:"connected"`
	Dropped           int     `json:"dropped"`
	HeldSeconds       float64 `json:"heldSeconds"`
	RSSBytesBefore    float64 `json:"rssBytesBefore"`
	RSSBytesHeld      float64 `json:"rssBytesHeld"`
	RSSBytesPerConn   float64 `json:"rssBytesPerConnection"`
	NodeCPUSecondsIdl float64 `json:"nodeCpuSecondsWhileHeld"`
	FirstError        string  `json:"firstError,omitempty"`
}

// WriteText writes the report for a person to read.
func (r *IdleReport) WriteText(out io.Writer) {
	fmt.Fprintf(out, "idle: %d of %d sessions connected (%d matches), %d dropped while held %.0f s\n",
		r.Connected, r.Sessions, r.Sessions/2, r.Dropped, r.HeldSeconds)
	fmt.Fprintf(out, "node RSS %.1f MiB before, %.1f MiB held: %.1f KiB per connection (seat, its actor and half a match grain included); node CPU while held %.2f s\n",
		r.RSSBytesBefore/(1<<20), r.RSSBytesHeld/(1<<20), r.RSSBytesPerConn/1024, r.NodeCPUSecondsIdl)
	if r.FirstError != "" {
		fmt.Fprintf(out, "first error: %s\n", r.FirstError)
	}
}

// Percentile is the p-th percentile of sorted (nearest rank), 0 for none.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return sorted[i].Round(time.Microsecond)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
