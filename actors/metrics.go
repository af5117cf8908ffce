package actors

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus collectors of the match grains of one member.
// Safe for concurrent use. The names, types and labels are a contract with
// dashboards and alerts (deploy/observability): add metrics, never rename or
// retype one.
type Metrics struct {
	// ActiveGrains is the number of running match activations.
	ActiveGrains prometheus.Gauge
	// IntentsAccepted and IntentsRejected count intents the engine decided.
	IntentsAccepted prometheus.Counter
	IntentsRejected prometheus.Counter
	// Appends and AppendErrors count durable command-log writes.
	Appends      prometheus.Counter
	AppendErrors prometheus.Counter
	// AppendSeconds is the total time spent in appends (for a mean with
	// Appends); AppendDuration is their latency distribution.
	AppendSeconds  prometheus.Counter
	AppendDuration prometheus.Histogram

	mu        sync.Mutex
	takeovers []Takeover // ring, newest last
}

// Takeover is an activation of an unfinished match that an earlier
// activation owned: a failover, a drain or a restart, as this member saw it.
type Takeover struct {
	MatchID string    `json:"matchId"`
	Epoch   int64     `json:"epoch"`
	At      time.Time `json:"at"`
	// LogSeq is the log position the match was recovered at; RecoveryMs how
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

// NewMetrics creates the grains' collectors and registers them with reg
// (matchd passes the registry its edge serves at /metrics; tests pass
// prometheus.NewRegistry()).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		ActiveGrains: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matchgrain_grains_active", Help: "Match activations running on this member.",
		}),
		IntentsAccepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_grain_intents_accepted_total", Help: "Intents accepted and made durable.",
		}),
		IntentsRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_grain_intents_rejected_total", Help: "Intents rejected (nothing changed).",
		}),
		Appends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_store_appends_total", Help: "Command-log appends.",
		}),
		AppendErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_store_append_errors_total", Help: "Command-log appends that failed or were fenced.",
		}),
		// A counter named _sum, kept from the first exposition so that
		// existing dashboards keep working; the histogram below is the one to
		// use for latency percentiles.
		AppendSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_store_append_seconds_sum", Help: "Total time spent in command-log appends.",
		}),
		AppendDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "matchgrain_store_append_duration_seconds", Help: "Latency of command-log appends (the intent waits for it).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5},
		}),
	}
	for _, c := range []prometheus.Collector{m.ActiveGrains, m.IntentsAccepted, m.IntentsRejected,
		m.Appends, m.AppendErrors, m.AppendSeconds, m.AppendDuration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register grain metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observeAppend(d time.Duration, err error) {
	m.Appends.Inc()
	m.AppendSeconds.Add(d.Seconds())
	m.AppendDuration.Observe(d.Seconds())
	if err != nil {
		m.AppendErrors.Inc()
	}
}
