package actors

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
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

	mu        sync.Mutex
	takeovers []Takeover // ring, newest last
}

// Takeover is an activation of an unfinished match that an earlier
// activation owned: a failover, a drain or a restart, as this member saw it.
type Takeover struct {
	MatchID string    `json:"matchId"`
	Epoch   int64     `json:"epoch"`
	At      time.Time `json:"at"`
	// LogSeq is the log position the match was recovered at; Recovery how
	// long claiming and replaying took.
	LogSeq     int64 `json:"logSeq"`
	RecoveryMs int64 `json:"recoveryMs"`
}

// maxTakeovers bounds the takeovers a member remembers.
const maxTakeovers = 64

func (m *Metrics) addTakeover(t Takeover) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.takeovers) == maxTakeovers {
		m.takeovers = append(m.takeovers[:0], m.takeovers[1:]...)
	}
	m.takeovers = append(m.takeovers, t)
}

// RecentTakeovers returns the last takeovers of this member, newest first.
func (m *Metrics) RecentTakeovers() []Takeover {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Takeover, len(m.takeovers))
	for i, t := range m.takeovers {
		out[len(out)-1-i] = t
	}
	return out
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
