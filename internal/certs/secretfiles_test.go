package certs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// readDir is the files in dir by name, with their content.
func readDir(g Gomega, dir string) map[string]string {
	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		got[e.Name()] = string(data)
	}
	return got
}

func TestSecretFilesFollowTheSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "cnat-system", Name: "cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := filepath.Join(t.TempDir(), "certs")
	s := &SecretFiles{Reader: c, Secret: key, Dir: dir}

	g.Expect(s.sync(ctx)).To(BeFalse(), "empty Secret: nothing written")
	g.Expect(dir).NotTo(BeAnExistingFile(), "empty Secret")

	secret.Data = map[string][]byte{"tls.crt": []byte("cert 1"), "tls.key": []byte("key 1"), "../escape": []byte("x")}
	g.Expect(c.Update(ctx, secret)).To(Succeed())
	g.Expect(s.sync(ctx)).To(BeTrue(), "filled Secret: written")
	g.Expect(readDir(g, dir)).To(BeComparableTo(map[string]string{"tls.crt": "cert 1", "tls.key": "key 1"}))

	// A rotation rewrites the files.
	secret.Data = map[string][]byte{"tls.crt": []byte("cert 2"), "tls.key": []byte("key 2")}
	g.Expect(c.Update(ctx, secret)).To(Succeed())
	_, err := s.sync(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readDir(g, dir)).To(BeComparableTo(map[string]string{"tls.crt": "cert 2", "tls.key": "key 2"}), "after rotation")
}

func TestSecretFilesWithoutSecret(t *testing.T) {
	g := NewWithT(t)
	s := &SecretFiles{Reader: fake.NewClientBuilder().Build(), Secret: types.NamespacedName{Namespace: "x", Name: "y"}, Dir: t.TempDir()}
	g.Expect(s.sync(context.Background())).To(BeFalse(), "missing Secret: nothing written, no error")
}
