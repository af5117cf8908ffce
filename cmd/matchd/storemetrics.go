package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/persistence"
)

// groupCommitStore is a store with a group-commit writer (the PostgreSQL store).
type groupCommitStore interface {
	GroupCommitStats() persistence.GroupCommitStats
}

// registerStoreMetrics exports the group-commit writer's counters, so that an
// operator can read the mean batch (appends ÷ batches) and see whether the
// store or the node limits throughput. The families exist for every store, so
// dashboards need no case for the embedded one, whose counters stay zero.
func registerStoreMetrics(reg prometheus.Registerer, store persistence.Store) error {
	stats := func() persistence.GroupCommitStats { return persistence.GroupCommitStats{} }
	if g, ok := store.(groupCommitStore); ok {
		stats = g.GroupCommitStats
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
		statementHistogram{stats: stats, desc: prometheus.NewDesc("matchgrain_store_statement_duration_seconds",
			"Time PostgreSQL took to answer one of the group-commit writer's statements, commit included, "+
				"without the wait in the writer's queue: against matchgrain_store_append_duration_seconds it "+
				"tells a slow database from appends queueing in the node.", nil, nil)},
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register store metrics: %w", err)
		}
	}
	return nil
}

// statementHistogram exports the store's statement times, which it keeps
// itself (persistence does not depend on Prometheus), as a histogram.
type statementHistogram struct {
	stats func() persistence.GroupCommitStats
	desc  *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (h statementHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h statementHistogram) Collect(ch chan<- prometheus.Metric) {
	st := h.stats()
	buckets := make(map[float64]uint64, len(persistence.StatementBounds))
	for i, b := range persistence.StatementBounds {
		buckets[b.Seconds()] = st.StatementBuckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(h.desc, st.Statements, st.StatementSeconds, buckets)
}
