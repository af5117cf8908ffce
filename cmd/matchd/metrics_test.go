package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var updateMetrics = flag.Bool("update", false, "rewrite testdata/metrics.txt from a running node")

// metricsFile lists every matchgrain_* metric family a node exports, one
// "name type labels" line each. Dashboards and alerts (deploy/observability)
// are checked against it, and it is checked against a running node here.
const metricsFile = "testdata/metrics.txt"

// compatFamilies are the metric families of the first release, as the
// hand-written exposition wrote them. Dashboards depend on them: a family may
// gain company, never lose its name, type or labels. This list is not
// rewritten by -update on purpose.
var compatFamilies = []string{
	"matchgrain_edge_bytes_in_total counter transport",
	"matchgrain_edge_bytes_out_total counter transport",
	"matchgrain_edge_closes_total counter reason",
	"matchgrain_edge_connections gauge transport",
	"matchgrain_edge_connections_total counter transport",
	"matchgrain_edge_frames_in_total counter transport",
	"matchgrain_edge_frames_out_total counter transport",
	"matchgrain_edge_intent_duplicates_total counter ",
	"matchgrain_edge_intent_results_total counter code",
	"matchgrain_edge_intents_total counter result",
	"matchgrain_edge_matches_created_total counter ",
	"matchgrain_edge_tickets_issued_total counter ",
	"matchgrain_grain_intents_accepted_total counter ",
	"matchgrain_grain_intents_rejected_total counter ",
	"matchgrain_grains_active gauge ",
	"matchgrain_http_requests_total counter code,route",
	"matchgrain_store_append_errors_total counter ",
	"matchgrain_store_append_seconds_sum counter ",
	"matchgrain_store_appends_total counter ",
}

// standardFamilies come from the Go runtime and process collectors (the
// scheduler's latencies by the node's choice, docs/operations.md §6).
var standardFamilies = []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds",
	"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "go_sched_latencies_seconds"}

// scrapeFamilies reads /metrics of a running node.
func scrapeFamilies(t *testing.T, httpAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	// The API request makes the per-route request counter export a series.
	req, err := http.NewRequest("GET", "http://"+httpAddr+"/api/decks", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/decks: %v", err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// familyLine renders a family as "name type label,label".
func familyLine(f *dto.MetricFamily) string {
	labels := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = true
		}
	}
	names := make([]string, 0, len(labels))
	for l := range labels {
		names = append(names, l)
	}
	sort.Strings(names)
	return fmt.Sprintf("%s %s %s", f.GetName(), strings.ToLower(f.GetType().String()), strings.Join(names, ","))
}

// TestMetricsExported scrapes a real matchd process and checks that it
// exports exactly the matchgrain_* families of testdata/metrics.txt, every
// family of the first release unchanged, and the standard Go and process
// collectors.
func TestMetricsExported(t *testing.T) {
	p := startProc(t, "m", "--data-dir", filepath.Join(t.TempDir(), "data"))
	var fams map[string]*dto.MetricFamily
	// The request counter of the first scrape is counted after it is served.
	for range 2 {
		fams = scrapeFamilies(t, p.http)
		time.Sleep(10 * time.Millisecond)
	}
	got := map[string]string{}
	var lines []string
	for name, f := range fams {
		if strings.HasPrefix(name, "matchgrain_") {
			got[name] = familyLine(f)
			lines = append(lines, familyLine(f))
		}
	}
	sort.Strings(lines)
	for _, want := range compatFamilies {
		name := strings.Fields(want)[0]
		if got[name] != want {
			t.Errorf("dashboards rely on %q, the node exports %q", want, got[name])
		}
	}
	for _, name := range standardFamilies {
		if fams[name] == nil {
			t.Errorf("the standard collector family %s is missing", name)
		}
	}
	text := strings.Join(lines, "\n") + "\n"
	if *updateMetrics {
		if err := os.WriteFile(metricsFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatalf("read %s: %v", metricsFile, err)
	}
	if string(committed) != text {
		t.Errorf("%s differs from what a node exports; after a deliberate change run\n"+
			"  go test ./cmd/matchd -run TestMetricsExported -update\nand check deploy/observability.\nexported:\n%s", metricsFile, text)
	}
}
