package actors

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// Metrics counts what the grains of one member do. Safe for concurrent use;
// WritePrometheus renders it for an HTTP /metrics endpoint.
type Metrics struct {
	// ActiveGrains is the number of running match activations.
	ActiveGrains atomic.Int64
	// IntentsAccepted and IntentsRejected count intents the engine decided.
	IntentsAccepted atomic.Int64
	IntentsRejected atomic.Int64
	// Appends and AppendErrors count durable command-log writes.
	Appends      atomic.Int64
	AppendErrors atomic.Int64
	// AppendMicros is the sum of append latencies, for a mean.
	AppendMicros atomic.Int64
	// FencedWrites counts writes (appends, snapshots, finish marks) the
	// store refused because a newer activation claimed the match: each is a
	// stale activation that woke up (or lagged) and was stopped by the
	// fence, the event the one-writer guarantee exists for. Any value above
	// zero means a member was frozen, partitioned or too slow for its peers.
	FencedWrites atomic.Int64
}

// observeFenced counts a write that err says the fence refused.
func (m *Metrics) observeFenced(err error) {
	if m != nil && errors.Is(err, persistence.ErrFenced) {
		m.FencedWrites.Add(1)
	}
}

func (m *Metrics) observeAppend(d time.Duration, err error) {
	m.Appends.Add(1)
	m.AppendMicros.Add(d.Microseconds())
	if err != nil {
		m.AppendErrors.Add(1)
	}
}

// WritePrometheus writes the counters in the Prometheus text format.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	rows := []struct {
		name, kind, help string
		v                int64
	}{
		{"matchgrain_grains_active", "gauge", "Match activations running on this member.", m.ActiveGrains.Load()},
		{"matchgrain_grain_intents_accepted_total", "counter", "Intents accepted and made durable.", m.IntentsAccepted.Load()},
		{"matchgrain_grain_intents_rejected_total", "counter", "Intents rejected (nothing changed).", m.IntentsRejected.Load()},
		{"matchgrain_store_appends_total", "counter", "Command-log appends.", m.Appends.Load()},
		{"matchgrain_store_append_errors_total", "counter", "Command-log appends that failed or were fenced.", m.AppendErrors.Load()},
		{"matchgrain_store_append_seconds_sum", "counter", "Total time spent in command-log appends.", 0},
		{"matchgrain_store_fenced_writes_total", "counter", "Writes of stale activations refused by the epoch fence.", m.FencedWrites.Load()},
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", r.name, r.help, r.name, r.kind); err != nil {
			return err
		}
		var err error
		if r.name == "matchgrain_store_append_seconds_sum" {
			_, err = fmt.Fprintf(w, "%s %.6f\n", r.name, float64(m.AppendMicros.Load())/1e6)
		} else {
			_, err = fmt.Fprintf(w, "%s %d\n", r.name, r.v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
