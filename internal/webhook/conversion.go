package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	sigsjson "sigs.k8s.io/json"
)

// ConversionPath is where the API server sends conversion requests (the
// CRD's conversion webhook).
const ConversionPath = "/convert"

// conversionHandler is controller-runtime's conversion webhook with one
// difference: an object that does not decode into its Go type is refused
// naming the field that does not, rather than with the decoder's bare
// message.
//
// Conversion itself cannot fail on an At, but the API server converts a
// v1alpha1 request to v1beta1 for the admission webhooks before it checks
// the request against the schema: a value of the wrong type in a v1alpha1
// request (a resource quantity that does not parse, a string where a number
// belongs) reaches the conversion webhook first, and what it answers is what
// the user reads.
type conversionHandler struct {
	scheme *runtime.Scheme
	next   http.Handler
}

func newConversionHandler(scheme *runtime.Scheme, registry conversion.Registry) http.Handler {
	return conversionHandler{scheme: scheme, next: conversion.NewWebhookHandler(scheme, registry)}
}

func (h conversionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	review := &apix.ConversionReview{}
	if json.Unmarshal(body, review) == nil && review.Request != nil {
		decoder := conversion.NewDecoder(h.scheme)
		for _, obj := range review.Request.Objects {
			if _, _, err := decoder.Decode(obj.Raw); err != nil {
				review.Response = &apix.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{
					Status:  metav1.StatusFailure,
					Message: h.undecodable(obj.Raw, err).Error(),
				}}
				review.Request = nil
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(review)
				return
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.next.ServeHTTP(w, r)
}

// undecodable names the field of raw that does not decode.
func (h conversionHandler) undecodable(raw []byte, err error) *field.Error {
	var typeMeta metav1.TypeMeta
	if json.Unmarshal(raw, &typeMeta) == nil {
		if obj, newErr := h.scheme.New(typeMeta.GroupVersionKind()); newErr == nil {
			var fields map[string]json.RawMessage
			if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &fields) == nil {
				typ := reflect.TypeOf(obj).Elem()
				for _, name := range slices.Sorted(maps.Keys(fields)) {
					if ft, ok := jsonField(typ, name); ok {
						if path := firstUndecodable(fields[name], ft, field.NewPath(name)); path != nil {
							return field.Invalid(path, field.OmitValueType{}, err.Error())
						}
					}
				}
			}
		}
	}
	return field.Invalid(field.NewPath("<object>"), field.OmitValueType{}, err.Error())
}

// firstUndecodable returns the deepest path, from path down, at which raw
// does not decode into typ as the API machinery decodes (case-sensitively),
// or nil when it does. It follows struct fields by their JSON names
// (inlined structs included), list items and map values.
func firstUndecodable(raw []byte, typ reflect.Type, path *field.Path) *field.Path {
	if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(typ).Interface()) == nil {
		return nil
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return path
	}
	switch typ.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &fields) != nil {
			return path
		}
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			if ft, ok := jsonField(typ, name); ok {
				if p := firstUndecodable(fields[name], ft, path.Child(name)); p != nil {
					return p
				}
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &items) != nil {
			return path
		}
		for i, item := range items {
			if p := firstUndecodable(item, typ.Elem(), path.Index(i)); p != nil {
				return p
			}
		}
	case reflect.Map:
		var values map[string]json.RawMessage
		if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &values) != nil {
			return path
		}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if p := firstUndecodable(values[k], typ.Elem(), path.Key(k)); p != nil {
				return p
			}
		}
	}
	return path
}

// jsonField finds the type of the field of struct typ named name in JSON,
// looking into inlined (embedded or ",inline") structs.
func jsonField(typ reflect.Type, name string) (reflect.Type, bool) {
	for f := range typ.Fields() {
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" && (f.Anonymous || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if tag == name || (tag == "" && f.Name == name) {
			return f.Type, true
		}
	}
	return nil, false
}
