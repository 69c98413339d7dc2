#!/usr/bin/env bash
# make e2e: the end-to-end suite on the embedded local cluster. Deploys the
# local overlay, runs the controller on the host as its ServiceAccount (a
# TokenRequest token in a kubeconfig of its own), so the suite fails if the
# RBAC in kustomize/base/rbac misses a permission, then runs e2e/ against
# the cluster as its administrator. The Ats that imitate their command with
# the simulated kubelet's annotations (exit codes, durations) ask for the
# simulated nodes (CNAT_E2E_NODES=simulated); the others take the cluster's
# default, the real node where it runs. Logs: .local/e2e-controller.log.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
local_dir="${root}/.local"
admin_kubeconfig="${local_dir}/kubeconfig"
controller_kubeconfig="${local_dir}/e2e-controller.kubeconfig"
controller_log="${local_dir}/e2e-controller.log"
# kubectl of the cluster's Kubernetes (KUBE_VERSION), the rest from bin/.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${admin_kubeconfig}"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"

echo "e2e: deploying kustomize/overlays/local with cnatctl"
# One ApplySet for the local cluster, whichever overlay: coming from make
# e2e-real, this prunes the in-cluster Deployment.
cnatctl apply -k "${root}/kustomize/overlays/local" --name local --change-source --prune

echo "e2e: a kubeconfig for the controller's ServiceAccount cnat-system/cnat-controller"
write_controller_kubeconfig "${controller_kubeconfig}"

echo "e2e: starting the controller (log: ${controller_log})"
start_host_controller --kubeconfig="${controller_kubeconfig}" >"${controller_log}" 2>&1
controller=${controller_pid}
trap 'kill "${controller}" 2>/dev/null || true; wait "${controller}" 2>/dev/null || true' EXIT

wait_ready "${controller}" "${controller_log}"

echo "e2e: running the suite"
status=0
CNAT_E2E_NODES=simulated CNAT_E2E_CONTROLLER_LOG="${controller_log}" go test -tags e2e -count=1 -timeout 15m "${root}/e2e/..." "$@" || status=$?
check_rbac "${controller_log}" || status=1
exit "${status}"
