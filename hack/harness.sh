#!/usr/bin/env bash
# hack/harness.sh NAME [ARGS...]: runs the harness command hack/NAME (bench,
# chaos, upgrade, release, image-build, crd-trim) with ARGS, as `go run` would,
# in the caller's directory, and exits with its status.
#
# The harness is a Go module of its own (hack/go.mod), so `go run ./hack/NAME`
# from the repository root no longer finds it, and `go -C hack run` would run
# the command in hack/, where its relative paths (.local/kubeconfig,
# bin/cnat-controller, kustomize/overlays/...) mean something else. This
# builds it in its module into a scratch directory and runs it from here.
set -euo pipefail

if [[ $# -lt 1 || "$1" == */* || ! -d "$(dirname "${BASH_SOURCE[0]}")/$1" ]]; then
  echo "usage: hack/harness.sh NAME [ARGS...], NAME a command under hack/ (bench, chaos, upgrade, release, image-build, crd-trim)" >&2
  exit 2
fi
name="$1"
shift
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
# GOWORK=off: a go.work elsewhere in the tree does not decide the harness's
# dependencies, its go.mod does.
GOWORK=off go -C "$(dirname "${BASH_SOURCE[0]}")" build -o "${scratch}/${name}" "./${name}"
status=0
"${scratch}/${name}" "$@" || status=$?
exit "${status}"
