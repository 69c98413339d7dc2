package manifests

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa/utils"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Label and annotation keys of the ApplySet specification (KEP-3659), the
// same that kubectl's implementation (k8s.io/kubectl/pkg/cmd/apply) uses.
const (
	// LabelApplySetID marks the parent object and holds the set's id.
	LabelApplySetID = "applyset.kubernetes.io/id"
	// LabelApplySetPartOf marks every member with the id of its set.
	LabelApplySetPartOf = "applyset.kubernetes.io/part-of"
	// AnnotationApplySetTooling names the tool that manages the set, as <name>/<version>.
	AnnotationApplySetTooling = "applyset.kubernetes.io/tooling"
	// AnnotationApplySetGroupKinds lists the members' kinds, sorted Kind.group.
	AnnotationApplySetGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	// AnnotationApplySetAdditionalNamespaces lists the members' other namespaces.
	AnnotationApplySetAdditionalNamespaces = "applyset.kubernetes.io/additional-namespaces"
)

const (
	// ToolingName is cnatctl's name in the tooling annotation.
	ToolingName = "cnatctl"
	// ParentNamePrefix starts the name of every cnatctl ApplySet parent.
	ParentNamePrefix = "applyset-cnat-"
	// DefaultInventoryNamespace is where parents live unless told otherwise:
	// it exists in every cluster and is no set's member, so it is never pruned.
	DefaultInventoryNamespace = "default"
)

// ApplySetID returns the id of the ApplySet whose parent is the object
// name/namespace of the given kind and group, as KEP-3659 defines it.
func ApplySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, kind, group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

var notInName = regexp.MustCompile(`[^a-z0-9.-]`)

// SetNameFromDir derives a set name from an overlay directory's base name
// (kustomize/overlays/local gives "local").
func SetNameFromDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return strings.Trim(notInName.ReplaceAllString(strings.ToLower(filepath.Base(dir)), "-"), "-.")
}

// ApplySet is one named set of objects that cnatctl applies and prunes
// together, tracked by a parent Secret named applyset-cnat-<name>.
type ApplySet struct {
	// ParentName and Namespace name the parent Secret.
	ParentName, Namespace string
	// ID is the parent's id label and every member's part-of label.
	ID string
	// Tooling is the value of the tooling annotation: cnatctl/<version>.
	Tooling string
	// Source names the overlay the objects come from (empty: not checked).
	Source string
}

// NewApplySet returns the set called name whose parent Secret lives in namespace.
func NewApplySet(name, namespace, version string) (*ApplySet, error) {
	if name == "" {
		return nil, errors.New("the set needs a name (--name)")
	}
	namespace = cmp.Or(namespace, DefaultInventoryNamespace)
	parent := ParentNamePrefix + name
	if errs := validation.IsDNS1123Subdomain(parent); len(errs) > 0 {
		return nil, fmt.Errorf("set name %q gives the parent Secret name %q, which is not valid: %s", name, parent, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("inventory namespace %q is not valid: %s", namespace, strings.Join(errs, "; "))
	}
	return &ApplySet{ParentName: parent, Namespace: namespace, ID: ApplySetID(parent, namespace, "Secret", ""), Tooling: ToolingName + "/" + cmp.Or(version, "v0.0.0")}, nil
}

// ParentRef names the parent as cnatctl prints objects.
func (s *ApplySet) ParentRef() string {
	return "Secret/" + s.Namespace + "/" + s.ParentName
}

// inventory is what a parent records: the members' kinds and namespaces,
// and the overlay the set was applied from.
type inventory struct {
	groupKinds, namespaces sets.Set[string]
	source                 string
}

// union records the kinds and namespaces of both, and the source of other.
func (inv *inventory) union(other *inventory) *inventory {
	return &inventory{inv.groupKinds.Union(other.groupKinds), inv.namespaces.Union(other.namespaces), other.source}
}

// inventoryOf records the kinds and namespaces of prepared objects, and the
// set's source.
func (s *ApplySet) inventoryOf(objects []*unstructured.Unstructured) *inventory {
	inv := &inventory{sets.New[string](), sets.New(s.Namespace), s.Source}
	for _, o := range objects {
		inv.groupKinds.Insert(o.GroupVersionKind().GroupKind().String())
		if ns := o.GetNamespace(); ns != "" {
			inv.namespaces.Insert(ns)
		}
	}
	return inv
}

// read returns what the parent records (empty without a parent); another
// tool's parent, or one whose id does not match, is an error.
func (s *ApplySet) read(ctx context.Context, c client.Reader) (*inventory, error) {
	parent := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.ParentName}, parent)
	inv := s.inventoryOf(nil)
	inv.source = ""
	switch {
	case apierrors.IsNotFound(err):
		return inv, nil
	case err != nil:
		return nil, fmt.Errorf("reading ApplySet parent %s: %w", s.ParentRef(), err)
	}
	tooling, ok := parent.Annotations[AnnotationApplySetTooling]
	if !ok {
		return nil, fmt.Errorf("ApplySet parent %s exists but has no %s annotation: it is not an ApplySet parent; choose another --name", s.ParentRef(), AnnotationApplySetTooling)
	}
	if base, _, _ := strings.Cut(tooling, "/"); base != ToolingName {
		return nil, fmt.Errorf("ApplySet parent %s is managed by %q, not %s: choose another --name", s.ParentRef(), base, ToolingName)
	}
	if id := parent.Labels[LabelApplySetID]; id != s.ID {
		return nil, fmt.Errorf("ApplySet parent %s has label %s=%q, want %q", s.ParentRef(), LabelApplySetID, id, s.ID)
	}
	for item := range strings.SplitSeq(parent.Annotations[AnnotationApplySetGroupKinds], ",") {
		if item = strings.TrimSpace(item); item != "" {
			// In the form inventoryOf writes, however another tool wrote it.
			inv.groupKinds.Insert(schema.ParseGroupKind(item).String())
		}
	}
	for item := range strings.SplitSeq(parent.Annotations[AnnotationApplySetAdditionalNamespaces], ",") {
		if item = strings.TrimSpace(item); item != "" {
			inv.namespaces.Insert(item)
		}
	}
	inv.source = parent.Annotations[AnnotationSource]
	return inv, nil
}

// write records inv on the parent by server-side apply as cnatctl.
func (s *ApplySet) write(ctx context.Context, c client.Client, inv *inventory) error {
	annotations := map[string]string{
		AnnotationApplySetTooling:              s.Tooling,
		AnnotationApplySetGroupKinds:           strings.Join(sets.List(inv.groupKinds), ","),
		AnnotationApplySetAdditionalNamespaces: strings.Join(sets.List(inv.namespaces.Clone().Delete(s.Namespace)), ","),
	}
	if inv.source != "" {
		annotations[AnnotationSource] = inv.source
	}
	parent := corev1ac.Secret(s.ParentName, s.Namespace).
		WithLabels(map[string]string{LabelApplySetID: s.ID}).
		WithAnnotations(annotations)
	if err := c.Apply(ctx, parent, client.FieldOwner(cnatv1beta1.CLIFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing ApplySet parent %s: %w", s.ParentRef(), err)
	}
	return nil
}

// label sets the part-of label on every object; one that names another set
// is an error, as in kubectl.
func (s *ApplySet) label(objects []*unstructured.Unstructured) Problems {
	var problems Problems
	for _, o := range objects {
		if v, ok := o.GetLabels()[LabelApplySetPartOf]; ok && v != s.ID {
			problems = append(problems, Problem{Ref(o), fmt.Errorf("its manifest sets label %s=%s, which is not this set (%s)", LabelApplySetPartOf, v, s.ID)})
		}
	}
	utils.SetCommonMetadata(objects, map[string]string{LabelApplySetPartOf: s.ID}, nil)
	return problems
}
