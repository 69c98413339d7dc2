package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installPodClaims creates cnat's Pod-claim policy and its binding
// (kustomize/base/policy/pod_claims.yaml) on the API server of c: with
// -apiserver-policy, -apiserver-cost then says what the policy costs the
// Pods that are not cnat's, whose writes it must let through at its first
// match condition.
func installPodClaims(ctx context.Context, c client.Client, root string) error {
	raw, err := os.ReadFile(filepath.Join(root, "kustomize", "base", "policy", "pod_claims.yaml"))
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading the Pod-claim policy: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}
