package author

import (
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

func TestOf(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"read", "write"}}}
	at := func(annotations map[string]string) *cnatv1beta1.At {
		return &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	tests := map[string]struct {
		annotations map[string]string
		want        authenticationv1.UserInfo
		wantOK      bool
		wantErr     string
	}{
		"none":                   {},
		"other annotations only": {annotations: map[string]string{"a": "b"}},
		"alice, whole":           {annotations: map[string]string{cnatv1beta1.AnnotationAuthor: Annotation(alice)}, want: alice, wantOK: true},
		"not JSON":               {annotations: map[string]string{cnatv1beta1.AnnotationAuthor: "alice"}, wantOK: true, wantErr: "is not the JSON of a user"},
		"no username":            {annotations: map[string]string{cnatv1beta1.AnnotationAuthor: `{"groups":["system:masters"]}`}, wantOK: true, wantErr: "names no user"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok, err := Of(at(tt.annotations))
			g.Expect(ok).To(Equal(tt.wantOK))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err).To(MatchError(ContainSubstring("metadata.annotations[" + cnatv1beta1.AnnotationAuthor + "]")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(BeComparableTo(tt.want))
		})
	}
}
