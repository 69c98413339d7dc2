package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
)

// ConversionPath is where the API server sends conversion requests (the
// CRD's conversion webhook).
const ConversionPath = "/convert"

// conversionHandler is the CRD's conversion webhook: each At of a
// ConversionReview converted on its JSON (cnatv1alpha1.Convert), never decoded,
// so a value of the wrong type passes through for the schema to refuse.
type conversionHandler struct{}

func (conversionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review := &apix.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "expected a ConversionReview with a request", http.StatusBadRequest)
		return
	}
	review.Response = convert(review.Request)
	review.Request = nil
	// Written as they are: no HTML escaping, only whitespace dropped.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(review); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// convert answers req: every object converted, or the first error.
func convert(req *apix.ConversionRequest) *apix.ConversionResponse {
	resp := &apix.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, obj := range req.Objects {
		out, err := cnatv1alpha1.Convert(obj.Raw, req.DesiredAPIVersion)
		if err != nil {
			return &apix.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	return resp
}
