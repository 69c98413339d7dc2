package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	repoRoot  = "../.."
	component = repoRoot + "/kustomize/components/monitoring"
)

// targetLabels are the labels Prometheus (with the Prometheus Operator's
// ServiceMonitor) gives every series it scrapes, beside the metric's own.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

var (
	exportedOnce     sync.Once
	exportedMetrics  map[string]*metric
	exportedLeaderID string
)

// controller is what the controller exports, read once per test binary.
func controller(t *testing.T) (map[string]*metric, string) {
	t.Helper()
	exportedOnce.Do(func() { exportedMetrics, exportedLeaderID = exported(t) })
	if exportedMetrics == nil {
		t.FailNow()
	}
	return exportedMetrics, exportedLeaderID
}

// TestDashboardGenerated: the committed dashboard.json is what the
// generator writes (make dashboard; make verify checks the same).
func TestDashboardGenerated(t *testing.T) {
	want, err := dashboardJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(component + "/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("kustomize/components/monitoring/dashboard.json is not what hack/monitoring generates: run make dashboard (and never edit the JSON)")
	}
}

// TestDashboard checks the committed dashboard as Grafana would read it:
// valid JSON, a Prometheus data source variable every panel uses, unique
// panel ids, and in every query valid PromQL (Grafana's interval variables
// replaced) that names only metrics and labels the controller exports.
func TestDashboard(t *testing.T) {
	metrics, leaderID := controller(t)
	raw, err := os.ReadFile(component + "/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Type, Name, Query string }
		}
		Panels []dashboardPanel
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if len(d.Templating.List) != 1 || d.Templating.List[0].Type != "datasource" || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Query != "prometheus" {
		t.Errorf("want one variable, datasource, of Prometheus data sources; have %+v", d.Templating.List)
	}
	ids := map[int]string{}
	queries := 0
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			if other, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, other)
			}
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: data source %+v, want the variable ${datasource}", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q: no query", p.Title)
			}
			for _, target := range p.Targets {
				queries++
				expr := grafanaVariables.Replace(target.Expr)
				for _, problem := range checkExpr(expr, metrics, leaderID) {
					t.Errorf("panel %q, query %s: %s\n  %s", p.Title, target.RefID, problem, target.Expr)
				}
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		t.Error("no queries in the dashboard")
	}
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// grafanaVariables are Grafana's interval variables, replaced by a
// duration so the Prometheus parser reads the query; any other $ is left
// and fails to parse.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// TestRules checks rules.yaml beyond what promtool checks: every
// expression names only metrics and labels the controller exports, and
// every alert has a summary and a description saying what to look at.
func TestRules(t *testing.T) {
	metrics, leaderID := controller(t)
	raw, err := os.ReadFile(component + "/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string
				Expr        string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	alerts := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			alerts++
			for _, problem := range checkExpr(r.Expr, metrics, leaderID) {
				t.Errorf("alert %s: %s\n  %s", r.Alert, problem, r.Expr)
			}
			if r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], "`") {
				t.Errorf("alert %s: want a summary, and a description that quotes the command to look with", r.Alert)
			}
		}
	}
	if alerts == 0 {
		t.Error("no alerts in rules.yaml")
	}
}

// TestCheckExprRefuses: the check of the dashboard and the rules fails on
// each mistake it is there for.
func TestCheckExprRefuses(t *testing.T) {
	metrics, leaderID := controller(t)
	for _, tc := range []struct{ expr, problem string }{
		{`sum(rate(cnat_runs_total{job="x"}[5m])`, "does not parse"},
		{`cnat_run_total`, "cnat_run_total is not a metric the controller exports"},
		{`cnat_runs_total{result="Failed"}`, `cnat_runs_total has no label "result"`},
		{`cnat_runs_total_bucket`, "cnat_runs_total_bucket is not a metric the controller exports"},
		{`sum by (result) (rate(cnat_runs_total[5m]))`, `by (result): no label "result"`},
		{`workqueue_depth{le="1"}`, `workqueue_depth has no label "le"`},
		{`up{phase="Pending"}`, `up has no label "phase"`},
		{`leader_election_master_status{name="cnat"}`, `leader election ID`},
		{`rate(cnat_firing_lateness_seconds_bucket[$__rate_interval])`, "does not parse"},
	} {
		problems := checkExpr(tc.expr, metrics, leaderID)
		if !strings.Contains(strings.Join(problems, "\n"), tc.problem) {
			t.Errorf("%s: want a problem %q, have %q", tc.expr, tc.problem, problems)
		}
	}
	for _, ok := range []string{
		`histogram_quantile(0.99, sum by (le, job) (rate(cnat_firing_lateness_seconds_bucket{job="x"}[5m])))`,
		`sum by (webhook, code) (rate(controller_runtime_webhook_requests_total{code=~"5.."}[5m]))`,
		`max(leader_election_master_status{name="` + leaderID + `"})`,
		`absent(up{job="x"} == 1)`,
	} {
		if problems := checkExpr(ok, metrics, leaderID); len(problems) > 0 {
			t.Errorf("%s: %q", ok, problems)
		}
	}
}

// TestExportedHasTheKnownMetrics guards the reading of the source: the
// metrics the alerts were written against are found, with their labels.
func TestExportedHasTheKnownMetrics(t *testing.T) {
	metrics, leaderID := controller(t)
	if leaderID != "cnat.programming-kubernetes.info" {
		t.Errorf("leader election ID %q", leaderID)
	}
	for name, labels := range map[string]string{
		"cnat_firing_lateness_seconds":              "",
		"cnat_runs_total":                           "outcome",
		"cnat_ats":                                  "phase",
		"cnat_pending_ats":                          "due",
		"controller_runtime_reconcile_total":        "controller result",
		"controller_runtime_reconcile_errors_total": "controller",
		"controller_runtime_webhook_requests_total": "code webhook",
		"workqueue_depth":                           "controller name priority",
		"leader_election_master_status":             "name",
	} {
		m := metrics[name]
		if m == nil {
			t.Errorf("%s not found", name)
			continue
		}
		var have []string
		for l := range m.labels {
			have = append(have, l)
		}
		sort.Strings(have)
		if strings.Join(have, " ") != labels || !m.known {
			t.Errorf("%s: labels %q (known %v), want %q", name, have, m.known, labels)
		}
	}
	if !metrics["cnat_firing_lateness_seconds"].histogram {
		t.Error("cnat_firing_lateness_seconds is not read as a histogram")
	}
}

var promql = parser.NewParser(parser.Options{})

// checkExpr parses expr and returns what is wrong with it: a syntax error,
// a metric the controller does not export, a label a metric does not have
// (in a selector or an aggregation's by), or a leader election Lease that
// is not the controller's.
func checkExpr(expr string, metrics map[string]*metric, leaderID string) []string {
	root, err := promql.ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	var problems []string
	parser.Inspect(root, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			m, labels := resolve(n, metrics)
			if m == "" {
				problems = append(problems, fmt.Sprintf("%s is not a metric the controller exports", n.Name))
				return nil
			}
			for _, matcher := range n.LabelMatchers {
				if matcher.Name == "__name__" {
					continue
				}
				if labels != nil && !labels[matcher.Name] {
					problems = append(problems, fmt.Sprintf("%s has no label %q", n.Name, matcher.Name))
				}
				if m == "leader_election_master_status" && matcher.Name == "name" && matcher.Value != leaderID {
					problems = append(problems, fmt.Sprintf("%s: name %q is not the controller's leader election ID %q", n.Name, matcher.Value, leaderID))
				}
			}
		case *parser.AggregateExpr:
			if n.Without {
				return nil
			}
			available := map[string]bool{}
			complete := true
			parser.Inspect(n.Expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					_, labels := resolve(vs, metrics)
					if labels == nil {
						complete = false
					}
					for l := range labels {
						available[l] = true
					}
				}
				return nil
			})
			for _, l := range n.Grouping {
				if complete && !available[l] {
					problems = append(problems, fmt.Sprintf("by (%s): no label %q on the series aggregated", strings.Join(n.Grouping, ", "), l))
				}
			}
		}
		return nil
	})
	return problems
}

var suffix = regexp.MustCompile(`_(bucket|sum|count)$`)

// resolve finds the exported metric a selector's series belong to (""
// when none), and the labels its series have: the metric's own, the
// target's, and le for a histogram's buckets (nil when unknown).
func resolve(vs *parser.VectorSelector, metrics map[string]*metric) (string, map[string]bool) {
	labels := map[string]bool{}
	for _, l := range targetLabels {
		labels[l] = true
	}
	if vs.Name == "up" {
		return "up", labels
	}
	name, m := vs.Name, metrics[vs.Name]
	if m == nil {
		if s := suffix.FindStringSubmatch(vs.Name); s != nil {
			base := metrics[strings.TrimSuffix(vs.Name, s[0])]
			if base != nil && (base.histogram || base.summary && s[1] != "bucket") {
				name, m = strings.TrimSuffix(vs.Name, s[0]), base
				if s[1] == "bucket" {
					labels["le"] = true
				}
			}
		}
	}
	if m == nil {
		return "", nil
	}
	if !m.known {
		return name, nil
	}
	for l := range m.labels {
		labels[l] = true
	}
	return name, labels
}

// The component's files are where the tests read them.
func init() {
	for _, f := range []string{"rules.yaml", "dashboard.json"} {
		if _, err := os.Stat(filepath.Join(component, f)); err != nil {
			panic(err)
		}
	}
}
