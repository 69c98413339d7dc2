package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

const exposition = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cnat.programming-kubernetes.info",resource="ats",scope="resource",subresource="status",verb="APPLY",version="v1beta1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 4
# HELP apiserver_request_duration_seconds Response latency.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",le="0.1"} 3
`

func TestParseRequests(t *testing.T) {
	g := NewWithT(t)
	got, err := parseRequests([]byte(exposition))
	g.Expect(err).NotTo(HaveOccurred())
	want := RequestCounts{
		{Verb: "POST", Resource: "pods"}:               12,
		{Verb: "POST", Resource: "pods", DryRun: true}: 5,
		{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status"}: 30,
		{Verb: "GET", Subresource: "/metrics"}: 4,
	}
	g.Expect(got).To(BeComparableTo(want))
}

func TestRequestsSince(t *testing.T) {
	g := NewWithT(t)
	pods := RequestKey{Verb: "POST", Resource: "pods"}
	status := RequestKey{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status"}
	watch := RequestKey{Verb: "WATCH", Resource: "pods"}
	before := RequestCounts{pods: 10, status: 5, watch: 3}
	after := RequestCounts{pods: 1010, status: 3005, watch: 3, {Verb: "DELETE", Resource: "pods"}: 1}
	got := after.since(before)
	want := []RequestCount{
		{RequestKey: status, Count: 3000},
		{RequestKey: pods, Count: 1000},
		{RequestKey: RequestKey{Verb: "DELETE", Resource: "pods"}, Count: 1},
	}
	g.Expect(got).To(BeComparableTo(want))
	g.Expect(sumRequests(got, RequestKey.write)).To(BeNumerically("==", 4001), "writes")
}

func TestRequestKeyWrite(t *testing.T) {
	g := NewWithT(t)
	for key, want := range map[RequestKey]bool{
		{Verb: "APPLY", Resource: "pods"}:                      true,
		{Verb: "PATCH", Resource: "ats"}:                       true,
		{Verb: "POST", Resource: "pods"}:                       true,
		{Verb: "PUT", Resource: "jobs", Subresource: "status"}: true,
		{Verb: "POST", Resource: "pods", DryRun: true}:         false,
		{Verb: "GET", Resource: "pods"}:                        false,
		{Verb: "WATCH", Resource: "pods"}:                      false,
	} {
		g.Expect(key.write()).To(Equal(want), "%s", key)
	}
}
