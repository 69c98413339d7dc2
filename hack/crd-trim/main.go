// Command crd-trim removes the descriptions that Kubernetes' own types bring
// into a generated CRD, keeping cnat's.
//
// An At embeds a full PodTemplateSpec, in each of its two versions. With
// every description of PodSpec the CRD is about 650 kB of JSON, far more
// than the 256 KiB annotation in which client-side `kubectl apply` keeps the
// last applied object, so `kubectl apply -k` would refuse it; trimmed, it is
// about 150 kB. The template's own description stays and points to
// `kubectl explain pod.spec`, where those fields are documented.
//
// Usage: crd-trim FILE...  (rewrites each CRD file in place)
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// embeddedFields are the schema paths, below the openAPIV3Schema of every
// version, whose nested descriptions are Kubernetes' rather than cnat's.
var embeddedFields = [][]string{
	{"spec", "template"},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crd-trim FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := trimFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crd-trim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return fmt.Errorf("reading CRD: %w", err)
	}
	for i := range crd.Spec.Versions {
		schema := crd.Spec.Versions[i].Schema
		if schema == nil || schema.OpenAPIV3Schema == nil {
			continue
		}
		for _, fieldPath := range embeddedFields {
			*schema.OpenAPIV3Schema = trimBelow(*schema.OpenAPIV3Schema, fieldPath)
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd)
	if err != nil {
		return err
	}
	delete(obj, "status") // the server's to write, as controller-gen leaves it
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// trimBelow follows properties along path and strips the descriptions nested
// inside the schema found there, keeping that schema's own.
func trimBelow(s apiextensionsv1.JSONSchemaProps, path []string) apiextensionsv1.JSONSchemaProps {
	if len(path) == 0 {
		return stripChildren(s)
	}
	if child, ok := s.Properties[path[0]]; ok {
		s.Properties[path[0]] = trimBelow(child, path[1:])
	}
	return s
}

// stripChildren removes every description below s.
func stripChildren(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	for name, child := range s.Properties {
		s.Properties[name] = strip(child)
	}
	if s.Items != nil && s.Items.Schema != nil {
		stripped := strip(*s.Items.Schema)
		s.Items.Schema = &stripped
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		stripped := strip(*s.AdditionalProperties.Schema)
		s.AdditionalProperties.Schema = &stripped
	}
	return s
}

// strip removes the description of s and of everything below it.
func strip(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s.Description = ""
	return stripChildren(s)
}
