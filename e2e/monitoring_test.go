package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

const (
	monitoringComponent = "../kustomize/components/monitoring"
	monitoringOverlay   = "../kustomize/overlays/production-monitoring"
)

// TestMonitoringComponent renders the overlay that adds
// kustomize/components/monitoring and checks that its pieces fit together
// and with the base: the PrometheusRule's spec is rules.yaml (what promtool
// tests), the dashboard ConfigMap holds dashboard.json as it is, the
// ServiceMonitor selects the metrics Service and no other, on a port that
// reaches the controller's metrics endpoint and that its NetworkPolicy
// admits, Prometheus is bound to a role that may get /metrics, and the
// job the alerts and the dashboard select is the one the Prometheus
// Operator gives the scraped series (the Service's name). Run by make
// verify, like TestOverlayImages.
func TestMonitoringComponent(t *testing.T) {
	g := NewWithT(t)
	objects, err := manifests.Build(t.Context(), monitoringOverlay)
	g.Expect(err).NotTo(HaveOccurred())
	find := func(kind, name string) *unstructured.Unstructured {
		t.Helper()
		var found *unstructured.Unstructured
		for _, obj := range objects {
			if obj.GetKind() == kind && (name == "" || obj.GetName() == name) {
				g.Expect(found).To(BeNil(), "more than one %s %s", kind, name)
				found = obj
			}
		}
		g.Expect(found).NotTo(BeNil(), "no %s %s in %s", kind, name, monitoringOverlay)
		return found
	}

	t.Run("the PrometheusRule is rules.yaml", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := os.ReadFile(filepath.Join(monitoringComponent, "rules.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		var rules map[string]any
		g.Expect(yaml.Unmarshal(raw, &rules)).To(Succeed())
		spec, _, err := unstructured.NestedMap(find("PrometheusRule", "cnat").Object, "spec")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(spec).To(BeComparableTo(rules), "prometheus_rule.yaml's spec differs from rules.yaml: copy rules.yaml into it")
	})

	t.Run("the dashboard ConfigMap is dashboard.json", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := os.ReadFile(filepath.Join(monitoringComponent, "dashboard.json"))
		g.Expect(err).NotTo(HaveOccurred())
		cm := find("ConfigMap", "cnat-grafana-dashboard")
		g.Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"), "the label Grafana's sidecar looks for")
		data, _, err := unstructured.NestedStringMap(cm.Object, "data")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data).To(HaveKeyWithValue("cnat.json", string(raw)))
	})

	var metricsService *unstructured.Unstructured
	t.Run("the ServiceMonitor scrapes the controller's metrics endpoint", func(t *testing.T) {
		g := NewWithT(t)
		sm := find("ServiceMonitor", "")
		selector, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(selector).NotTo(BeEmpty())
		namespaces, _, err := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
		g.Expect(err).NotTo(HaveOccurred())
		var selected []*unstructured.Unstructured
		for _, obj := range objects {
			if obj.GetKind() == "Service" && matches(selector, obj.GetLabels()) {
				g.Expect(namespaces).To(ContainElement(obj.GetNamespace()), "namespaceSelector of the ServiceMonitor")
				selected = append(selected, obj)
			}
		}
		g.Expect(selected).To(HaveLen(1), "the ServiceMonitor must select the metrics Service only")
		metricsService = selected[0]

		endpoints, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(endpoints).To(HaveLen(1))
		endpoint := endpoints[0].(map[string]any)
		g.Expect(endpoint).To(HaveKeyWithValue("scheme", "https"))
		g.Expect(endpoint).To(HaveKeyWithValue("path", "/metrics"))
		g.Expect(endpoint).To(HaveKeyWithValue("bearerTokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"))

		// The Service port the endpoint names, the container port it
		// targets, and the address the controller serves metrics on.
		var targetPort string
		ports, _, err := unstructured.NestedSlice(metricsService.Object, "spec", "ports")
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range ports {
			if p := p.(map[string]any); p["name"] == endpoint["port"] {
				targetPort, _ = p["targetPort"].(string)
			}
		}
		g.Expect(targetPort).NotTo(BeEmpty(), "the Service has no port %v with a named targetPort", endpoint["port"])
		deployment := find("Deployment", "cnat-controller")
		podLabels, _, err := unstructured.NestedStringMap(deployment.Object, "spec", "template", "metadata", "labels")
		g.Expect(err).NotTo(HaveOccurred())
		serviceSelector, _, err := unstructured.NestedStringMap(metricsService.Object, "spec", "selector")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(matches(serviceSelector, podLabels)).To(BeTrue(), "the metrics Service does not select the controller's Pods")
		containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
		g.Expect(err).NotTo(HaveOccurred())
		manager := containers[0].(map[string]any)
		g.Expect(manager["args"]).To(ContainElement("--metrics-bind-address=:8443"))
		g.Expect(manager["ports"]).To(ContainElement(And(HaveKeyWithValue("name", targetPort), HaveKeyWithValue("containerPort", int64(8443)))))

		policy := find("NetworkPolicy", "cnat-controller")
		ingress, _, err := unstructured.NestedSlice(policy.Object, "spec", "ingress")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ingress).To(ContainElement(HaveKeyWithValue("ports", ContainElement(HaveKeyWithValue("port", int64(8443))))),
			"the NetworkPolicy must admit the scrapes on 8443")
	})

	t.Run("Prometheus may get /metrics", func(t *testing.T) {
		g := NewWithT(t)
		binding := find("ClusterRoleBinding", "cnat-metrics-reader")
		role, _, err := unstructured.NestedString(binding.Object, "roleRef", "name")
		g.Expect(err).NotTo(HaveOccurred())
		rules, _, err := unstructured.NestedSlice(find("ClusterRole", role).Object, "rules")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rules).To(ContainElement(And(
			HaveKeyWithValue("nonResourceURLs", ContainElement("/metrics")),
			HaveKeyWithValue("verbs", ContainElement("get")),
		)))
	})

	t.Run("the alerts and the dashboard select the scraped job", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(metricsService).NotTo(BeNil())
		job := regexp.MustCompile(`job\s*=~?\s*\\?"([^"\\]*)\\?"`)
		for _, file := range []string{"rules.yaml", "dashboard.json"} {
			raw, err := os.ReadFile(filepath.Join(monitoringComponent, file))
			g.Expect(err).NotTo(HaveOccurred())
			found := job.FindAllStringSubmatch(string(raw), -1)
			g.Expect(found).NotTo(BeEmpty(), file)
			for _, m := range found {
				g.Expect(m[1]).To(Equal(metricsService.GetName()), "%s selects job %q; the Prometheus Operator names the job after the Service", file, m[1])
			}
		}
	})
}

// TestMonitoringOnlyWhereAsked: the component needs the Prometheus
// Operator's CRDs, so every overlay but production-monitoring renders
// without a monitoring.coreos.com object and applies where they are not
// installed.
func TestMonitoringOnlyWhereAsked(t *testing.T) {
	g := NewWithT(t)
	overlays, err := filepath.Glob("../kustomize/overlays/*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(overlays).To(ContainElement(monitoringOverlay))
	for _, dir := range overlays {
		objects, err := manifests.Build(t.Context(), dir)
		g.Expect(err).NotTo(HaveOccurred())
		var monitoring []string
		for _, obj := range objects {
			if obj.GroupVersionKind().Group == "monitoring.coreos.com" {
				monitoring = append(monitoring, manifests.Ref(obj))
			}
		}
		if dir == monitoringOverlay {
			g.Expect(monitoring).To(HaveLen(2), dir)
		} else {
			g.Expect(monitoring).To(BeEmpty(), dir)
		}
	}
}

// matches tells whether labels has every key and value of selector.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
