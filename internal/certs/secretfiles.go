// Package certs keeps the webhook server's certificate files current when
// the controller runs outside the cluster.
package certs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretFiles writes the keys of a Secret into a directory and rewrites them
// when it changes, as a Secret volume does for a Pod: the webhook certificate
// of a controller run on the host.
type SecretFiles struct {
	// Reader reads the Secret from the API server.
	Reader client.Reader
	// Secret is the Secret to copy.
	Secret types.NamespacedName
	// Dir is where its keys are written, one file per key.
	Dir string
	// Interval is how often the Secret is read again.
	Interval time.Duration
}

// Start copies the Secret until ctx is done: every second until the files
// are first written, then every Interval.
func (s *SecretFiles) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("secret-files").WithValues("secret", s.Secret, "dir", s.Dir)
	written := false
	for {
		wrote, err := s.sync(ctx)
		if err != nil {
			log.Error(err, "Copying the Secret into files failed")
		}
		written = written || wrote
		wait := s.Interval
		if !written {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// NeedLeaderElection is false: every replica serves webhooks.
func (s *SecretFiles) NeedLeaderElection() bool { return false }

// sync writes each key of the Secret whose file is missing or different,
// and reports whether the Secret had any data.
func (s *SecretFiles) sync(ctx context.Context) (bool, error) {
	var secret corev1.Secret
	if err := s.Reader.Get(ctx, s.Secret, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil // not created yet
		}
		return false, fmt.Errorf("reading Secret %s: %w", s.Secret, err)
	}
	if len(secret.Data) == 0 {
		return false, nil // not filled yet
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return false, err
	}
	for key, data := range secret.Data {
		if len(data) == 0 || filepath.Base(key) != key {
			continue
		}
		path := filepath.Join(s.Dir, key)
		if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, data) {
			continue
		}
		if err := writeAtomically(path, data); err != nil {
			return false, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return true, nil
}

// writeAtomically replaces path with data so that a reader never sees a
// half-written certificate.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	// After a successful rename there is nothing left to remove.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
