// Command cert-manager runs, in one process on the host, the parts of
// cert-manager v1.21.2 that kustomize/overlays/production needs on the local
// cluster: the controllers that make a self-signed Issuer ready and issue a
// Certificate into its Secret, and the cainjector that copies the
// Certificate's CA into the CRD's conversion webhook and the webhook
// configurations annotated cert-manager.io/inject-ca-from.
//
// The controllers and the injector are cert-manager's own packages at the
// pinned version (go.mod); only this wiring is ours. cert-manager's commands
// (cmd/controller, cmd/cainjector) are modules of their own that the Go
// module proxy does not serve, so they cannot be built from a pin; what
// they add around these packages — option parsing, leader election, metrics
// and health servers, the ACME, CA, Vault and Venafi issuers, the
// Ingress/Gateway shims — the local cluster does not use. cert-manager's own
// webhook (defaulting and validation of its resources) is not run: the
// Issuer and Certificate of the overlay are valid as written, and the CRDs'
// schemas still apply.
//
// Usage: cert-manager --kubeconfig FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The self-signed issuer, which the issuers controller looks up by the
	// Issuer's spec.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are the control loops a self-signed Certificate goes through,
// by the names they register under.
var controllers = []string{
	issuers.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	// A flag set of its own: controller-runtime defines --kubeconfig on the
	// global one.
	flags := flag.NewFlagSet("cert-manager", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	klog.InitFlags(flags)
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" || flags.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: cert-manager --kubeconfig FILE")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log)
	ctrl.SetLogger(logf.Log)

	errs := make(chan error, 2)
	go func() { errs <- runControllers(ctx, *kubeconfig) }()
	go func() { errs <- runCAInjector(ctx, *kubeconfig) }()
	if err := <-errs; err != nil {
		klog.ErrorS(err, "cert-manager stopped")
		os.Exit(1)
	}
}

// runControllers starts cert-manager's control loops as its controller
// command does: each constructed from one ContextFactory (which registers
// its informers), then the shared informers started, then the loops run.
func runControllers(ctx context.Context, kubeconfig string) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: "cert-manager"},
	})
	if err != nil {
		return err
	}
	known := controller.Known()
	loops := make(map[string]controller.Interface, len(controllers))
	for _, name := range controllers {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		loops[name] = loop
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	errs := make(chan error, len(loops))
	for name, loop := range loops {
		wg.Go(func() {
			if err := loop.Run(5, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", name, err)
			}
		})
	}
	klog.InfoS("cert-manager controllers started", "controllers", controllers)
	wg.Wait()
	close(errs)
	return <-errs
}

// runCAInjector runs the cainjector's reconcilers for CRDs and webhook
// configurations, with Certificates as a source of CAs, as cmd/cainjector
// configures its manager (Secrets read directly, not cached).
func runCAInjector(ctx context.Context, kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.UserAgent = "cert-manager-cainjector"
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  scheme,
		Cache:   cache.Options{ReaderFailOnMissingInformer: true},
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return err
	}
	klog.InfoS("cert-manager cainjector started")
	return mgr.Start(ctx)
}
