// Command cnat-controller runs the cnat controller: it starts each At's Pod
// at the At's time and records how the run went.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"
	_ "time/tzdata" // time zones resolve the same in any image, even one without /usr/share/zoneinfo

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/buildinfo"
	"github.com/programming-kubernetes/cnat/internal/controller"
	"github.com/programming-kubernetes/cnat/internal/metricsauth"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=cnat-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=cnat-system
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// The manager's Lease and Events, the metrics scrapers' reviews; the other
// rules stand beside the code that needs them.

// options are the controller's command-line settings.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	probeAddr               string
	pprofAddr               string
	enableHTTP2             bool
	leaderElect             bool
	leaderElectionNamespace string
	gracefulShutdown        time.Duration
	concurrency             int
	prefetch                time.Duration
	apiQPS                  float64
	apiBurst                int
	pods                    atpod.PodOptions
	webhooks                webhookOptions
	zap                     zap.Options
	version                 bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; \"0\" turns it off.")
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, to callers the API server authenticates and authorizes (get on /metrics).")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address of Go's /debug/pprof endpoints, unauthenticated: for profiling on a trusted host, such as 127.0.0.1:8082 (\"0\": off).")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics and webhook servers (off: it has been the vector of several denial-of-service CVEs).")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader among replicas, so only one acts at a time.")
	flag.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the namespace the controller runs in).")
	flag.DurationVar(&o.gracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "How long to let running reconciles finish on shutdown.")
	flag.IntVar(&o.concurrency, "concurrency", 20, "Ats reconciled at once: Ats due together start together, up to this many in parallel.")
	flag.DurationVar(&o.prefetch, "prefetch", atcache.DefaultPrefetch, "How long before an At is due it is read whole and kept in memory; until then the controller keeps only its name, version, phase and due time.")
	flag.Float64Var(&o.apiQPS, "kube-api-qps", -1, "Client-side limit on requests per second to the API server; negative: none, the API server's priority and fairness decides.")
	flag.IntVar(&o.apiBurst, "kube-api-burst", 0, "Burst above --kube-api-qps, when that is positive.")
	flag.StringVar(&o.pods.DefaultImage, "default-image", "busybox:1.37", "Image that runs spec.command when an At names none. It must provide /bin/sh.")
	flag.StringVar((*string)(&o.pods.ImagePullPolicy), "image-pull-policy", "", "Pull policy for containers of At Pods that set none (Always, IfNotPresent, Never; empty: the Kubernetes default).")
	flag.BoolVar(&o.version, "version", false, "Print the version and the commit the controller was built from, and exit.")
	o.webhooks.bindFlags(flag.CommandLine)
	o.zap.Development = false
	o.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	if o.version {
		fmt.Print(buildinfo.Line("cnat-controller"))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	log := ctrl.Log.WithName("setup")
	if err := run(o); err != nil {
		log.Error(err, "Controller stopped")
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.pods.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--image-pull-policy: %q is not one of Always, IfNotPresent, Never", o.pods.ImagePullPolicy)
	}
	if o.pods.DefaultImage == "" {
		return fmt.Errorf("--default-image must not be empty")
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := cnatv1beta1.AddToScheme(scheme); err != nil {
		return err
	}
	// The book's version, for the conversion webhook.
	if err := cnatv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	cfg := ctrl.GetConfigOrDie()
	// controller-runtime's default of 20 requests per second would start
	// 1 000 Ats due together over 50 seconds; the API server protects itself.
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	mgr, err := ctrl.NewManager(cfg, managerOptions(o, scheme))
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := setupChecks(mgr); err != nil {
		return err
	}
	if err := setupControllers(mgr, o); err != nil {
		return err
	}
	if err := setupWebhooks(mgr, o); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("Starting manager", "version", buildinfo.Version(), "commit", buildinfo.Commit())
	return mgr.Start(ctrl.SetupSignalHandler())
}

// managerOptions wires the flags into the manager: a Pod cache that holds
// only cnat's Pods, secured metrics, probes, leader election.
func managerOptions(o options, scheme *runtime.Scheme) ctrl.Options {
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		metricsOpts.FilterProvider = metricsauth.Provider
	}
	return ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "cnat.programming-kubernetes.info",
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.gracefulShutdown,
		Cache:                         controller.CacheOptions(),
		Client:                        controller.ClientOptions(),
		WebhookServer: webhook.NewServer(webhook.Options{
			Port:    o.webhooks.port,
			CertDir: o.webhooks.certDir,
			TLSOpts: tlsOpts,
		}),
	}
}

func setupChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	return nil
}

func setupControllers(mgr ctrl.Manager, o options) error {
	r := &controller.AtReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clock.RealClock{},
		Recorder:  mgr.GetEventRecorder(cnatv1beta1.FieldManager),
		Pods:      o.pods,
		Metrics:   controller.NewMetrics(metrics.Registry),
		Prefetch:  o.prefetch,
		// The guard's second half: the author's right, asked again at run time.
		PodCreateGuard: o.webhooks.podCreateGuard,
	}
	if err := r.SetupWithManager(mgr, o.concurrency); err != nil {
		return fmt.Errorf("setting up the At controller: %w", err)
	}
	return nil
}
