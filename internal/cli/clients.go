package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// restConfig reads the kubeconfig the connection flags point to.
func restConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// namespace is the namespace of --namespace, or else of the kubeconfig's
// current context, or else "default", as in kubectl.
func namespace(flags *genericclioptions.ConfigFlags) (string, error) {
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// atClient returns a client that knows the v1beta1 At, and the namespace to
// work in.
func atClient(flags *genericclioptions.ConfigFlags) (client.Client, string, error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, "", err
	}
	ns, err := namespace(flags)
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := cnatv1beta1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, ns, nil
}

// clientset returns a client-go clientset, for what controller-runtime's
// client does not do (streaming Pod logs).
func clientset(flags *genericclioptions.ConfigFlags) (kubernetes.Interface, error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return cs, nil
}
