// Package cluster is the harness's one way into the cluster: bench, chaos
// and the upgrade judge each connect once, with one scheme that knows cnat's
// Ats in both versions and the CRDs.
package cluster

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// Clients talk to one cluster as one user.
type Clients struct {
	// Config is what they were made from: a client that impersonates
	// another user starts from a copy of it.
	Config *rest.Config
	// Scheme has client-go's types, the At in v1beta1 and v1alpha1, and
	// CustomResourceDefinition.
	Scheme *runtime.Scheme
	// Client reads and writes typed objects, Ats included.
	Client client.Client
	// Kube is client-go's: informers, evictions, discovery.
	Kube kubernetes.Interface
	// Dynamic reads and writes unstructured objects.
	Dynamic dynamic.Interface
}

// Limits are the client side's rate limits: QPS below 0 is none, as when
// the bench measures the API server rather than a token bucket.
type Limits struct {
	QPS   float32
	Burst int
}

// Connect makes the clients for kubeconfig, with userAgent in every request
// and each distinct warning of the API server printed once.
func Connect(kubeconfig, userAgent string, limits Limits) (*Clients, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	return ConnectConfig(config, userAgent, limits)
}

// ConnectConfig makes the clients for config (which it changes), as Connect
// does: for an API server the harness started itself, such as envtest's.
func ConnectConfig(config *rest.Config, userAgent string, limits Limits) (*Clients, error) {
	config.QPS, config.Burst = limits.QPS, limits.Burst
	config.UserAgent = userAgent
	config.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cnatv1beta1.AddToScheme, cnatv1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c := &Clients{Config: config, Scheme: scheme}
	var err error
	if c.Client, err = client.New(config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if c.Kube, err = kubernetes.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, err
	}
	return c, nil
}

// CreateNamespace creates a namespace with labels and waits, at most a
// minute, for its default ServiceAccount, without which no Pod can be
// created.
func CreateNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	var err error
	return poll.Until(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		err = c.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, nil
	}, func() error {
		return fmt.Errorf("namespace %s has no default ServiceAccount after a minute: %w", name, err)
	})
}

// ForEach calls do for 0..n-1 from concurrency goroutines, as the harness
// creates its bursts of objects, and returns the first error; no more work
// is started after it, and the context do is given ends (errgroup's).
func ForEach(parent context.Context, n, concurrency int, do func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(parent)
	g.SetLimit(max(1, concurrency))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(ctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return parent.Err()
}
