package actors

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/internal/buckets"
	"github.com/matchgrain/matchgrain/persistence"
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
	// JournalRebuilds counts resumes from before the in-memory event
	// journal (Timing.ResumeWindow), answered by replaying the durable log.
	JournalRebuilds prometheus.Counter
	// Halts counts activations that stopped for good, by HaltReason.
	Halts *prometheus.CounterVec
	// RequestsExpired counts requests from other members dropped because
	// their sender had stopped waiting for them (envelope.Msg.Expired):
	// read late by a member that was frozen, starved or cut off.
	RequestsExpired prometheus.Counter

	mu        sync.Mutex
	takeovers []Takeover // ring, newest last

	// fenced counts writes (appends, snapshots, finish marks) the store
	// refused because a newer activation claimed the match: each is a stale
	// activation that woke up (or lagged) and was stopped by the fence, the
	// event the one-writer guarantee exists for. Exported as
	// matchgrain_store_fenced_writes_total; any value above zero means a
	// member was frozen, partitioned or too slow for its peers.
	fenced atomic.Int64
}

// FencedWrites returns how many writes the epoch fence refused so far
// (matchgrain_store_fenced_writes_total).
func (m *Metrics) FencedWrites() int64 {
	if m == nil {
		return 0
	}
	return m.fenced.Load()
}

// observeFenced counts a write that err says the fence refused.
func (m *Metrics) observeFenced(err error) {
	if m != nil && errors.Is(err, persistence.ErrFenced) {
		m.fenced.Add(1)
	}
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
			Buckets: buckets.Latency,
		}),
		JournalRebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_grain_journal_rebuilds_total",
			Help: "Resumes from before the in-memory event journal (--resume-window), answered by replaying the durable log.",
		}),
		Halts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgrain_grain_halts_total",
			Help: "Activations that stopped for good (fenced, superseded, an append with an unknown outcome, ...), by reason.",
		}, []string{"reason"}),
		RequestsExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgrain_grain_requests_expired_total",
			Help: "Requests from other members dropped unanswered because their sender had stopped waiting (read late: a frozen, starved or cut-off member).",
		}),
	}
	for r := HaltActivationRefused; int(r) < len(haltReasonNames); r++ {
		m.Halts.WithLabelValues(r.String()) // the series exist at 0
	}
	fenced := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "matchgrain_store_fenced_writes_total", Help: "Writes of stale activations refused by the epoch fence.",
	}, func() float64 { return float64(m.fenced.Load()) })
	for _, c := range []prometheus.Collector{m.ActiveGrains, m.IntentsAccepted, m.IntentsRejected,
		m.Appends, m.AppendErrors, m.AppendSeconds, m.AppendDuration, m.JournalRebuilds, m.Halts, m.RequestsExpired, fenced} {
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

// observeHalt counts an activation that halted.
func (m *Metrics) observeHalt(r HaltReason) {
	if m != nil {
		m.Halts.WithLabelValues(r.String()).Inc()
	}
}
