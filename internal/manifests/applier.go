package manifests

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// SkipAnnotation, set to SkipValue on an object in the overlay or the
// cluster, makes cnatctl leave it alone (ssa's exclusion selector).
const (
	SkipAnnotation = "cnatctl.cnat.programming-kubernetes.info/reconcile"
	SkipValue      = "disabled"
)

var skip = map[string]string{SkipAnnotation: SkipValue}

// takeover is what ssa cleans up before it applies: kubectl's managers'
// fields move to cnatctl and the last-applied annotation goes, so no stale
// owner keeps alive a field the overlay no longer sets.
var takeover = ssa.ApplyCleanupOptions{
	Annotations: []string{corev1.LastAppliedConfigAnnotation},
	FieldManagers: []ssa.FieldManager{
		{Name: "kubectl-client-side-apply", ExactMatch: true, OperationType: metav1.ManagedFieldsOperationUpdate},
		{Name: "kubectl", ExactMatch: true, OperationType: metav1.ManagedFieldsOperationUpdate},
		{Name: "kubectl", ExactMatch: true, OperationType: metav1.ManagedFieldsOperationApply},
		{Name: "before-first-apply", ExactMatch: true, OperationType: metav1.ManagedFieldsOperationUpdate},
	},
}

// Options configure an Applier.
type Options struct {
	// DefaultNamespace is given to namespaced objects that have none. Default: "default".
	DefaultNamespace string
	// Set is the ApplySet the objects belong to. Required.
	Set *ApplySet
	// Out receives one line per object and progress lines. Default: discard.
	Out io.Writer
	// ProgressInterval is how often a wait reports. Default: 10s.
	ProgressInterval time.Duration
	// PollInterval is how often a wait polls the cluster. Default: 2s.
	PollInterval time.Duration
}

// Applier applies, diffs and prunes sets of objects on one cluster.
type Applier struct {
	client    client.Client
	discovery discovery.ServerVersionInterface
	mapper    meta.RESTMapper
	rm        *ssa.ResourceManager
	// opts are the Options given, with the defaults filled in.
	opts Options
}

// NewApplier connects to the cluster of cfg.
func NewApplier(cfg *rest.Config, opts Options) (*Applier, error) {
	if opts.Set == nil {
		return nil, errors.New("an Applier needs an ApplySet")
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovering the cluster's API: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	opts.DefaultNamespace = cmp.Or(opts.DefaultNamespace, corev1.NamespaceDefault)
	opts.Out = cmp.Or[io.Writer](opts.Out, io.Discard)
	opts.ProgressInterval = cmp.Or(max(opts.ProgressInterval, 0), 10*time.Second)
	opts.PollInterval = cmp.Or(max(opts.PollInterval, 0), 2*time.Second)
	poller := polling.NewStatusPoller(c, mapper, polling.Options{})
	rm := ssa.NewResourceManager(c, poller, ssa.Owner{Field: cnatv1beta1.CLIFieldManager, Group: "cnat.programming-kubernetes.info"})
	return &Applier{client: c, discovery: dc, mapper: mapper, rm: rm, opts: opts}, nil
}

// prepare returns copies of objects ready to be sent, in ssa's order, with
// their namespace (a kind the cluster does not serve yet scoped by a CRD of
// the set) and the part-of label, and what they define (definedBy).
func (a *Applier) prepare(objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, defined, error) {
	def := definedBy(objects)
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, o := range objects {
		o = o.DeepCopy()
		gvk := o.GroupVersionKind()
		namespaced, known := false, false
		if m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced, known = m.Scope.Name() == meta.RESTScopeNameNamespace, true
		} else if scope, ok := def.scopes[gvk.GroupKind()]; ok {
			namespaced, known = scope == apiextensionsv1.NamespaceScoped, true
		} else if !meta.IsNoMatchError(err) {
			return nil, def, fmt.Errorf("looking up the kind of %s: %w", Ref(o), err)
		}
		switch {
		case known && namespaced && o.GetNamespace() == "":
			o.SetNamespace(a.opts.DefaultNamespace)
		case known && !namespaced:
			o.SetNamespace("")
		}
		out = append(out, o)
	}
	if problems := a.opts.Set.label(out); len(problems) > 0 {
		return nil, def, problems
	}
	sort.Sort(ssa.SortableUnstructureds(out))
	return out, def, nil
}

// defined is what a set's objects define for the others: kinds (with their
// scope) and Namespaces.
type defined struct {
	scopes     map[schema.GroupKind]apiextensionsv1.ResourceScope
	namespaces sets.Set[string]
}

// definedBy returns what objects define for the others.
func definedBy(objects []*unstructured.Unstructured) defined {
	scopes, namespaces := map[schema.GroupKind]apiextensionsv1.ResourceScope{}, sets.New[string]()
	for _, o := range objects {
		switch {
		case utils.IsCRD(o):
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			scopes[schema.GroupKind{Group: group, Kind: kind}] = apiextensionsv1.ResourceScope(scope)
		case utils.IsNamespace(o):
			namespaces.Insert(o.GetName())
		}
	}
	return defined{scopes: scopes, namespaces: namespaces}
}
