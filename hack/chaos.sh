#!/usr/bin/env bash
# make chaos: attacks cnat's at-most-once and nothing-lost guarantees on the
# embedded local cluster and judges them from the API server's audit log
# (hack/chaos/). Deploys the local overlay, writes a kubeconfig for the
# controller's ServiceAccount, runs the scenarios (arguments go to
# hack/chaos, e.g. -size=small -scenarios=sigkill,janitor), installs cnat
# again if the uninstall scenario removed it, then fails if any controller
# log shows a request the RBAC refused. Logs and findings: .local/chaos/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work_dir="${root}/.local/chaos"
controller_kubeconfig="${work_dir}/controller.kubeconfig"
# kubectl of the cluster's Kubernetes (KUBE_VERSION), the rest from bin/.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${root}/.local/kubeconfig"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"

echo "chaos: deploying kustomize/overlays/local with cnatctl"
cnatctl apply -k "${root}/kustomize/overlays/local" --name local --change-source --prune >/dev/null
# An in-cluster controller still terminating (from make e2e-real) must not
# act beside the ones the scenarios run.
kubectl wait --for=delete pods --namespace cnat-system \
  --selector app.kubernetes.io/component=controller --timeout 2m >/dev/null

rm -rf "${work_dir}/logs"
mkdir -p "${work_dir}/logs"
write_controller_kubeconfig "${controller_kubeconfig}"

status=0
(cd "${root}" && hack/harness.sh chaos \
  -kubeconfig "${KUBECONFIG}" \
  -controller-kubeconfig "${controller_kubeconfig}" \
  -controller "${root}/bin/cnat-controller" \
  -work-dir "${work_dir}" \
  -cluster-dir "${root}/.local/kwok/clusters/cnat" \
  "$@") || status=$?
# The uninstall scenario removes cnat (last): install it again, as the
# cluster had it.
if ! kubectl get crd ats.cnat.programming-kubernetes.info >/dev/null 2>&1; then
  echo "chaos: installing kustomize/overlays/local again"
  cnatctl apply -k "${root}/kustomize/overlays/local" --name local --change-source --prune >/dev/null || status=1
fi
# The apiserver scenario's logs are left out: a restarted API server refuses
# requests until its RBAC informers have synced, whatever the RBAC says.
for log in "${work_dir}"/logs/*.log; do
  [[ -e "${log}" && "$(basename "${log}")" != apiserver-* ]] || continue
  check_rbac "${log}" || status=1
done
exit "${status}"
