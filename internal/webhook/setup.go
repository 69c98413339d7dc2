package webhook

import (
	ctrl "sigs.k8s.io/controller-runtime"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// Options configure the At webhooks.
type Options struct {
	// Pods are the controller's Pod settings: the defaulter fills the default
	// image in, the validator renders Pods with them.
	Pods apply.PodOptions
	// PodCreateGuard refuses an At from a user who may not create Pods in
	// its namespace.
	PodCreateGuard bool
}

// Setup registers the defaulting, validating and conversion webhooks of the
// At kind with the manager's webhook server.
func Setup(mgr ctrl.Manager, o Options) error {
	return ctrl.NewWebhookManagedBy(mgr, &cnatv1beta1.At{}).
		WithDefaulter(&AtDefaulter{DefaultImage: o.Pods.DefaultImage}).
		WithValidator(&AtValidator{Client: mgr.GetClient(), Pods: o.Pods, PodCreateGuard: o.PodCreateGuard}).
		Complete()
}
