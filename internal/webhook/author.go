package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/author"
)

// wantAuthor is the author annotation an admitted At carries: the
// requester on a create and on an update that changes the spec; on any
// other update the stored value, or none, so that no one forges or removes
// it. ok is false when the At has no author.
func wantAuthor(req admission.Request, old, at *cnatv1beta1.At) (value string, ok bool) {
	if old == nil || !apiequality.Semantic.DeepEqual(old.Spec, at.Spec) {
		return author.Annotation(req.UserInfo), true
	}
	value, ok = old.Annotations[cnatv1beta1.AnnotationAuthor]
	return value, ok
}

// recordAuthor is the defaulting webhook: the template defaults, then the
// author (wantAuthor) in one patch operation on the annotation alone.
type recordAuthor struct {
	defaulter *AtDefaulter
	next      admission.Handler
}

func (h recordAuthor) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.next.Handle(ctx, req)
	if !resp.Allowed || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return resp
	}
	at, old := &cnatv1beta1.At{}, (*cnatv1beta1.At)(nil)
	if err := json.Unmarshal(req.Object.Raw, at); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the At: %w", err))
	}
	written := at.Annotations
	// The spec compared is the one that will be stored.
	if err := h.defaulter.Default(ctx, at); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if req.Operation == admissionv1.Update {
		old = &cnatv1beta1.At{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("decoding the stored At: %w", err))
		}
	}
	value, want := wantAuthor(req, old, at)
	got, has := written[cnatv1beta1.AnnotationAuthor]
	path := "/metadata/annotations/" + strings.ReplaceAll(cnatv1beta1.AnnotationAuthor, "/", "~1")
	switch {
	case want && written == nil:
		resp.Patches = append(resp.Patches, jsonpatch.NewOperation("add", "/metadata/annotations", map[string]string{cnatv1beta1.AnnotationAuthor: value}))
	case want && (!has || got != value):
		resp.Patches = append(resp.Patches, jsonpatch.NewOperation("add", path, value))
	case !want && has:
		resp.Patches = append(resp.Patches, jsonpatch.NewOperation("remove", path, nil))
	}
	return resp
}

// validateAuthor refuses an At whose author annotation is not what the
// defaulting webhook writes (wantAuthor), but admits no author where the stored
// At had none (during an upgrade the release before may answer the defaulting webhook).
// old is nil on a create.
func validateAuthor(ctx context.Context, old, at *cnatv1beta1.At) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the admission request: %w", err))
	}
	want, wantOK := wantAuthor(req, old, at)
	got, gotOK := at.Annotations[cnatv1beta1.AnnotationAuthor]
	if got == want && gotOK == wantOK {
		return nil
	}
	if !gotOK && (old == nil || old.Annotations[cnatv1beta1.AnnotationAuthor] == "") {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(cnatv1beta1.AnnotationAuthor)
	return invalid(at, field.ErrorList{field.Forbidden(path,
		"is the user who last set the At's spec, written by cnat's defaulting webhook: a request may not set, change or remove it")})
}
