package webhook

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestConversionNamesTheUndecodableField: the conversion webhook names the
// field of a v1alpha1 request that does not decode, at any depth.
func TestConversionNamesTheUndecodableField(t *testing.T) {
	h := conversionHandler{scheme: testScheme}
	const at = `{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At",`
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"a number as a string", at + `"spec":{"schedule":"x","backoffLimit":"2"}}`, "spec.backoffLimit"},
		{"spec as a string", at + `"spec":"echo"}`, "spec"},
		{"a quantity that does not parse", at + `"spec":{"template":{"spec":{"containers":[{"name":"main"},{"name":"side","resources":{"limits":{"memory":"1Gi","cpu":"lots"}}}]}}}}`, "spec.template.spec.containers[1].resources.limits[cpu]"},
		{"a port of neither kind", at + `"spec":{"template":{"spec":{"containers":[{"name":"main","readinessProbe":{"tcpSocket":{"port":true}}}]}}}}`, "spec.template.spec.containers[0].readinessProbe.tcpSocket.port"},
		{"an inlined field", at + `"spec":{"template":{"spec":{"containers":[{"name":"main","livenessProbe":{"exec":{"command":"ls"}}}]}}}}`, "spec.template.spec.containers[0].livenessProbe.exec.command"},
		{"a time in the embedded metadata", at + `"metadata":{"creationTimestamp":"yesterday"}}`, "metadata.creationTimestamp"},
		{"not an object", `[]`, "<object>"},
		{"an unknown kind", `{"apiVersion":"v1","kind":"Nothing","spec":1}`, "<object>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := h.undecodable([]byte(tc.raw), errors.New("the decoder's message"))
			g.Expect(err.Field).To(Equal(tc.want))
			g.Expect(err.Detail).To(Equal("the decoder's message"))
		})
	}
}
