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

// dryRunPod renders the Pod the At's first attempt would run and has the API
// server validate and admit it without storing it (a dry-run create), so a
// template the API server would refuse as a Pod (a bad container name, a
// malformed resource quantity, a volume without a source) is refused now,
// with the field named in the At's terms, rather than failing at 09:00
// tomorrow. A Pod that is only refused for now (a Pod Security level of the
// namespace, a quota) is admitted with a warning: a template that asks for
// more is the user's choice and still meets the namespace's policy when it
// runs.
//
// A verdict that the Pod is valid (admitted, or admitted with a warning) is
// reused for VerdictFor by every At whose dry-run Pod is the same up to what
// is the At's own (DryRunVerdicts): Ats created in bulk mostly share their
// template, and each dry run is a whole Pod create for the API server.
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
		// The API server's own validation of the Pod's fields: the spec is
		// wrong, and the At is refused naming its field.
		return nil, invalid(at, podErrorsAsAtErrors(at, err))
	case atpod.ServerFailed(err):
		// The check could not be made: fail closed, the client retries.
		return nil, apierrors.NewInternalError(fmt.Errorf("validating the At's Pod by a dry run: %w", err))
	default:
		// An admission plugin refused it, whatever code it chose (a quota's
		// 403, a ValidatingAdmissionPolicy's 422, a webhook's 400): that can
		// change before the At's time, and the controller reports it then.
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
// reused for Ats whose Pod is the same up to the At's name and UID. Within
// it, a change of the namespace that would make the API server refuse the
// same Pod's fields (a LimitRange whose defaults exceed the template's
// limits) is not seen by Ats of that template; after it, it is. Such a
// change can come after any At was admitted anyway, and the controller
// reports the Pod's refusal when the At runs.
const VerdictFor = 10 * time.Second

// dryRunPlaceholder stands for an At's name and UID in dryRunKey.
const dryRunPlaceholder = "at"

// dryRunKey identifies what a dry run of pod checks: the Pod as sent (its
// namespace, spec, labels, annotations, finalizers), in its JSON encoding
// (map keys sorted), with the two values that are the At's own and differ
// between Ats of one template replaced by a placeholder: the labels
// cnat.programming-kubernetes.info/at (the At's name) and …/at-uid.
//
// The requesting user is not in the key: the dry run is the controller's
// own request (the guard answers for the user). Why a verdict for one At
// holds for another with the same key: the dry run refuses an At only when the API server's own validation refuses the
// Pod's fields (atpod.PodFieldsInvalid), and that validation reads a label
// only as a label value, on its own (labels have no total size; a
// matchLabelKeys of an affinity or spread constraint copies the value into
// a selector, where it is again a label value). Both values are valid label
// values for every At that reaches the dry run: the name is a DNS subdomain
// (the API server's rule for every custom resource's name) of at most 63
// characters (the CRD's CEL rule, and validateAt before the dry run), which
// is a valid label value; the UID is the API server's UUID, or empty before
// one is set. The Pod's name is not in the key because the dry run never
// sends it (generateName instead), today as before; the real
// <at>-<uid8>-<attempt> is a DNS subdomain far below the 253 characters a
// Pod name may have for every such At (atpod.PodName). Everything else the
// Pod carries (the spec-hash and generation annotations among it) is in the
// key. What an admission plugin answers may depend on the left-out values
// (a policy that reads the at label): that only ever makes a warning, never
// a refusal, and a warning is reused like a valid verdict.
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
