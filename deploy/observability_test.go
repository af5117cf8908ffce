package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var (
	metricRef    = regexp.MustCompile(`\b((?:matchgrain|go|process)_[a-zA-Z0-9_]+)(\{[^}]*\})?`)
	labelMatcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"`)
	plainValues  = regexp.MustCompile(`^[a-z0-9_]+(\|[a-z0-9_]+)*$`)
)

// checkExpr checks every metric a PromQL expression names, and every label
// value it matches literally, against what matchd exports. It returns the
// number of metric references.
func (s *server) checkExpr(t *testing.T, where, expr string) int {
	t.Helper()
	refs := metricRef.FindAllStringSubmatch(expr, -1)
	for _, m := range refs {
		labels, ok := s.series[m[1]]
		if !ok {
			t.Errorf("%s: matchd exports no metric %s", where, m[1])
			continue
		}
		for _, lm := range labelMatcher.FindAllStringSubmatch(m[2], -1) {
			name, op, val := lm[1], lm[2], lm[3]
			if name == "instance" || name == "job" { // added by Prometheus
				continue
			}
			values, ok := labels[name]
			if !ok {
				t.Errorf("%s: %s has no label %q", where, m[1], name)
				continue
			}
			if (op == "=" || op == "=~") && plainValues.MatchString(val) {
				for _, v := range strings.Split(val, "|") {
					if !values[v] {
						t.Errorf("%s: %s{%s} never has the value %q", where, m[1], name, v)
					}
				}
			}
		}
	}
	return len(refs)
}

// ruleFile is the Prometheus rule file format, as far as alerts.yaml uses it.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// TestAlertRules decodes the alert rules strictly and checks every metric
// and label value they use against a running matchd.
func TestAlertRules(t *testing.T) {
	s := theServer(t)
	b, err := os.ReadFile("observability/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	names := map[string]bool{}
	refs := 0
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: needs a name and rules", g.Name)
		}
		for _, r := range g.Rules {
			where := "alerts.yaml " + r.Alert
			if r.Alert == "" || r.Expr == "" || names[r.Alert] {
				t.Errorf("%s: an alert needs a unique name and an expr", where)
			}
			names[r.Alert] = true
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", where, r.For, err)
			}
			switch r.Labels["severity"] {
			case "page", "warn", "info":
			default:
				t.Errorf("%s: severity %q, want page, warn or info", where, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", where)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: unbalanced parentheses in %q", where, r.Expr)
			}
			refs += s.checkExpr(t, where, r.Expr)
		}
	}
	if len(names) < 5 || refs < 5 {
		t.Errorf("alerts.yaml has %d alerts naming %d metrics; expected a real rule set", len(names), refs)
	}
}

// TestGrafanaDashboard checks the dashboard JSON: every query names metrics
// and label values matchd exports, every datasource is the import input, and
// panel ids are unique.
func TestGrafanaDashboard(t *testing.T) {
	s := theServer(t)
	b, err := os.ReadFile("observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Inputs []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"__inputs"`
		UID    string           `json:"uid"`
		Title  string           `json:"title"`
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].Type != "datasource" {
		t.Errorf("__inputs = %+v, want one datasource input DS_PROMETHEUS", dash.Inputs)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) < 8 {
		t.Errorf("dashboard needs a uid, a title and its panels (has %d)", len(dash.Panels))
	}
	var all any
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	refs := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				switch {
				case (k == "expr" || k == "query" || k == "definition") && path != "":
					if e, ok := c.(string); ok {
						refs += s.checkExpr(t, "dashboard "+path+"."+k, e)
					}
				case k == "uid" && strings.HasSuffix(path, "datasource"):
					if c != "${DS_PROMETHEUS}" {
						t.Errorf("dashboard %s.uid = %v, want ${DS_PROMETHEUS}", path, c)
					}
				}
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range v {
				walk(path+"["+string(rune('0'+i%10))+"]", c)
			}
		}
	}
	walk("$", all)
	ids := map[float64]bool{}
	for _, p := range dash.Panels {
		id, _ := p["id"].(float64)
		if ids[id] {
			t.Errorf("panel id %v used twice", id)
		}
		ids[id] = true
	}
	if refs < 20 {
		t.Errorf("the dashboard names only %d metrics", refs)
	}
}
