#!/usr/bin/env bash
# The steps of the kind e2e once the cluster exists and the controller image
# is on its nodes, shared by make e2e-kind (hack/e2e-kind.sh: kind's cluster,
# the image built by docker-build and loaded with kind load) and make
# e2e-kind-local (hack/e2e-kind-local.sh: the local cluster's real node, the
# same image built without Docker and imported): build cnatctl, deploy
# kustomize/overlays/kind with it and wait for the controller, follow the
# controller's log, run e2e/ with CNAT_E2E_NODES=kind, and fail on any RBAC
# refusal in the log. KUBECONFIG is the cluster; LOGS (default
# .local/e2e-kind-logs) gets the controller's log and the cluster's Events
# whatever the outcome. Arguments go to go test.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${LOGS:-${root}/.local/e2e-kind-logs}"
controller_log="${logs}/cnat-controller.log"
export PATH="${PATH}:${root}/bin"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"
mkdir -p "${logs}"

make -C "${root}" build
cnatctl apply -k "${root}/kustomize/overlays/kind" --wait --timeout 5m

kubectl logs --namespace cnat-system deployment/cnat-controller --all-containers --follow >"${controller_log}" 2>&1 &
follower=$!
finish() {
  kill "${follower}" 2>/dev/null || true
  kubectl get events --all-namespaces --sort-by=.lastTimestamp >"${logs}/events.txt" 2>&1 || true
}
trap finish EXIT

status=0
CNAT_E2E_NODES=kind CNAT_E2E_CONTROLLER_LOG="${controller_log}" \
  go test -tags e2e -count=1 -timeout 20m "${root}/e2e/..." "$@" || status=$?
check_rbac "${controller_log}" || status=1
exit "${status}"
