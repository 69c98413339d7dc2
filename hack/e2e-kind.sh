#!/usr/bin/env bash
# make e2e-kind: the end-to-end suite on kind, as GitHub Actions runs it
# (.github/workflows/e2e-kind.yaml). Needs Docker and kind on PATH. Creates
# the cluster from kind-config.yaml, builds the controller image and loads
# it into the nodes, deploys kustomize/overlays/kind with cnatctl (waiting
# for the controller to be ready), runs e2e/, and collects logs into
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

collect_logs() {
  rm -rf "${logs}" && mkdir -p "${logs}"
  kind export logs "${logs}/kind" --name "${cluster}" >/dev/null 2>&1 || true
  KUBECONFIG="${kubeconfig}" kubectl logs --namespace cnat-system deployment/cnat-controller --all-containers >"${logs}/cnat-controller.log" 2>&1 || true
  KUBECONFIG="${kubeconfig}" kubectl get events --all-namespaces --sort-by=.lastTimestamp >"${logs}/events.txt" 2>&1 || true
}
trap collect_logs EXIT

if ! kind get clusters 2>/dev/null | grep -qx "${cluster}"; then
  kind create cluster --config "${root}/kind-config.yaml" --wait 3m
fi
kind export kubeconfig --name "${cluster}" --kubeconfig "${kubeconfig}"

make -C "${root}" docker-build IMG="${image}"
kind load docker-image "${image}" --name "${cluster}"

make -C "${root}" build
KUBECONFIG="${kubeconfig}" cnatctl apply -k "${root}/kustomize/overlays/kind" --wait --timeout 5m

KUBECONFIG="${kubeconfig}" CNAT_E2E_NODES=kind go test -tags e2e -count=1 -timeout 20m "${root}/e2e/..." "$@"
