package v1alpha1

import (
	"testing"

	. "github.com/onsi/gomega"
)

const (
	alphaAt = `{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At",`
	betaAt  = `{"apiVersion":"cnat.programming-kubernetes.info/v1beta1","kind":"At",`
)

// TestConvertOnTheWire: Convert rewrites apiVersion, status.phase and
// status.outcome, and passes every other member through byte for byte
// (only the whitespace between tokens goes, and members come in the order
// of their names): numbers beyond float64's precision and in any notation,
// HTML characters, fields it does not know, and values of the wrong type,
// which the API server's schema validation refuses naming the field.
func TestConvertOnTheWire(t *testing.T) {
	meta := `"metadata":{"name":"a","annotations":{"note":"<b>&amp;</b> é \u00e9"},"uid":"u"},`
	for _, tc := range []struct{ name, in, to, want string }{
		{"a DONE At to v1beta1",
			alphaAt + meta + `"spec":{"schedule":"2099-01-01T00:00:00Z", "startingDeadlineSeconds":9007199254740993,"unknown":[1.50,1e3,{"a":null}]},"status":{"phase":"DONE","outcome":"Missed","attempts":1e0,"exitCode":-0}}`,
			"cnat.programming-kubernetes.info/v1beta1",
			betaAt + meta + `"spec":{"schedule":"2099-01-01T00:00:00Z","startingDeadlineSeconds":9007199254740993,"unknown":[1.50,1e3,{"a":null}]},"status":{"attempts":1e0,"exitCode":-0,"phase":"Missed"}}`},
		{"a Failed At to v1alpha1",
			betaAt + meta + `"spec":{"command":"echo \"\u0000\"","backoffLimit":12345678901234567890},"status":{"phase":"Failed","retryTime":null}}`,
			"cnat.programming-kubernetes.info/v1alpha1",
			alphaAt + meta + `"spec":{"command":"echo \"\u0000\"","backoffLimit":12345678901234567890},"status":{"outcome":"Failed","phase":"DONE","retryTime":null}}`},
		{"values of the wrong type",
			alphaAt + `"metadata":{"creationTimestamp":"yesterday"},"spec":"echo","status":{"phase":5,"outcome":"Failed"}}`,
			"cnat.programming-kubernetes.info/v1beta1",
			betaAt + `"metadata":{"creationTimestamp":"yesterday"},"spec":"echo","status":{"phase":5}}`},
		{"DONE with an outcome of the wrong type",
			alphaAt + `"status":{"phase":"DONE","outcome":["Failed"]}}`,
			"cnat.programming-kubernetes.info/v1beta1",
			betaAt + `"status":{"phase":"Succeeded"}}`},
		{"a phase neither version has",
			betaAt + `"status":{"phase":"SOMEDAY"}}`,
			"cnat.programming-kubernetes.info/v1alpha1",
			alphaAt + `"status":{"phase":"SOMEDAY"}}`},
		{"status not an object",
			alphaAt + `"status":"DONE"}`,
			"cnat.programming-kubernetes.info/v1beta1",
			betaAt + `"status":"DONE"}`},
		{"status null",
			betaAt + `"status":null}`,
			"cnat.programming-kubernetes.info/v1alpha1",
			alphaAt + `"status":null}`},
		{"the same version, untouched",
			alphaAt + `"spec": {"z":1, "a":2}}`,
			"cnat.programming-kubernetes.info/v1alpha1",
			alphaAt + `"spec": {"z":1, "a":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Convert([]byte(tc.in), tc.to)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(Equal(tc.want))
		})
	}
}

// TestConvertRefusesWhatIsNotAnAt: Convert fails, saying why, only on what
// the API server never sends it for this CRD.
func TestConvertRefusesWhatIsNotAnAt(t *testing.T) {
	for _, tc := range []struct{ name, in, to, want string }{
		{"not an object", `[]`, "cnat.programming-kubernetes.info/v1beta1", "not a JSON object"},
		{"null", `null`, "cnat.programming-kubernetes.info/v1beta1", "not a JSON object"},
		{"another kind", `{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"Job"}`, "cnat.programming-kubernetes.info/v1beta1", `kind "Job" is not At`},
		{"an apiVersion spelt differently", `{"apiversion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At"}`, "cnat.programming-kubernetes.info/v1beta1", `from ""`},
		{"a version not served", alphaAt + `"spec":{}}`, "cnat.programming-kubernetes.info/v2", `to "cnat.programming-kubernetes.info/v2"`},
		{"from a version not served", `{"apiVersion":"cnat.programming-kubernetes.info/v2","kind":"At"}`, "cnat.programming-kubernetes.info/v1beta1", `from "cnat.programming-kubernetes.info/v2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Convert([]byte(tc.in), tc.to)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
