package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/internal/buckets"
)

// groupCommitStore is a store with a group-commit writer (the PostgreSQL store).
type groupCommitStore interface {
	GroupCommitStats() GroupCommitStats
}

// replicatedStore is a store on a server that may have standbys (the
// PostgreSQL store).
type replicatedStore interface {
	UnknownOutcomes() uint64
	SynchronousStandbys(ctx context.Context) (int, error)
}

// RegisterMetrics exports the group-commit writer's counters, so that an
// operator can read the mean batch (appends ÷ batches) and see whether the
// store or the node limits throughput. The families exist for every store, so
// dashboards need no case for the embedded one, whose counters stay zero.
//
// statements is the histogram of NewStatementHistogram, which the store was
// opened with (WithStatementObserver).
func RegisterMetrics(reg prometheus.Registerer, store Store, statements prometheus.Histogram) error {
	stats := func() GroupCommitStats { return GroupCommitStats{} }
	if g, ok := store.(groupCommitStore); ok {
		stats = g.GroupCommitStats
	}
	outcomes := func() uint64 { return 0 }
	syncStandbys := func() float64 { return 0 } // the embedded store: one disk
	if h, ok := store.(replicatedStore); ok {
		outcomes = h.UnknownOutcomes
		syncStandbys = func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := h.SynchronousStandbys(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "matchgrain_store_append_batches_total",
			Help: "Statements the PostgreSQL group-commit writer sent, a lone append counting as one.",
		}, func() float64 { return float64(stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "matchgrain_store_batched_appends_total",
			Help: "Appends the group-commit writer's statements carried; divided by the batches, the mean batch.",
		}, func() float64 { return float64(stats().Appends) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "matchgrain_store_batch_retries_total",
			Help: "Batches PostgreSQL refused as a whole, retried one append at a time.",
		}, func() float64 { return float64(stats().Retries) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "matchgrain_store_append_unknown_outcomes_total",
			Help: "Appends cut off by the database going away (a crash, a failover) whose outcome the store " +
				"then found out by retrying on the primary, instead of stopping their match.",
		}, func() float64 { return float64(outcomes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "matchgrain_store_synchronous_standbys",
			Help: "Standbys that must confirm each commit before the primary answers it, as the primary is " +
				"configured now: 0 means acknowledged intents are on the primary's disk only (no standby, or " +
				"the HA engine degraded to one node); -1 means the database did not answer.",
		}, syncStandbys),
		statements,
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register store metrics: %w", err)
		}
	}
	return nil
}

// NewStatementHistogram times the group-commit writer's statements
// (WithStatementObserver). It is made before the store it is
// given to, and registered with the store's other metrics.
func NewStatementHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "matchgrain_store_statement_duration_seconds",
		Help: "Time PostgreSQL took to answer one of the group-commit writer's statements, commit included, " +
			"without the wait in the writer's queue: against matchgrain_store_append_duration_seconds it " +
			"tells a slow database from appends queueing in the node.",
		Buckets: buckets.Latency,
	})
}
