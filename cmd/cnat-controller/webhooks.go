package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/certs"
	cnatwebhook "github.com/programming-kubernetes/cnat/internal/webhook"
)

// Names of the objects the built-in certificate rotation keeps current. They
// match kustomize/base/webhook and kustomize/base/crd.
const (
	mutatingWebhookConfiguration   = "cnat-mutating-webhook-configuration"
	validatingWebhookConfiguration = "cnat-validating-webhook-configuration"
	atCRD                          = "ats.cnat.programming-kubernetes.info"
)

// The certificate rotation watches all (a watch cannot be narrowed to a
// name) and updates only its own; the production overlay removes these rules.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch,namespace=cnat-system
// +kubebuilder:rbac:groups="",resources=secrets,verbs=update,resourceNames=cnat-webhook-server-cert,namespace=cnat-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=update,resourceNames=cnat-mutating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=update,resourceNames=cnat-validating-webhook-configuration
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=update,resourceNames=ats.cnat.programming-kubernetes.info

// webhookOptions are the settings of the admission and conversion webhooks.
type webhookOptions struct {
	enabled        bool
	port           int
	certDir        string
	certRotation   bool
	secret         string
	namespace      string
	dnsName        string
	secretToFiles  bool
	podCreateGuard bool
}

func (w *webhookOptions) bindFlags(fs *flag.FlagSet) {
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		namespace = "cnat-system"
	}
	fs.BoolVar(&w.enabled, "enable-webhooks", true, "Serve the admission and conversion webhooks.")
	fs.IntVar(&w.port, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&w.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the webhook server's tls.crt and tls.key. With --cert-rotation they are written there; without it they must be provided (for example by cert-manager).")
	fs.BoolVar(&w.certRotation, "cert-rotation", true, "Generate and rotate the webhook certificate (kept in --webhook-secret) and inject its CA into the webhook configurations and the CRD's conversion webhook. Turn off when cert-manager provides the certificate.")
	fs.StringVar(&w.secret, "webhook-secret", "cnat-webhook-server-cert", "Secret that holds the generated webhook certificate, in --webhook-secret-namespace.")
	fs.StringVar(&w.namespace, "webhook-secret-namespace", namespace, "Namespace of --webhook-secret (default: $POD_NAMESPACE, else cnat-system).")
	fs.StringVar(&w.dnsName, "webhook-dns-name", "cnat-webhook-service.cnat-system.svc", "DNS name the API server calls the webhooks by, for the generated certificate.")
	fs.BoolVar(&w.secretToFiles, "webhook-cert-from-secret", false, "Copy the rotated certificate from --webhook-secret into --webhook-cert-dir, as a Secret volume would in a Pod: for a controller run outside the cluster.")
	fs.BoolVar(&w.podCreateGuard, "pod-create-guard", true, "The confused-deputy guard: refuse an At from a user who may not create Pods in its namespace, and create an At's Pod only if the user who last set its spec still may.")
}

// setupWebhooks starts the certificate rotation, if on, and registers the
// webhooks once the certificate is in place (the server reads it at start).
func setupWebhooks(mgr ctrl.Manager, o options) error {
	if !o.webhooks.enabled {
		return nil
	}
	certsReady := make(chan struct{})
	if o.webhooks.certRotation {
		err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.webhooks.namespace, Name: o.webhooks.secret},
			CertDir:        o.webhooks.certDir,
			CAName:         "cnat-webhook-ca",
			CAOrganization: "cnat",
			DNSName:        o.webhooks.dnsName,
			IsReady:        certsReady,
			FieldOwner:     cnatv1beta1.FieldManager,
			Webhooks: []rotator.WebhookInfo{
				{Name: mutatingWebhookConfiguration, Type: rotator.Mutating},
				{Name: validatingWebhookConfiguration, Type: rotator.Validating},
				{Name: atCRD, Type: rotator.CRDConversion},
			},
		})
		if err != nil {
			return fmt.Errorf("setting up certificate rotation: %w", err)
		}
		if o.webhooks.secretToFiles {
			err := mgr.Add(&certs.SecretFiles{
				Reader:   mgr.GetAPIReader(),
				Secret:   types.NamespacedName{Namespace: o.webhooks.namespace, Name: o.webhooks.secret},
				Dir:      o.webhooks.certDir,
				Interval: 10 * time.Second,
			})
			if err != nil {
				return fmt.Errorf("setting up the certificate files: %w", err)
			}
		}
	} else {
		close(certsReady)
	}

	if err := mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("the webhook certificate is not ready yet")
		}
	}); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}

	go func() {
		<-certsReady
		if err := cnatwebhook.Setup(mgr, cnatwebhook.Options{Pods: o.pods, PodCreateGuard: o.webhooks.podCreateGuard}); err != nil {
			ctrl.Log.WithName("setup").Error(err, "Setting up the webhooks failed")
			os.Exit(1)
		}
	}()
	return nil
}
