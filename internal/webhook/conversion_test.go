package webhook

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
)

// TestFirstUndecodable: the conversion webhook names the field of a
// v1alpha1 request that does not decode, at any depth.
func TestFirstUndecodable(t *testing.T) {
	at := reflect.TypeFor[cnatv1alpha1.At]()
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"decodes", `{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At","spec":{"schedule":"x","command":"echo"}}`, ""},
		{"a number as a string", `{"spec":{"schedule":"x","backoffLimit":"2"}}`, "spec.backoffLimit"},
		{"spec as a string", `{"spec":"echo"}`, "spec"},
		{"a quantity that does not parse", `{"spec":{"template":{"spec":{"containers":[{"name":"main"},{"name":"side","resources":{"limits":{"memory":"1Gi","cpu":"lots"}}}]}}}}`, "spec.template.spec.containers[1].resources.limits[cpu]"},
		{"a port of neither kind", `{"spec":{"template":{"spec":{"containers":[{"name":"main","readinessProbe":{"tcpSocket":{"port":true}}}]}}}}`, "spec.template.spec.containers[0].readinessProbe.tcpSocket.port"},
		{"an inlined field", `{"spec":{"template":{"spec":{"containers":[{"name":"main","livenessProbe":{"exec":{"command":"ls"}}}]}}}}`, "spec.template.spec.containers[0].livenessProbe.exec.command"},
		{"a time in the embedded metadata", `{"metadata":{"creationTimestamp":"yesterday"}}`, "metadata.creationTimestamp"},
		{"not an object", `[]`, "<object>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := firstUndecodable([]byte(tc.raw), at, nil)
			if tc.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.String()).To(Equal(tc.want))
		})
	}
}
