#!/usr/bin/env bash
# make e2e-real: the end-to-end suite on real Pods. Adds the real node to the
# local cluster (hack/real-node-up.sh), builds the controller image without
# Docker and imports it into the node (hack/real-node/images.sh), deploys
# kustomize/overlays/local-incluster with cnatctl — the controller in-cluster
# on the real node, as its ServiceAccount, webhooks reached through their
# Service — and runs e2e/ with the cluster's default placement, which is the
# real node (CNAT_E2E_NODES=real checks that the Pods ran there): real
# containers, real exit codes, real logs. Fails on any RBAC refusal in the
# controller's log (.local/e2e-real-controller.log). Where no real node can
# run (not Linux, not root), it says so and skips, unless
# CNAT_REQUIRE_REAL_NODE is set (CI sets it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# kubectl of the cluster's Kubernetes (KUBE_VERSION), the rest from bin/.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${root}/.local/kubeconfig"
controller_log="${root}/.local/e2e-real-controller.log"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"

"${root}/hack/real-node-up.sh"
if [[ -z "$(kubectl get nodes -l cnat.programming-kubernetes.info/real-node=true -o name)" ]]; then
  if [[ -n "${CNAT_REQUIRE_REAL_NODE:-}" ]]; then
    echo "e2e-real: no real node, and CNAT_REQUIRE_REAL_NODE is set" >&2
    exit 1
  fi
  echo "e2e-real: SKIPPED: no real node on this machine (see above); the suite ran on simulated nodes only (make e2e)"
  exit 0
fi
"${root}/hack/real-node/images.sh" busybox pause cnat-controller

echo "e2e-real: deploying kustomize/overlays/local-incluster with cnatctl"
# The same ApplySet as make install and make e2e, so switching between the
# controller on the host and in-cluster prunes what the other mode added
# (--change-source: the set alternates between the two overlays).
cnatctl apply -k "${root}/kustomize/overlays/local-incluster" --name local --change-source --prune --wait --timeout 3m
# The image keeps its tag when rebuilt: restart so the Pod runs this build,
# and wait until the old Pod is gone so its log is not the one followed.
selector=app.kubernetes.io/component=controller
old_pods="$(kubectl get pods --namespace cnat-system --selector "${selector}" -o name)"
kubectl rollout restart deployment/cnat-controller --namespace cnat-system >/dev/null
kubectl rollout status deployment/cnat-controller --namespace cnat-system --timeout 3m
if [[ -n "${old_pods}" ]]; then
  # shellcheck disable=SC2086 # one argument per Pod
  kubectl wait --for=delete --namespace cnat-system ${old_pods} --timeout 2m >/dev/null
fi

kubectl logs --namespace cnat-system deployment/cnat-controller --follow >"${controller_log}" 2>&1 &
follower=$!
trap 'kill "${follower}" 2>/dev/null || true' EXIT

echo "e2e-real: running the suite on the real node"
status=0
CNAT_E2E_NODES=real CNAT_E2E_CONTROLLER_LOG="${controller_log}" \
  go test -tags e2e -count=1 -timeout 15m "${root}/e2e/..." "$@" || status=$?
check_rbac "${controller_log}" || status=1
exit "${status}"
