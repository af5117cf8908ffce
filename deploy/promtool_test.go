package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool runs Prometheus' own rule checker (Debian's prometheus package).
func promtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("promtool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ruleTests is the part of promtool's unit test file the coverage check
// reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name        string `json:"name"`
		InputSeries []struct {
			Series string `json:"series"`
		} `json:"input_series"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `json:"exp_labels"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertRulesPromtool parses the alert rules with promtool and runs
// their unit tests (observability/alerts_test.yaml), and checks that every
// alert has a case where it fires and one where it stays quiet: an empty
// expectation, or an instance in the input that the alerts leave out.
func TestAlertRulesPromtool(t *testing.T) {
	if !haveTool(t, "promtool", "the alert rules are neither parsed nor unit-tested") {
		return
	}
	promtool(t, "check", "rules", "observability/alerts.yaml")
	promtool(t, "test", "rules", "observability/alerts_test.yaml")

	var rf ruleFile
	b, err := os.ReadFile("observability/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var tf ruleTests
	if b, err = os.ReadFile("observability/alerts_test.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	if len(tf.RuleFiles) != 1 || tf.RuleFiles[0] != "alerts.yaml" {
		t.Errorf("alerts_test.yaml tests %v, want alerts.yaml", tf.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		instances := map[string]bool{}
		for _, s := range tc.InputSeries {
			if _, rest, ok := strings.Cut(s.Series, `instance="`); ok {
				inst, _, _ := strings.Cut(rest, `"`)
				instances[inst] = true
			}
		}
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) == 0 {
				quiet[a.Alertname] = true
				continue
			}
			fires[a.Alertname] = true
			alerted := map[string]bool{}
			for _, e := range a.ExpAlerts {
				alerted[e.ExpLabels["instance"]] = true
			}
			if !alerted[""] {
				for inst := range instances {
					if !alerted[inst] {
						quiet[a.Alertname] = true
					}
				}
			}
		}
	}
	var missing []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				missing = append(missing, r.Alert+" (never fires)")
			}
			if !quiet[r.Alert] {
				missing = append(missing, r.Alert+" (never quiet)")
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("alerts_test.yaml lacks cases: %s", strings.Join(missing, ", "))
	}
}

// TestDashboardQueriesParse has promtool parse every PromQL query of the
// dashboard: each becomes a recording rule of a scratch rule file, with
// Grafana's variables replaced by values Prometheus accepts.
func TestDashboardQueriesParse(t *testing.T) {
	if !haveTool(t, "promtool", "the dashboard's queries are not parsed") {
		return
	}
	b, err := os.ReadFile("observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var all any
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$instance", ".*")
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				exprs = append(exprs, grafana.Replace(e))
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(all)
	if len(exprs) < 20 {
		t.Fatalf("found %d queries in the dashboard", len(exprs))
	}
	sort.Strings(exprs)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		if strings.Contains(e, "$") {
			t.Errorf("query %q uses a Grafana variable this test does not know", e)
		}
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, q)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", f)
}
