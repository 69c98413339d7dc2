package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// RequestKey is one row of the API server's request counter
// apiserver_request_total: what was asked of which resource, and how the API
// server answered (a conflict retried hides nowhere).
type RequestKey struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	// DryRun is set for dry-run requests (the validating webhook's dry-run
	// Pod create), which the API server does not persist.
	DryRun bool `json:"dryRun,omitempty"`
	// Code is the HTTP response code (201 created, 409 a conflict...).
	Code string `json:"code,omitempty"`
}

// String renders the key as "VERB resource/subresource.group", without its
// code, which the tables show in a column of its own.
func (k RequestKey) String() string {
	s := k.Resource
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	if k.Group != "" {
		s += "." + k.Group
	}
	if k.DryRun {
		s += " (dry run)"
	}
	return k.Verb + " " + s
}

// write tells whether the request is a write: one that changes stored
// state if it succeeds, whatever its code (a write refused with a conflict
// cost the API server too). The verbs are the counter's: POST creates, PUT
// updates, APPLY is a server-side apply patch.
func (k RequestKey) write() bool {
	if k.DryRun {
		return false
	}
	switch k.Verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// RequestCounts are cumulative request counts by key.
type RequestCounts map[RequestKey]float64

// RequestCount is one row of a request table.
type RequestCount struct {
	RequestKey
	Count float64 `json:"count"`
}

// apiserverReading is one read of the API server's /metrics: its requests
// so far and the CPU time its process has used.
type apiserverReading struct {
	requests   RequestCounts
	cpuSeconds float64
}

// readAPIServer reads apiserver_request_total (summed over scopes, versions
// and components, by code) and process_cpu_seconds_total from one scrape of
// the API server's /metrics.
func readAPIServer(ctx context.Context, cs kubernetes.Interface) (apiserverReading, error) {
	raw, err := readMetrics(ctx, cs)
	if err != nil {
		return apiserverReading{}, err
	}
	requests, err := parseRequests(raw)
	if err != nil {
		return apiserverReading{}, err
	}
	cpu, err := parseCPU(raw)
	return apiserverReading{requests: requests, cpuSeconds: cpu}, err
}

// Window is what the API server did between two readings.
type Window struct {
	Requests   []RequestCount `json:"requests"`
	CPUSeconds float64        `json:"cpuSeconds"`
}

// since is the window from the earlier reading to r.
func (r apiserverReading) since(earlier apiserverReading) Window {
	return Window{Requests: r.requests.since(earlier.requests), CPUSeconds: r.cpuSeconds - earlier.cpuSeconds}
}

// readMetrics reads the API server's /metrics, a Prometheus text exposition.
func readMetrics(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	return raw, nil
}

// metricFamily parses the one family name of a Prometheus text exposition
// (nil if it has none): the full exposition of an API server holds
// thousands of series the bench does not need.
func metricFamily(exposition []byte, name string) (*dto.MetricFamily, error) {
	var family bytes.Buffer
	for line := range bytes.Lines(exposition) {
		if bytes.HasPrefix(line, []byte(name+"{")) || bytes.HasPrefix(line, []byte(name+" ")) ||
			bytes.HasPrefix(line, []byte("# HELP "+name+" ")) || bytes.HasPrefix(line, []byte("# TYPE "+name+" ")) {
			family.Write(line)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&family)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	return families[name], nil
}

// parseRequests extracts apiserver_request_total from a Prometheus text
// exposition. Long-running requests (WATCH, CONNECT) are counted too; the
// tables show what they are.
func parseRequests(exposition []byte) (RequestCounts, error) {
	f, err := metricFamily(exposition, "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	counts := RequestCounts{}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		k := RequestKey{Verb: labels["verb"], Group: labels["group"], Resource: labels["resource"], Subresource: labels["subresource"],
			DryRun: labels["dry_run"] != "", Code: labels["code"]}
		counts[k] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// since returns the requests made between the earlier scrape and c, largest
// first; keys with no request in between are left out.
func (c RequestCounts) since(earlier RequestCounts) []RequestCount {
	var out []RequestCount
	for k, v := range c {
		if d := v - earlier[k]; d > 0 {
			out = append(out, RequestCount{RequestKey: k, Count: d})
		}
	}
	slices.SortFunc(out, func(a, b RequestCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return compareKeys(a.RequestKey, b.RequestKey)
	})
	return out
}

// compareKeys orders request keys by what was asked, then by code.
func compareKeys(a, b RequestKey) int {
	return cmp.Or(strings.Compare(a.String(), b.String()), strings.Compare(a.Code, b.Code))
}

// sumRequests adds the counts of the rows that match.
func sumRequests(rows []RequestCount, match func(RequestKey) bool) float64 {
	var n float64
	for _, r := range rows {
		if match(r.RequestKey) {
			n += r.Count
		}
	}
	return n
}
