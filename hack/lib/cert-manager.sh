# shellcheck shell=bash
# Shell functions for the scripts that need cert-manager on the local cluster
# (hack/e2e-release.sh: kustomize/overlays/production and install.yaml get
# their webhook certificate and CA injection from it). Source it; it defines
# functions only.

# start_cert_manager LOG installs cert-manager's CRDs (from the pinned
# module's deploy/crds: Certificate, CertificateRequest, Issuer,
# ClusterIssuer, what a self-signed Certificate needs) into the cluster
# $KUBECONFIG points at and starts bin/cert-manager on the host in the
# background, its log in LOG: cert-manager v1.21.2's controllers for
# self-signed Issuers and Certificates and its cainjector, wired by
# hack/tools/cert-manager/main.go. Its PID is left in cert_manager_pid.
start_cert_manager() {
  local log="$1" root dir crd
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  "${root}/hack/tools.sh" cert-manager >/dev/null
  dir="$(cd "${root}/hack/tools/cert-manager" && GOWORK=off go mod download -json github.com/cert-manager/cert-manager | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "${dir}/deploy/crds" ]] || { echo "cert-manager: no deploy/crds in the module (${dir})" >&2; return 1; }
  for crd in certificates certificaterequests issuers clusterissuers; do
    kubectl apply --server-side --field-manager cnat-hack -f "${dir}/deploy/crds/cert-manager.io_${crd}.yaml" >/dev/null
  done
  kubectl wait --for condition=Established --timeout 1m \
    crd/certificates.cert-manager.io crd/certificaterequests.cert-manager.io \
    crd/issuers.cert-manager.io crd/clusterissuers.cert-manager.io >/dev/null
  "${root}/bin/cert-manager" --kubeconfig "${KUBECONFIG}" >"${log}" 2>&1 &
  cert_manager_pid=$!
  echo "cert-manager: v1.21.2 controllers and cainjector on the host (PID ${cert_manager_pid}, log ${log})"
}

# stop_cert_manager stops what start_cert_manager started.
stop_cert_manager() {
  if [[ -n "${cert_manager_pid:-}" ]]; then
    kill "${cert_manager_pid}" 2>/dev/null || true
    wait "${cert_manager_pid}" 2>/dev/null || true
    cert_manager_pid=""
  fi
}
