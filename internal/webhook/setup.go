package webhook

import (
	"context"
	"encoding/json"

	utilcache "k8s.io/apimachinery/pkg/util/cache"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// DefaultingPath is the path of the defaulting webhook (see the marker on
// AtDefaulter).
const DefaultingPath = "/mutate-cnat-programming-kubernetes-info-v1beta1-at"

// Options configure the At webhooks.
type Options struct {
	// Pods are the controller's Pod settings.
	Pods atpod.PodOptions
	// PodCreateGuard refuses an At from a user who may not create Pods in
	// its namespace.
	PodCreateGuard bool
}

// Setup registers the defaulting, validating and conversion webhooks of the
// At kind. The defaulter is registered by hand so that an At that does not
// decode passes unchanged, and the CRD's schema refuses it naming the field.
func Setup(mgr ctrl.Manager, o Options) error {
	defaulter := &AtDefaulter{DefaultImage: o.Pods.DefaultImage}
	defaulting := recordAuthor{defaulter: defaulter, next: admission.WithDefaulter(mgr.GetScheme(), defaulter)}
	mgr.GetWebhookServer().Register(DefaultingPath, &webhook.Admission{Handler: skipUndecodable{defaulting}})
	mgr.GetWebhookServer().Register(ConversionPath, conversionHandler{})
	return ctrl.NewWebhookManagedBy(mgr, &cnatv1beta1.At{}).
		WithValidator(&AtValidator{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Pods: o.Pods, PodCreateGuard: o.PodCreateGuard, PodCreateDecisions: utilcache.NewLRUExpireCache(RecentAnswers), DryRunVerdicts: utilcache.NewLRUExpireCache(RecentAnswers)}).
		Complete()
}

// skipUndecodable admits, unchanged, a request whose object does not decode
// as an At, and hands every other request to the next handler.
type skipUndecodable struct{ next admission.Handler }

func (h skipUndecodable) Handle(ctx context.Context, req admission.Request) admission.Response {
	if len(req.Object.Raw) > 0 {
		if err := json.Unmarshal(req.Object.Raw, &cnatv1beta1.At{}); err != nil {
			return admission.Allowed("not decodable as an At; the CRD's schema refuses it with the field named")
		}
	}
	return h.next.Handle(ctx, req)
}
