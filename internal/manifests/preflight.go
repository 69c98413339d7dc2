package manifests

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa/utils"
)

// objectPlan is what the dry-run found out about one object.
type objectPlan struct {
	obj *unstructured.Unstructured
	// live is the object in the cluster, nil if there is none.
	live *unstructured.Unstructured
	// deferred says why the object could not be dry-run before its
	// CustomResourceDefinition or Namespace, applied in the same run,
	// exists; empty if it was dry-run.
	deferred string
	// immutable lists the immutable fields the object changes; the object
	// can only be applied by deleting and recreating it.
	immutable []string
	// skipped is set for objects annotated SkipAnnotation=SkipValue.
	skipped bool
}

// preflight dry-runs every object by server-side apply, exactly as Apply
// would send it, and collects every failure. Objects that need a CRD or a
// Namespace that the set itself creates are deferred (they are dry-run
// again once those exist). Changes to immutable fields are failures unless
// force is set. It returns the plans of all objects, in order, and the
// problems.
func (a *Applier) preflight(ctx context.Context, objects []*unstructured.Unstructured, force bool) ([]*objectPlan, Problems) {
	crds := crdScopes(objects)
	namespaces := namespacesIn(objects)
	var plans []*objectPlan
	var problems Problems
	for _, o := range objects {
		p := &objectPlan{obj: o}
		plans = append(plans, p)
		gk := o.GroupVersionKind().GroupKind()

		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := a.client.Get(ctx, client.ObjectKeyFromObject(o), live)
		switch {
		case err == nil:
			p.live = live
		case meta.IsNoMatchError(err):
			if _, ok := crds[gk]; ok {
				p.deferred = "its CustomResourceDefinition is applied in this run"
				continue
			}
			problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("the cluster does not serve %s %s, and no CustomResourceDefinition in this set defines it", o.GetAPIVersion(), o.GetKind())})
			continue
		case apierrors.IsNotFound(err):
		default:
			problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("reading it from the cluster: %w", err)})
			continue
		}

		if utils.AnyInMetadata(o, skipSelector()) || (p.live != nil && utils.AnyInMetadata(p.live, skipSelector())) {
			p.skipped = true
			continue
		}
		if p.live != nil {
			if owner := p.live.GetLabels()[LabelApplySetPartOf]; owner != "" && owner != a.set.ID {
				problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("it belongs to another ApplySet (label %s=%s); cnatctl does not take objects from another set", LabelApplySetPartOf, owner)})
				continue
			}
		}

		err = a.dryRun(ctx, o)
		switch {
		case err == nil:
		case p.live == nil && apierrors.IsNotFound(err) && namespaces[o.GetNamespace()]:
			p.deferred = "its Namespace is created in this run"
		case p.live != nil && isImmutableError(err):
			p.immutable = immutableFields(err)
			if !force {
				problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("cannot change immutable field(s) %s; apply --force deletes and recreates it: %w", strings.Join(p.immutable, ", "), err)})
			}
		default:
			problems = append(problems, Problem{Object: Ref(o), Err: dryRunError(err)})
		}
	}
	return plans, problems
}

// dryRunDeferred dry-runs the objects that preflight deferred, now that the
// CRDs and Namespaces they need exist.
func (a *Applier) dryRunDeferred(ctx context.Context, plans []*objectPlan) Problems {
	var problems Problems
	for _, p := range plans {
		if p.deferred == "" {
			continue
		}
		if err := a.dryRun(ctx, p.obj); err != nil {
			problems = append(problems, Problem{Object: Ref(p.obj), Err: dryRunError(err)})
		}
	}
	return problems
}

// dryRun sends o as a server-side dry-run apply, forcing ownership as the
// real apply does. o is not modified.
func (a *Applier) dryRun(ctx context.Context, o *unstructured.Unstructured) error {
	return a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.DryRunAll, client.ForceOwnership, client.FieldOwner(a.manager))
}

func dryRunError(err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the cluster does not serve this kind: %w", err)
	}
	return fmt.Errorf("rejected by the API server (dry-run): %w", err)
}

// The messages by which the API server and CEL rules report a change to an
// immutable field. Unlike ssa's IsImmutableError, a plain Invalid error
// (a wrong value) does not count: --force must never delete an object
// because its new version is merely invalid.
var immutableMessage = regexp.MustCompile(`is immutable|immutable field`)

func isImmutableError(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsBadRequest(err)) && immutableMessage.MatchString(err.Error())
}

// immutableFields names the fields an immutable-field error is about, from
// the causes of the API server's status; the whole message if it has none.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return []string{"(unknown field)"}
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		if immutableMessage.MatchString(c.Message) && c.Field != "" {
			fields = append(fields, c.Field)
		}
	}
	if len(fields) == 0 {
		return []string{"(unknown field)"}
	}
	return fields
}
