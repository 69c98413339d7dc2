#!/usr/bin/env bash
# The newcomer's first run (make run): runs the controller on the host
# against the local cluster that `make install` set up, its webhooks served
# at https://localhost:9443 (the local overlay points the API server there),
# then creates a sample At ten seconds ahead and shows it change as it runs.
# The controller stays in the foreground; Ctrl-C stops it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KUBECONFIG="${root}/.local/kubeconfig"
export PATH="${root}/bin:${PATH}"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"

if [[ ! -f "${KUBECONFIG}" ]]; then
  echo "run-local: ${KUBECONFIG} missing: run make cluster" >&2
  exit 1
fi

echo "run-local: starting the controller (Ctrl-C stops it)"
start_host_controller --zap-encoder=console
controller=${controller_pid}
watcher=""
trap 'kill ${watcher} "${controller}" 2>/dev/null || true; wait "${controller}" 2>/dev/null || true' EXIT INT TERM

# Ready means the webhook certificate is in place and the webhooks serve.
wait_ready "${controller}" ""

schedule="$(date -u -d '+10 seconds' +%Y-%m-%dT%H:%M:%SZ)"
kubectl delete at hello --ignore-not-found --wait=true >/dev/null
kubectl apply -f - <<YAML
apiVersion: cnat.programming-kubernetes.info/v1beta1
kind: At
metadata:
  name: hello
  namespace: default
spec:
  schedule: "${schedule}"
  command: echo "Hello from cnat"
YAML

cat <<EOF
run-local: the At "hello" runs at ${schedule}. It is watched below; in another shell:
  export KUBECONFIG=${KUBECONFIG}
  kubectl get ats -o wide -w
EOF
kubectl get at hello --watch --output wide &
watcher=$!
wait "${controller}"
