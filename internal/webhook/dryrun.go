package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// dryRunPod has the API server validate and admit, without storing it, the
// Pod the At's first attempt would run, so a template it would refuse as a Pod
// is refused now, naming the At's field, rather than failing at 09:00 tomorrow;
// a Pod refused only for now (a quota, a policy) is a warning.
func (v *AtValidator) dryRunPod(ctx context.Context, at *cnatv1beta1.At) (admission.Warnings, error) {
	if at.Status.Attempts > 0 {
		return nil, nil // it has run: its Pods exist
	}
	pod := atpod.NewPod(at, 1, time.Time{}, v.Pods)
	// The At may have no UID or name yet; the dry run needs neither.
	pod.OwnerReferences = nil
	pod.Name, pod.GenerateName = "", "cnat-dry-run-"
	key, err := dryRunKey(pod)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if v.DryRunVerdicts != nil {
		if warnings, valid := v.DryRunVerdicts.Get(key); valid {
			return slices.Clone(warnings.(admission.Warnings)), nil
		}
	}
	err = v.Client.Create(ctx, pod, client.DryRunAll, client.FieldOwner(cnatv1beta1.FieldManager))
	switch {
	case err == nil:
		v.rememberVerdict(key, nil)
		return nil, nil
	case atpod.PodFieldsInvalid(err):
		return nil, invalid(at, podErrorsAsAtErrors(at, err))
	case atpod.ServerFailed(err):
		// The check could not be made: fail closed, the client retries.
		return nil, apierrors.NewInternalError(fmt.Errorf("validating the At's Pod by a dry run: %w", err))
	default:
		// An admission plugin refused it, whatever its code: that can change
		// before the At's time, and the controller reports it then.
		warnings := admission.Warnings{fmt.Sprintf("the Pod of this At would be refused if it ran now: %v", err)}
		v.rememberVerdict(key, slices.Clone(warnings))
		return warnings, nil
	}
}

// rememberVerdict keeps the dry run's verdict that the Pod of key is valid,
// with its warnings, for VerdictFor.
func (v *AtValidator) rememberVerdict(key string, warnings admission.Warnings) {
	if v.DryRunVerdicts != nil {
		v.DryRunVerdicts.Add(key, warnings, VerdictFor)
	}
}

// VerdictFor is how long a dry run's verdict that an At's Pod is valid is
// reused for Ats whose Pod is the same up to the At's name and UID (what that
// window lets through: docs/security.md, "What admission reuses").
const VerdictFor = 10 * time.Second

// dryRunPlaceholder stands for an At's name and UID in dryRunKey.
const dryRunPlaceholder = "at"

// dryRunKey identifies what a dry run of pod checks: a SHA-256 of the Pod as
// sent, the values of the labels …/at and …/at-uid (the At's own) replaced by
// a placeholder. Why a verdict holds for every Pod with the key:
// docs/security.md, "What admission reuses". The user is not in it: the dry
// run is the controller's request (the guard answers for the user).
func dryRunKey(pod *corev1.Pod) (string, error) {
	keyed := *pod
	keyed.Labels = maps.Clone(pod.Labels)
	for _, label := range []string{cnatv1beta1.LabelAt, cnatv1beta1.LabelAtUID} {
		if _, ok := keyed.Labels[label]; ok {
			keyed.Labels[label] = dryRunPlaceholder
		}
	}
	raw, err := json.Marshal(&keyed)
	if err != nil {
		return "", fmt.Errorf("encoding the dry-run Pod: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
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
// comes from: its own spec.activeDeadlineSeconds and spec.command when set,
// else its template (without one, spec.command, which the default Pod runs).
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
