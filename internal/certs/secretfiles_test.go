package certs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(data)
	}
	return got
}

func TestSecretFilesFollowTheSecret(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "cnat-system", Name: "cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := filepath.Join(t.TempDir(), "certs")
	s := &SecretFiles{Reader: c, Secret: key, Dir: dir}

	if wrote, err := s.sync(ctx); err != nil || wrote {
		t.Fatalf("empty Secret: wrote=%v err=%v, want nothing written", wrote, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("empty Secret: %s exists", dir)
	}

	secret.Data = map[string][]byte{"tls.crt": []byte("cert 1"), "tls.key": []byte("key 1"), "../escape": []byte("x")}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := s.sync(ctx); err != nil || !wrote {
		t.Fatalf("filled Secret: wrote=%v err=%v", wrote, err)
	}
	want := map[string]string{"tls.crt": "cert 1", "tls.key": "key 1"}
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	// A rotation rewrites the files.
	secret.Data = map[string][]byte{"tls.crt": []byte("cert 2"), "tls.key": []byte("key 2")}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sync(ctx); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"tls.crt": "cert 2", "tls.key": "key 2"}
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("files after rotation (-want +got):\n%s", diff)
	}
}

func TestSecretFilesWithoutSecret(t *testing.T) {
	s := &SecretFiles{Reader: fake.NewClientBuilder().Build(), Secret: types.NamespacedName{Namespace: "x", Name: "y"}, Dir: t.TempDir()}
	if wrote, err := s.sync(context.Background()); err != nil || wrote {
		t.Fatalf("missing Secret: wrote=%v err=%v, want nothing and no error", wrote, err)
	}
}
