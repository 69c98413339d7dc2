package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// post sends body to the conversion webhook and returns the status code and
// the answer.
func post(body string) (int, string) {
	w := httptest.NewRecorder()
	conversionHandler{}.ServeHTTP(w, httptest.NewRequest(http.MethodPost, ConversionPath, strings.NewReader(body)))
	return w.Code, w.Body.String()
}

// TestConversionWebhook: the webhook answers a ConversionReview with every
// object converted on its JSON — values it does not own, of the wrong type
// included, as they were sent — under the request's UID.
func TestConversionWebhook(t *testing.T) {
	g := NewWithT(t)
	code, body := post(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r1","desiredAPIVersion":"cnat.programming-kubernetes.info/v1beta1","objects":[` +
		`{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At","metadata":{"name":"a"},"spec":{"schedule":"2099-01-01T00:00:00Z","startingDeadlineSeconds":9007199254740993,"command":"echo <&>"},"status":{"phase":"DONE","outcome":"Failed"}},` +
		`{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At","metadata":{"name":"b"},"spec":{"backoffLimit":"2","template":{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"lots"}}}]}}}}]}}`)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(MatchJSON(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"r1","result":{"status":"Success","metadata":{}},"convertedObjects":[` +
		`{"apiVersion":"cnat.programming-kubernetes.info/v1beta1","kind":"At","metadata":{"name":"a"},"spec":{"schedule":"2099-01-01T00:00:00Z","startingDeadlineSeconds":9007199254740993,"command":"echo <&>"},"status":{"phase":"Failed"}},` +
		`{"apiVersion":"cnat.programming-kubernetes.info/v1beta1","kind":"At","metadata":{"name":"b"},"spec":{"backoffLimit":"2","template":{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"lots"}}}]}}}}]}}`))
	g.Expect(body).To(ContainSubstring(`9007199254740993,"command":"echo <&>"`), "the bytes of a member pass through as they were sent")
}

// TestConversionWebhookRefuses: what is not an At of a served version fails
// the whole review, saying why; what is not a review is a bad request.
func TestConversionWebhookRefuses(t *testing.T) {
	g := NewWithT(t)
	code, body := post(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r2","desiredAPIVersion":"cnat.programming-kubernetes.info/v2","objects":[` +
		`{"apiVersion":"cnat.programming-kubernetes.info/v1alpha1","kind":"At"}]}}`)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(MatchJSON(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"r2","convertedObjects":null,"result":{"status":"Failure","metadata":{},` +
		`"message":"converting At from \"cnat.programming-kubernetes.info/v1alpha1\" to \"cnat.programming-kubernetes.info/v2\": At is served as cnat.programming-kubernetes.info/v1alpha1 and cnat.programming-kubernetes.info/v1beta1"}}}`))

	for _, bad := range []string{`{"kind":"ConversionReview"}`, `not JSON`} {
		code, _ := post(bad)
		g.Expect(code).To(Equal(http.StatusBadRequest), bad)
	}
}
