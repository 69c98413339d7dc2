# Shell functions for the scripts that run the controller (hack/run-local.sh,
# hack/e2e-local.sh, hack/e2e-real.sh). Source it; it defines functions only.

# start_host_controller [ARG...] starts the controller (host_controller) in
# the background, once no in-cluster controller acts beside it; its PID is
# left in controller_pid.
start_host_controller() {
  wait_no_incluster_controller
  host_controller "$@" &
  controller_pid=$!
}

# wait_no_incluster_controller waits out an in-cluster controller still
# terminating (from make e2e-real): two controllers must not act at once.
wait_no_incluster_controller() {
  kubectl wait --for=delete pods --namespace cnat-system \
    --selector app.kubernetes.io/component=controller --timeout 2m >/dev/null
}

# host_controller [ARG...] replaces the shell with bin/cnat-controller, run
# against $KUBECONFIG the way the local overlay expects it
# (kustomize/overlays/local): webhooks on https://localhost:9443 with a
# certificate for "localhost" kept in its own Secret and copied into
# .local/webhook-certs, metrics and probes on 127.0.0.1. Extra arguments go
# to the controller. CNAT_CONTROLLER names another binary (make bench's
# before line). make bench runs it as a child of its own (hack/bench), so
# that the process it watches is the controller.
host_controller() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  exec "${CNAT_CONTROLLER:-${root}/bin/cnat-controller}" \
    --metrics-bind-address=127.0.0.1:8443 \
    --health-probe-bind-address=127.0.0.1:8081 \
    --webhook-dns-name=localhost \
    --webhook-secret=cnat-webhook-localhost-cert \
    --webhook-cert-dir="${root}/.local/webhook-certs" \
    --webhook-cert-from-secret \
    "$@"
}

# wait_ready PID LOG waits until the controller with process PID answers
# /readyz on 127.0.0.1:8081 (its webhook server serves with a certificate),
# for at most a minute. It needs no HTTP client: bash's /dev/tcp is enough.
wait_ready() {
  local pid="$1" log="$2" status
  for _ in $(seq 1 120); do
    if status="$(readyz)" && [[ "${status}" == *" 200 "* ]]; then
      return 0
    fi
    if ! kill -0 "${pid}" 2>/dev/null; then
      echo "the controller exited:" >&2
      [[ -f "${log}" ]] && tail -n 40 "${log}" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "the controller did not become ready within a minute" >&2
  [[ -f "${log}" ]] && tail -n 40 "${log}" >&2
  return 1
}

# readyz prints the status line of GET http://127.0.0.1:8081/readyz.
readyz() {
  local line
  { exec 3<>/dev/tcp/127.0.0.1/8081; } 2>/dev/null || return 1
  printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  IFS= read -r line <&3 || true
  exec 3<&- 3>&-
  printf '%s\n' "${line}"
}

# check_rbac LOG fails, listing them, if the controller's log shows requests
# the API server refused its ServiceAccount. Such a refusal can hide behind a
# retry that later succeeds; any is a bug in kustomize/base/rbac.
check_rbac() {
  local log="$1"
  local denied='User \\?"system:serviceaccount:cnat-system:cnat-controller\\?" cannot'
  if grep -Eq "${denied}" "${log}"; then
    echo "the controller was refused permissions it needs (kustomize/base/rbac):" >&2
    grep -E "${denied}" "${log}" | head -n 10 >&2
    return 1
  fi
}

# write_controller_kubeconfig PATH writes a kubeconfig for the controller's
# ServiceAccount cnat-system/cnat-controller (a TokenRequest token valid for
# two hours) to PATH, for the cluster $KUBECONFIG points at, so that a
# controller run on the host has exactly the RBAC of kustomize/base/rbac.
write_controller_kubeconfig() {
  local path="$1" server ca token
  server="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')"
  ca="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
  token="$(kubectl create token cnat-controller --namespace cnat-system --duration=2h)"
  (
    umask 077
    cat >"${path}" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: ${server}
      certificate-authority-data: ${ca}
users:
  - name: cnat-controller
    user:
      token: ${token}
contexts:
  - name: cnat-controller
    context: {cluster: local, user: cnat-controller}
current-context: cnat-controller
KUBECONFIG
  )
}
