package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	utilcache "k8s.io/apimachinery/pkg/util/cache"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// The rules are spelled out in full, as the defaulter's.
//
// +kubebuilder:webhook:path=/validate-cnat-programming-kubernetes-info-v1beta1-at,mutating=false,failurePolicy=fail,sideEffects=None,groups=cnat.programming-kubernetes.info,resources=ats,verbs=create;update,versions=v1beta1,name=vat-v1beta1.cnat.programming-kubernetes.info,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=10,patch=`{"rules":[{"apiGroups":["cnat.programming-kubernetes.info"],"apiVersions":["v1beta1"],"operations":["CREATE","UPDATE"],"resources":["ats"],"scope":"Namespaced"}]}`

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;create

// AtValidator refuses what the CRD's schema and CEL rules cannot (a time that
// is not real, an unknown zone, a template the API server would not take as a
// Pod) and, as the confused-deputy guard, an At from a user who may not create Pods.
type AtValidator struct {
	// Client creates SubjectAccessReviews and dry-run Pods.
	Client client.Client
	// Reader reads the Pod that says an At has fired, uncached.
	Reader client.Reader
	// Pods are the controller's Pod settings, to render the Pod as it will be.
	Pods atpod.PodOptions
	// PodCreateGuard turns the confused-deputy guard on.
	PodCreateGuard bool
	// PodCreateDecisions are the guard's recent "allowed" answers, by
	// decisionKey (nil: every At asks the API server).
	PodCreateDecisions *utilcache.LRUExpireCache
	// DryRunVerdicts are recent verdicts that an At's Pod is valid, with
	// their warnings, by dryRunKey (nil: every At has its Pod dry-run).
	DryRunVerdicts *utilcache.LRUExpireCache
}

// RecentAnswers bounds each cache of answers admission reuses; only answers
// that admit are put in one.
const RecentAnswers = 4096

// ValidateCreate validates a new At.
func (v *AtValidator) ValidateCreate(ctx context.Context, at *cnatv1beta1.At) (admission.Warnings, error) {
	if err := validateAuthor(ctx, nil, at); err != nil {
		return nil, err
	}
	return v.validate(ctx, at)
}

// ValidateUpdate validates a changed At. Only a spec change is validated
// again (and checked against the guard): labels, annotations and status
// never start anything, but the author annotation is always checked.
func (v *AtValidator) ValidateUpdate(ctx context.Context, old, at *cnatv1beta1.At) (admission.Warnings, error) {
	if err := validateAuthor(ctx, old, at); err != nil {
		return nil, err
	}
	if apiequality.Semantic.DeepEqual(old.Spec, at.Spec) {
		return nil, nil
	}
	fired, err := v.fired(ctx, old)
	if err != nil {
		return nil, err
	}
	if fired {
		if errs := validateImmutableOnceFired(old, at); len(errs) > 0 {
			return nil, invalid(at, errs)
		}
	}
	return v.validate(ctx, at)
}

// ValidateDelete allows every deletion.
func (v *AtValidator) ValidateDelete(context.Context, *cnatv1beta1.At) (admission.Warnings, error) {
	return nil, nil
}

func (v *AtValidator) validate(ctx context.Context, at *cnatv1beta1.At) (admission.Warnings, error) {
	if v.PodCreateGuard {
		if err := v.guardPodCreate(ctx, at); err != nil {
			return nil, err
		}
	}
	if errs := validateAt(at); len(errs) > 0 {
		return nil, invalid(at, errs)
	}
	return v.dryRunPod(ctx, at)
}

// validateAt checks what the schema cannot: the schedule and time zone
// against the time-zone database, the name against the label and Pod name
// limits, the template against what a Pod of cnat's must be.
func validateAt(at *cnatv1beta1.At) field.ErrorList {
	var errs field.ErrorList
	if len(at.Name) > validation.LabelValueMaxLength {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), at.Name, validation.LabelValueMaxLength))
	}
	spec := field.NewPath("spec")
	if _, err := lifecycle.ScheduledTime(&at.Spec); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateLimits(at)...)
	if at.Spec.Command == "" && at.Spec.Template == nil {
		errs = append(errs, field.Required(spec.Child("command"), "spec.command or spec.template must be set: a shell line to run with /bin/sh -c, or a Pod template whose first container is run"))
	}
	if t := at.Spec.Template; t != nil {
		podSpec := spec.Child("template", "spec")
		if len(t.Spec.Containers) == 0 {
			errs = append(errs, field.Required(podSpec.Child("containers"), "the first container runs the command"))
		}
		switch t.Spec.RestartPolicy {
		case "", corev1.RestartPolicyNever:
		default:
			errs = append(errs, field.NotSupported(podSpec.Child("restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyNever}))
		}
		metadata := spec.Child("template", "metadata")
		errs = append(errs, cnatKeys(metadata.Child("labels"), t.Labels)...)
		errs = append(errs, cnatKeys(metadata.Child("annotations"), t.Annotations)...)
	}
	return errs
}

// cnatKeys refuses each key of a template's labels or annotations under
// cnatv1beta1.KeyPrefix, naming it: the controller would overwrite it or,
// stamped on the Pod, it would claim the Pod for another At or release it.
func cnatKeys(path *field.Path, keys map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if strings.HasPrefix(k, cnatv1beta1.KeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k), "keys under "+cnatv1beta1.KeyPrefix+" are the claims and records cnat puts on the Pods it creates"))
		}
	}
	return errs
}

// validateImmutableOnceFired repeats the CEL rule for the fields that define
// the run of an At that has fired, in the same words, and also knows a run
// the status does not record yet (fired).
func validateImmutableOnceFired(old, at *cnatv1beta1.At) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	forbid := func(name string, changed bool) {
		if changed {
			errs = append(errs, field.Forbidden(spec.Child(name), fmt.Sprintf("spec.%s cannot change once the At has fired", name)))
		}
	}
	forbid("schedule", old.Spec.Schedule != at.Spec.Schedule)
	forbid("timeZone", ptr.Deref(old.Spec.TimeZone, "") != ptr.Deref(at.Spec.TimeZone, ""))
	forbid("command", old.Spec.Command != at.Spec.Command)
	forbid("template", !apiequality.Semantic.DeepEqual(old.Spec.Template, at.Spec.Template))
	return errs
}

func invalid(at *cnatv1beta1.At, errs field.ErrorList) error {
	return apierrors.NewInvalid(cnatv1beta1.GroupVersion.WithKind("At").GroupKind(), at.Name, errs)
}
