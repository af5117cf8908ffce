package persistence_test

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/persistence"
)

// TestRegisterMetrics: every store exports the group-commit and replication
// families (the embedded store's stay zero: one disk, no failover), so dashboards need no case per store, and a
// second registration is refused with a clear error.
func TestRegisterMetrics(t *testing.T) {
	s, err := persistence.OpenEmbedded(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := prometheus.NewRegistry()
	statements := persistence.NewStatementHistogram()
	if err := persistence.RegisterMetrics(reg, s, statements); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	for _, name := range []string{"matchgrain_store_append_batches_total", "matchgrain_store_batched_appends_total",
		"matchgrain_store_batch_retries_total", "matchgrain_store_statement_duration_seconds",
		"matchgrain_store_append_unknown_outcomes_total", "matchgrain_store_synchronous_standbys"} {
		v, ok := got[name]
		if !ok {
			t.Errorf("%s not exported; got %v", name, got)
		} else if v != 0 {
			t.Errorf("%s = %v for the embedded store, want 0", name, v)
		}
	}
	if err := persistence.RegisterMetrics(reg, s, statements); err == nil {
		t.Error("registering the store's metrics twice was accepted")
	}
}
