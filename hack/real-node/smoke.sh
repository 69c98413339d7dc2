#!/usr/bin/env bash
# Proves the real node (hack/real-node-up.sh) runs Pods for real, as
# restricted Pod Security demands them, and times it: one Pod that prints
# "hello" and exits 3 must end Failed with exit code 3 and that log; a
# running Pod must answer kubectl exec; then COUNT Pods (default 20) at once
# must all succeed. Works in a namespace of its own, deleted at the end.
#
# Usage: hack/real-node/smoke.sh [COUNT]
set -euo pipefail

# shellcheck source=hack/real-node/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
count="${1:-20}"
namespace=real-node-smoke
export KUBECONFIG="${cluster_kubeconfig}"

fail() {
  echo "smoke: $*" >&2
  kubectl get pods --namespace "${namespace}" -o wide >&2 || true
  exit 1
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# pod NAME SCRIPT: a Pod on the real node that runs SCRIPT in busybox.
pod() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: real-node-smoke}
spec:
  restartPolicy: Never
  nodeSelector: {${node_label}: "true"}
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: main
      image: busybox:1.37
      imagePullPolicy: IfNotPresent
      command: ["/bin/sh", "-c", "$2"]
      securityContext:
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
---
EOF
}

kubectl delete namespace "${namespace}" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "${namespace}" >/dev/null
kubectl label namespace "${namespace}" pod-security.kubernetes.io/enforce=restricted >/dev/null
trap 'kubectl delete namespace "${namespace}" --wait=false >/dev/null 2>&1 || true' EXIT
kubectl wait --for=create serviceaccount/default --namespace "${namespace}" --timeout=30s >/dev/null

begin="$(date +%s%N)"
pod exit3 'echo hello; exit 3' | kubectl apply --namespace "${namespace}" -f - >/dev/null
kubectl wait --namespace "${namespace}" --for=jsonpath='{.status.phase}'=Failed pod/exit3 --timeout=60s >/dev/null ||
  fail "pod exit3 did not fail"
took="$(ms_since "${begin}")"
code="$(kubectl get pod exit3 --namespace "${namespace}" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')"
[[ "${code}" == 3 ]] || fail "pod exit3 exited ${code}, not 3"
log="$(kubectl logs exit3 --namespace "${namespace}")"
[[ "${log}" == hello ]] || fail "pod exit3 logged '${log}', not 'hello'"
echo "smoke: one Pod, create to Failed with exit code 3 and log 'hello': ${took} ms"

pod sleeper 'sleep 300' | kubectl apply --namespace "${namespace}" -f - >/dev/null
kubectl wait --namespace "${namespace}" --for=condition=Ready pod/sleeper --timeout=60s >/dev/null || fail "pod sleeper not ready"
[[ "$(kubectl exec sleeper --namespace "${namespace}" -- id -u)" == 65534 ]] || fail "kubectl exec into sleeper failed"
echo "smoke: kubectl exec works"
kubectl delete pod sleeper --namespace "${namespace}" --wait=false >/dev/null

begin="$(date +%s%N)"
for i in $(seq 1 "${count}"); do
  pod "batch-${i}" "echo batch ${i}"
done | kubectl apply --namespace "${namespace}" -f - >/dev/null
kubectl wait --namespace "${namespace}" --for=jsonpath='{.status.phase}'=Succeeded pod -l app=real-node-smoke \
  --field-selector metadata.name!=exit3,metadata.name!=sleeper --timeout=180s >/dev/null ||
  fail "not all ${count} Pods succeeded"
echo "smoke: ${count} Pods at once, create to all Succeeded: $(ms_since "${begin}") ms"
