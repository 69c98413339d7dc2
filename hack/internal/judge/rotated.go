package judge

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ReadAuditFiles reads the audit log at path together with the files the
// API server rotated it into, and fails unless they reach back to the run's
// start. kube-apiserver rotates its log at 100 MB (--audit-log-maxsize) into
// NAME-<UTC time>.EXT beside it; a run that spans a rotation has its first
// Pods in the rotated file, and judged from audit.log alone it would show
// them lost. Rotated files last written before since end before the run and
// are not read. The run's start is the create of its namespace
// (Record.Began), which hack/kwok/audit-policy.yaml records.
func ReadAuditFiles(path string, since time.Time, inNamespace func(string) bool) (Record, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return Record{}, err
	}
	// The time in the names sorts them oldest first.
	slices.Sort(rotated)
	var readers []io.Reader
	for _, name := range append(rotated, path) {
		if name != path {
			info, err := os.Stat(name)
			if err != nil {
				return Record{}, err
			}
			// A second of slack for the file system's timestamps.
			if info.ModTime().Before(since.Add(-time.Second)) {
				continue
			}
		}
		f, err := os.Open(name)
		if err != nil {
			return Record{}, err
		}
		defer func() { _ = f.Close() }()
		readers = append(readers, f)
	}
	rec, err := ReadAudit(io.MultiReader(readers...), inNamespace)
	if err != nil {
		return Record{}, err
	}
	if !rec.Began {
		return Record{}, fmt.Errorf("the audit log (%s and %d rotated files after the run began) does not hold the create of the run's namespace: "+
			"a rotated file is missing, or the cluster was created with an older hack/kwok/audit-policy.yaml (make cluster-down cluster)", path, len(readers)-1)
	}
	return rec, nil
}
