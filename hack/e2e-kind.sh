#!/usr/bin/env bash
# make e2e-kind: the end-to-end suite on kind, as GitHub Actions runs it
# (.github/workflows/e2e-kind.yaml). Needs Docker and kind on PATH. Creates
# the cluster from kind-config.yaml (KIND_NODE_IMAGE, if set, for every node:
# the workflow's matrix of Kubernetes minors), builds the controller image
# and loads it into the nodes; then hack/e2e-kind-suite.sh, the steps make
# e2e-kind-local runs on the local cluster too: deploys
# kustomize/overlays/kind with cnatctl, runs e2e/. Logs go to
# .local/e2e-kind-logs whatever the outcome.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster=cnat-e2e
# kustomize/overlays/kind deploys cnat-controller with the release tag in
# VERSION, never pulled: the image loaded into the nodes must carry it.
image="${IMG:-cnat-controller:$(<"${root}/VERSION")}"
kubeconfig="${root}/.local/kind-kubeconfig"
logs="${root}/.local/e2e-kind-logs"
export PATH="${root}/bin:${PATH}"
mkdir -p "${root}/.local"

for tool in docker kind; do
  command -v "${tool}" >/dev/null || { echo "e2e-kind: ${tool} not found: the kind suite needs Docker and kind" >&2; exit 1; }
done

rm -rf "${logs}" && mkdir -p "${logs}"
trap 'kind export logs "${logs}/kind" --name "${cluster}" >/dev/null 2>&1 || true' EXIT

# kind's own steps: the cluster, and the image on its nodes.
if ! kind get clusters 2>/dev/null | grep -qx "${cluster}"; then
  kind create cluster --config "${root}/kind-config.yaml" ${KIND_NODE_IMAGE:+--image "${KIND_NODE_IMAGE}"} --wait 3m
fi
kind export kubeconfig --name "${cluster}" --kubeconfig "${kubeconfig}"
make -C "${root}" docker-build IMG="${image}"
kind load docker-image "${image}" --name "${cluster}"

KUBECONFIG="${kubeconfig}" LOGS="${logs}" "${root}/hack/e2e-kind-suite.sh" "$@"
