package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// dryRunPod renders the Pod the At's first attempt would run and has the API
// server validate and admit it without storing it (a dry-run create), so a
// template the API server would refuse as a Pod (a bad container name, a
// malformed resource quantity, a volume without a source) is refused now,
// with the field named in the At's terms, rather than failing at 09:00
// tomorrow. A Pod that is only refused for now (a Pod Security level of the
// namespace, a quota) is admitted with a warning: a template that asks for
// more is the user's choice and still meets the namespace's policy when it
// runs.
func (v *AtValidator) dryRunPod(ctx context.Context, at *cnatv1beta1.At) (admission.Warnings, error) {
	if at.Status.Attempts > 0 {
		return nil, nil // it has run: its Pods exist
	}
	pod, err := apply.NewPod(at, 1, time.Time{}, v.Pods)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The At may have no UID or name yet; the dry run needs neither.
	pod.OwnerReferences = nil
	pod.Name, pod.GenerateName = "", "cnat-dry-run-"
	err = v.Client.Create(ctx, pod, client.DryRunAll, client.FieldOwner(cnatv1beta1.FieldManager))
	switch {
	case err == nil:
		return nil, nil
	case apply.PodFieldsInvalid(err):
		// The API server's own validation of the Pod's fields: the spec is
		// wrong, and the At is refused naming its field.
		return nil, invalid(at, podErrorsAsAtErrors(at, err))
	case apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err):
		// The check could not be made: fail closed, the client retries.
		return nil, apierrors.NewInternalError(fmt.Errorf("validating the At's Pod by a dry run: %w", err))
	default:
		// An admission plugin refused it, whatever code it chose (a quota's
		// 403, a ValidatingAdmissionPolicy's 422, a webhook's 400): that can
		// change before the At's time, and the controller reports it then.
		return admission.Warnings{fmt.Sprintf("the Pod of this At would be refused if it ran now: %v", err)}, nil
	}
}

// podErrorsAsAtErrors names the Pod's invalid fields as the At's: the Pod's
// spec.containers[0].image is the At's spec.template.spec.containers[0].image.
func podErrorsAsAtErrors(at *cnatv1beta1.At, err error) field.ErrorList {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "template"), "", err.Error())}
	}
	var errs field.ErrorList
	for _, cause := range status.Status().Details.Causes {
		errType := field.ErrorType(cause.Type)
		errs = append(errs, &field.Error{
			Type:     errType,
			Field:    atFieldOfPodField(at, cause.Field),
			BadValue: field.OmitValueType{},
			Detail:   strings.TrimPrefix(cause.Message, errType.String()+": "),
		})
	}
	return errs
}

// atFieldOfPodField names the At's field that a field of its rendered Pod
// comes from: spec.activeDeadlineSeconds and the first container's command
// come from the At's own fields when it sets them, the rest from its template (or, without a
// template, from the controller's default Pod, which the At's command runs
// in).
func atFieldOfPodField(at *cnatv1beta1.At, podField string) string {
	switch {
	case podField == "spec.activeDeadlineSeconds" && at.Spec.ActiveDeadlineSeconds != nil:
		return "spec.activeDeadlineSeconds"
	case strings.HasPrefix(podField, "spec.containers[0].command"), strings.HasPrefix(podField, "spec.containers[0].args"):
		if at.Spec.Command != "" {
			return "spec.command"
		}
	case strings.HasPrefix(podField, "metadata.name"), strings.HasPrefix(podField, "metadata.labels"), strings.HasPrefix(podField, "metadata.ownerReferences"):
		if at.Spec.Template == nil {
			return "metadata.name"
		}
	}
	if at.Spec.Template == nil {
		return "spec.command"
	}
	return "spec.template." + podField
}
