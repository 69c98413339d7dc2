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
apiserver_request_total{code="409",component="apiserver",dry_run="",group="cnat.programming-kubernetes.info",resource="ats",scope="resource",subresource="status",verb="APPLY",version="v1beta1"} 3
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
		{Verb: "POST", Resource: "pods", Code: "201"}:                                                                   10,
		{Verb: "POST", Resource: "pods", Code: "409"}:                                                                   2,
		{Verb: "POST", Resource: "pods", DryRun: true, Code: "201"}:                                                     5,
		{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "200"}: 30,
		{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "409"}: 3,
		{Verb: "GET", Subresource: "/metrics", Code: "200"}:                                                             4,
	}
	g.Expect(got).To(BeComparableTo(want), "by code: the conflicts are rows of their own")
}

// A stage's writes per unit are the controller's matching requests, less
// the bench's own creates, plus its reporters' Events; after T, those from
// the reading at T on.
func TestAccount(t *testing.T) {
	g := NewWithT(t)
	at := RequestKey{Verb: "POST", Group: "cnat.programming-kubernetes.info", Resource: "ats", Code: "201"}
	status := RequestKey{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "200"}
	conflict := status
	conflict.Code = "409"
	pod := RequestKey{Verb: "POST", Resource: "pods", Code: "201"}
	binding := RequestKey{Verb: "POST", Resource: "pods", Subresource: "binding", Code: "201"}
	start := apiserverReading{requests: RequestCounts{at: 5}, cpuSeconds: 10}
	atT := apiserverReading{requests: RequestCounts{at: 105, status: 100}, cpuSeconds: 12}
	end := apiserverReading{requests: RequestCounts{at: 105, status: 300, conflict: 10, pod: 100, binding: 100}, cpuSeconds: 15}
	events := []EventCount{
		{Reporter: "cnat-controller", Reason: "Succeeded", Count: 100, AfterT: 100},
		{Reporter: "default-scheduler", Reason: "Scheduled", Count: 100, AfterT: 100},
	}
	s := &Stage{Name: "cnat", N: 100}
	w := controllerWrites{match: isCnatWrite, benchBeforeT: 100, reporters: []string{"cnat-controller"}}
	g.Expect(account(s, start, &atT, end, w, events)).To(Succeed())
	// 100 At creates (the bench's), 300 status applies, 10 conflicts, 100
	// Pods, 100 Events: 5.1 per At; after T 200 + 10 + 100 + 100.
	g.Expect(s.WritesPerUnit).To(BeNumerically("~", 5.1, 1e-9))
	g.Expect(s.WritesPerUnitAfterT).To(BeNumerically("~", 4.1, 1e-9))
	g.Expect(s.APIServerCPUSeconds).To(BeNumerically("~", 5, 1e-9))
	g.Expect(s.AfterT.CPUSeconds).To(BeNumerically("~", 3, 1e-9))
	g.Expect(s.AfterT.Requests).To(ContainElement(RequestCount{RequestKey: conflict, Count: 10}))

	raw := &Stage{Name: "raw", N: 100}
	g.Expect(account(raw, start, nil, end, controllerWrites{match: isPodWrite}, events)).To(Succeed())
	g.Expect(raw.AfterT).To(BeNil(), "T is when creation began")
	g.Expect(raw.WritesPerUnitAfterT).To(Equal(raw.WritesPerUnit))

	g.Expect(account(&Stage{Name: "cnat", N: 100}, end, nil, start, w, nil)).To(MatchError(ContainSubstring("went back")))
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
