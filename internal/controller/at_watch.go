package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// atListWatch lists and watches every At, as controller-runtime's informers
// do for a typed object; the reflector streams the initial list
// (sendInitialEvents) where the API server supports it.
func atListWatch(mgr manager.Manager) (cache.ListerWatcher, error) {
	gvk := cnatv1beta1.GroupVersion.WithKind("At")
	rc, err := apiutil.RESTClientForGVK(gvk, false, false, mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("making a client for Ats: %w", err)
	}
	params := runtime.NewParameterCodec(mgr.GetScheme())
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &cnatv1beta1.AtList{}
			err := rc.Get().Resource("ats").VersionedParams(&opts, params).Do(ctx).Into(list)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Resource("ats").VersionedParams(&opts, params).Watch(ctx)
		},
	}, nil
}

// storeRunnable runs the store's reflector with the manager, on every
// replica.
type storeRunnable struct {
	store *atStore
	lw    cache.ListerWatcher
}

func (s storeRunnable) Start(ctx context.Context) error { return s.store.start(ctx, s.lw) }

// NeedLeaderElection is false: a replica waiting to lead keeps its store
// current, and takes over without listing every At.
func (s storeRunnable) NeedLeaderElection() bool { return false }

// atSource is the controller's source of At events: the store's.
type atSource struct{ store *atStore }

var _ source.TypedSyncingSource[reconcile.Request] = atSource{}

func (s atSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.store.attach(ctx, queue)
	return nil
}

// WaitForSync returns at once: the controller need not wait for every At
// to be listed (atStore.Transformer), and an At due right after a restart
// beside many others starts on time.
func (s atSource) WaitForSync(context.Context) error { return nil }

func (s atSource) String() string { return "ats" }
