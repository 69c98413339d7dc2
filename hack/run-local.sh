#!/usr/bin/env bash
# The newcomer's first run (make run): against the local cluster that
# `make install` set up, creates a sample At ten seconds ahead, shows it
# change as it goes, and runs the controller in the foreground. Ctrl-C stops
# both.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KUBECONFIG="${root}/.local/kubeconfig"
export PATH="${root}/bin:${PATH}"

if [[ ! -f "${KUBECONFIG}" ]]; then
  echo "run-local: ${KUBECONFIG} missing: run make cluster" >&2
  exit 1
fi

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
run-local: the At "hello" runs at ${schedule}. Watch it here, or in another shell:
  export KUBECONFIG=${KUBECONFIG}
  kubectl get ats -w -o wide
run-local: starting the controller (Ctrl-C stops it)
EOF

# Show the At's transitions between the controller's log lines.
kubectl get at hello --watch --output wide &
watcher=$!
trap 'kill "${watcher}" 2>/dev/null || true' EXIT

"${root}/bin/cnat-controller" \
  --metrics-bind-address=127.0.0.1:8443 \
  --health-probe-bind-address=127.0.0.1:8081 \
  --zap-encoder=console
