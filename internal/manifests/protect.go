package manifests

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa/utils"
)

// holdsData says whether deleting o deletes what no manifest holds (a CRD, a
// Namespace, a PersistentVolumeClaim): only with --delete-data.
func holdsData(o *unstructured.Unstructured) bool {
	gk := o.GroupVersionKind().GroupKind()
	return utils.IsCRD(o) || utils.IsNamespace(o) || gk == schema.GroupKind{Kind: "PersistentVolumeClaim"}
}

// dataLoss says what deleting o takes with it (a CRD: its resources counted).
func (a *Applier) dataLoss(ctx context.Context, o *unstructured.Unstructured) string {
	switch {
	case utils.IsNamespace(o):
		return "every object in the Namespace"
	case !utils.IsCRD(o):
		return "its volume (as its reclaim policy says)"
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(o.GroupVersionKind())
	if err := a.client.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
		return "every custom resource it defines (they could not be counted: " + err.Error() + ")"
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if served, _ := v["served"].(bool); !served {
			continue
		}
		name, _ := v["name"].(string)
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: name, Kind: kind + "List"})
		if err := a.client.List(ctx, list); err != nil {
			return fmt.Sprintf("every %s in the cluster (they could not be counted: %v)", kind, err)
		}
		return fmt.Sprintf("every %s in the cluster: %s", kind, countOf(len(list.Items), kind))
	}
	return "every " + kind + " in the cluster"
}

// refuseDataLoss returns a problem for each doomed object that holdsData,
// unless deleteData.
func (a *Applier) refuseDataLoss(ctx context.Context, doomed []*unstructured.Unstructured, how string, deleteData bool) Problems {
	if deleteData {
		return nil
	}
	var problems Problems
	for _, o := range doomed {
		if holdsData(o) && !utils.AnyInMetadata(o, skip) {
			problems = append(problems, Problem{Ref(o), fmt.Errorf("%s would delete it, and with it %s; cnatctl deletes CustomResourceDefinitions, Namespaces and PersistentVolumeClaims only with --delete-data", how, a.dataLoss(ctx, o))})
		}
	}
	return problems
}
