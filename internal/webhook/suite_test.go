package webhook

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/controller"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// The suite runs a real kube-apiserver and etcd (bin/, make tools) with the
// CRD from kustomize/base/crd and the webhook configurations from
// kustomize/base/webhook, pointed by envtest at a webhook server in this
// process, and the real controller beside it: what a user sees is what the
// API server answers.

const testDefaultImage = "busybox:1.37"

var (
	testEnv    *envtest.Environment
	testScheme = runtime.NewScheme()
	// adminClient acts as a cluster administrator.
	adminClient client.Client
)

func TestMain(m *testing.M) {
	flag.Parse()
	if fuzzing() {
		// The fuzz targets test pure functions: no API server for the
		// fuzzing engine and each of its workers.
		os.Exit(m.Run())
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cnatv1beta1.AddToScheme, cnatv1alpha1.AddToScheme} {
		if err := add(testScheme); err != nil {
			panic(err)
		}
	}
	repo := filepath.Join("..", "..")
	testEnv = &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(repo, "kustomize", "base", "crd", "bases")},
			ErrorIfPathMissing: true,
			Scheme:             testScheme,
		},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(repo, "kustomize", "base", "webhook", "manifests.yaml")},
		},
		BinaryAssetsDirectory: testenv.BinaryAssetsDirectory(),
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (binaries from %s; run make tools): %v\n", testEnv.BinaryAssetsDirectory, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped, err := startManager(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the manager: %v\n", err)
		os.Exit(1)
	}
	if adminClient, err = client.New(cfg, client.Options{Scheme: testScheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	cancel()
	<-stopped
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
	os.Exit(code)
}

// startManager runs the webhooks and the controller as cnat-controller does,
// and waits until the webhook server answers. The channel it returns is
// closed once the manager stopped.
func startManager(ctx context.Context, cfg *rest.Config) (<-chan struct{}, error) {
	opts := testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  testScheme,
		Cache:   controller.CacheOptions(),
		Client:  controller.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	if err != nil {
		return nil, err
	}
	pods := atpod.PodOptions{DefaultImage: testDefaultImage}
	if err := Setup(mgr, Options{Pods: pods, PodCreateGuard: true}); err != nil {
		return nil, err
	}
	r := &controller.AtReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clock.RealClock{},
		Recorder:  mgr.GetEventRecorder(cnatv1beta1.FieldManager),
		Pods:      pods,
		// As cnat-controller: --pod-create-guard on.
		PodCreateGuard: true,
	}
	if err := r.SetupWithManager(mgr, 2); err != nil {
		return nil, err
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped: %v\n", err)
		}
	}()
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe of the local test server
		if err == nil {
			return stopped, conn.Close()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("webhook server at %s did not come up: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fuzzing reports whether the test binary runs a fuzz target with the
// fuzzing engine (go test -fuzz), as its coordinator or as a worker.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

func zapLevel() zapcore.Level {
	if os.Getenv("CNAT_TEST_DEBUG") != "" {
		return -1
	}
	return 1
}
