#!/usr/bin/env bash
# make e2e-kind-local: what make e2e-kind runs after kind's own steps, on the
# local cluster's real node instead of kind. The controller image is the one
# make e2e-kind builds (the Dockerfile's static build of ./cmd/cnat-controller,
# run as 65532), built without Docker by hack/real-node/images.sh and
# imported into the node's containerd under the name make e2e-kind gives it
# and kustomize/overlays/kind deploys, cnat-controller:<VERSION>
# (docker.io/library/cnat-controller:<VERSION>); then hack/e2e-kind-suite.sh,
# the same steps as on kind: kustomize/overlays/kind applied with cnatctl,
# e2e/ with CNAT_E2E_NODES=kind. Only kind's cluster creation and kind load
# are not run. Needs the real node (hack/real-node-up.sh): the overlay's
# controller runs in-cluster. The cluster should be new (make e2e-kind-local
# recreates it), as kind's is: the overlay is its own ApplySet, apart from
# the local overlays'.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${root}/.local/kubeconfig"

"${root}/hack/real-node-up.sh"
if [[ -z "$(kubectl get nodes -l cnat.programming-kubernetes.info/real-node=true -o name)" ]]; then
  echo "e2e-kind-local: no real node on this machine (see above): the kind overlay's controller runs in-cluster and needs one" >&2
  exit 1
fi
# The image make e2e-kind loads with kind load, imported instead.
"${root}/hack/real-node/images.sh" busybox pause cnat-controller

rm -rf "${root}/.local/e2e-kind-local-logs"
LOGS="${root}/.local/e2e-kind-local-logs" "${root}/hack/e2e-kind-suite.sh" "$@"
