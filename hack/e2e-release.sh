#!/usr/bin/env bash
# make e2e-release, make e2e-upgrade: the release in dist/ (make release)
# installed and upgraded to as a platform engineer would, on a new local
# cluster with its real node, cert-manager beside it.
#
#   hack/e2e-release.sh [install]   the README's Install: dist/ checked
#       against checksums.txt, the controller image imported from
#       dist/cnat-controller_<v>_image.oci.tar into the real node (no
#       registry: the tarball is what a registry would serve, by the same
#       digest), `kubectl apply --server-side -f dist/install.yaml`, then the
#       e2e suite (e2e/, the release's cnatctl, the Pods on the real node),
#       the README's Uninstall (kubectl delete -f install.yaml), checked to
#       leave nothing behind; then the same with `kubectl apply
#       --server-side -k kustomize/overlays/production` (the overlay at
#       VERSION's tag, which the imported image also carries). An RBAC refusal in the controller's log fails
#       the run (.local/e2e-release-controller.log).
#   hack/e2e-release.sh upgrade     the README's Upgrade: the previous release
#       (built from CNAT_PREVIOUS, default 2f8baa9: before the CRD's status
#       bounds, the NetworkPolicy, the image pinned to VERSION, and the
#       controller changes since) installed, Ats running, retrying and pending
#       in both API versions, then `kubectl apply --server-side -f
#       dist/install.yaml` over it while a client keeps creating and reading
#       Ats; hack/upgrade judges it from the API server's audit log.
#   hack/e2e-release.sh upgrade-badly
#       The same with the upgrade done wrong — the old install.yaml deleted,
#       then the new one applied — to show the judge failing it: exits 0
#       only if the judge finds Ats lost or requests refused.
#
# Each mode starts from a new local cluster (make cluster-down, make
# cluster): an install meets no earlier cnat. Needs the real node (Linux,
# root). Not part of make test: building the previous release and the two
# suites take most of CI's budget.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# kubectl of the cluster's Kubernetes (KUBE_VERSION), the rest from bin/.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${root}/.local/kubeconfig"
mode="${1:-install}"
dist="${root}/dist"
image_name="ghcr.io/programming-kubernetes/cnat-controller"
controller_log="${root}/.local/e2e-release-controller.log"
previous="${CNAT_PREVIOUS:-2f8baa9}"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"
# shellcheck source=hack/lib/cert-manager.sh
source "${root}/hack/lib/cert-manager.sh"

say() { echo "e2e-release: $*"; }

case "${mode}" in
  install | upgrade | upgrade-badly) ;;
  *) echo "usage: hack/e2e-release.sh [install | upgrade | upgrade-badly]" >&2; exit 2 ;;
esac

# The release: dist/ as make release left it, every asset as checksums.txt
# says.
[[ -f "${dist}/install.yaml" && -f "${dist}/checksums.txt" ]] || { echo "e2e-release: no release in dist/: run make release" >&2; exit 1; }
version="$(cat "${dist}/version")"
say "release ${version}: sha256sum -c checksums.txt"
(cd "${dist}" && sha256sum --strict --quiet -c checksums.txt)
image_tar="${dist}/cnat-controller_${version#v}_image.oci.tar"
digest="$(cat "${dist}/cnat-controller_${version#v}_image.digest")"
image="${image_name}@${digest}"
cnatctl_archive="${dist}/cnatctl_${version#v}_$(go env GOOS)_$(go env GOARCH).tar.gz"

# A new cluster.
say "a new local cluster"
"${root}/hack/real-node-down.sh" >/dev/null
"${root}/hack/cluster-down.sh" >/dev/null
"${root}/hack/cluster-up.sh" >/dev/null
"${root}/hack/real-node-up.sh" >/dev/null
if [[ -z "$(kubectl get nodes -l cnat.programming-kubernetes.info/real-node=true -o name)" ]]; then
  echo "e2e-release: no real node on this machine (hack/real-node-up.sh says why): the release's controller cannot run" >&2
  exit 1
fi

follower=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  [[ -z "${follower}" ]] || kill "${follower}" 2>/dev/null || true
  stop_cert_manager
}
trap cleanup EXIT
start_cert_manager "${root}/.local/cert-manager.log"
"${root}/hack/real-node/images.sh" "${image_tar}"

# wait_installed waits until the Deployment has rolled out (or, with
# "any", one controller Pod is ready), the webhook certificate is issued
# and the webhooks and the conversion answer: a server-side dry-run create
# of a v1alpha1 At passes the conversion and both webhooks.
wait_installed() {
  local what="${1:-all}" start=${SECONDS}
  kubectl wait --namespace cnat-system --for condition=Ready certificate/cnat-webhook-cert --timeout 2m >/dev/null
  if [[ "${what}" == any ]]; then
    for _ in $(seq 1 180); do
      [[ "$(kubectl get pods --namespace cnat-system --selector app.kubernetes.io/component=controller \
        -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)" -ge 1 ]] && break
      sleep 1
    done
  else
    kubectl rollout status deployment/cnat-controller --namespace cnat-system --timeout 3m >/dev/null
  fi
  for _ in $(seq 1 120); do
    if kubectl create --dry-run=server -o name -f - >/dev/null 2>&1 <<'EOF'
apiVersion: cnat.programming-kubernetes.info/v1alpha1
kind: At
metadata: {name: e2e-release-probe, namespace: default}
spec: {schedule: "2030-01-01T00:00:00Z", command: "true"}
EOF
    then
      say "installed in $((SECONDS - start))s: $(kubectl get pods --namespace cnat-system --selector app.kubernetes.io/component=controller \
        -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} on {.spec.nodeName}; {end}')"
      return 0
    fi
    sleep 1
  done
  echo "e2e-release: the webhooks or the conversion do not answer after 2 minutes" >&2
  return 1
}

# follow_controller_log follows every controller Pod's log into the file.
follow_controller_log() {
  [[ -z "${follower}" ]] || kill "${follower}" 2>/dev/null || true
  kubectl logs --namespace cnat-system --selector app.kubernetes.io/component=controller \
    --follow --prefix --max-log-requests 4 >>"${controller_log}" 2>&1 &
  follower=$!
}

# suite NAME runs the e2e suite on the real node with the release's cnatctl,
# its output in .local/e2e-release-NAME.log, and prints how many tests
# passed and failed.
suite() {
  local name="$1" cnatctl_dir out status=0
  cnatctl_dir="$(mktemp -d)"
  out="${root}/.local/e2e-release-${name}.log"
  tar -xzf "${cnatctl_archive}" -C "${cnatctl_dir}"
  CNAT_E2E_NODES=real CNAT_E2E_OVERLAY=production CNAT_E2E_CONTROLLER_LOG="${controller_log}" \
    CNATCTL="${cnatctl_dir}/cnatctl" go test -tags e2e -count=1 -timeout 20m -v ./e2e/... >"${out}" 2>&1 || status=$?
  rm -rf "${cnatctl_dir}"
  grep -E '^(--- FAIL|FAIL|ok)' "${out}" || true
  say "e2e suite against ${name}: $(grep -c '^--- PASS' "${out}") passed, $(grep -c '^--- FAIL' "${out}") failed, $(grep -c '^--- SKIP' "${out}") skipped (${out})"
  return "${status}"
}

# uninstall ARG... follows the README's Uninstall: the Ats first, while the
# controller runs, until no Pod keeps the tracking finalizer; then kubectl
# delete ARG... (the install); then nothing of cnat may be left.
uninstall() {
  local left
  say "uninstall: kubectl delete ats --all --all-namespaces, then kubectl delete $*"
  kubectl delete ats --all --all-namespaces --wait=false >/dev/null
  for _ in $(seq 1 120); do
    kubectl get pods --all-namespaces -l cnat.programming-kubernetes.info/at \
      -o jsonpath='{.items[*].metadata.finalizers}' | grep -q cnat.programming-kubernetes.info/tracking || break
    sleep 2
  done
  kubectl delete "$@" >/dev/null
  left="$(
    kubectl get crd ats.cnat.programming-kubernetes.info --ignore-not-found -o name
    kubectl get namespace cnat-system --ignore-not-found -o name
    kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings,clusterroles,clusterrolebindings -o name | grep cnat || true
    kubectl get pods --all-namespaces -l cnat.programming-kubernetes.info/at -o name
  )"
  if [[ -n "${left}" ]]; then
    echo "e2e-release: left after the uninstall:" >&2
    echo "${left}" >&2
    return 1
  fi
  say "uninstall: nothing of cnat is left"
}

: >"${controller_log}"
if [[ "${mode}" == install ]]; then
  status=0
  say "kubectl apply --server-side -f dist/install.yaml"
  kubectl apply --server-side -f "${dist}/install.yaml"
  wait_installed
  follow_controller_log
  say "the e2e suite against install.yaml (${image})"
  suite install.yaml || status=1

  check_rbac "${controller_log}" || status=1
  # The uninstall deletes the controller's RBAC before the controller: its
  # refusals then are not the RBAC's fault.
  kill "${follower}" 2>/dev/null || true
  follower=""
  uninstall -f "${dist}/install.yaml" || status=1

  say "kubectl apply --server-side -k kustomize/overlays/production (${image_name}:$(cat VERSION))"
  kubectl apply --server-side -k kustomize/overlays/production >/dev/null
  wait_installed
  follow_controller_log
  say "the e2e suite against the production overlay"
  suite production-overlay || status=1
  check_rbac "${controller_log}" || status=1
  kill "${follower}" 2>/dev/null || true
  follower=""
  uninstall -k kustomize/overlays/production || status=1
  if [[ "${status}" -eq 0 ]]; then say PASS; else say FAIL; fi
  exit "${status}"
fi

# The previous release: its controller built from its commit, as an image
# (one platform, this machine's) by today's hack/image-build, and its
# production overlay rendered into an install.yaml pinned by that image's
# digest, as make release renders it.
prev_dir="${root}/.local/upgrade/previous"
rm -rf "${prev_dir}"
mkdir -p "${prev_dir}/src"
prev_commit="$(git rev-parse "${previous}^{commit}")"
say "the previous release: ${prev_commit:0:12} ($(git log -1 --format=%s "${prev_commit}"))"
git archive "${prev_commit}" | tar -x -C "${prev_dir}/src"
(cd "${prev_dir}/src" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${prev_dir}/cnat-controller" ./cmd/cnat-controller)
hack/harness.sh image-build -tag "${image_name}:${prev_commit:0:12}" -user 65532 \
  -platform-binary "linux/$(go env GOARCH)=${prev_dir}/cnat-controller" \
  -o "${prev_dir}/image.oci.tar" -digest-file "${prev_dir}/image.digest" >/dev/null
hack/harness.sh release install-yaml -overlay "${prev_dir}/src/kustomize/overlays/production" \
  -image "${image_name}" -digest "$(cat "${prev_dir}/image.digest")" \
  -version "${prev_commit:0:12}" -commit "${prev_commit}" -o "${prev_dir}/install.yaml"
"${root}/hack/real-node/images.sh" "${prev_dir}/image.oci.tar"

say "kubectl apply --server-side -f install.yaml of ${prev_commit:0:12}"
kubectl apply --server-side -f "${prev_dir}/install.yaml" >/dev/null
wait_installed any
follow_controller_log

upgrade="kubectl apply --server-side -f ${dist}/install.yaml"
if [[ "${mode}" == upgrade-badly ]]; then
  upgrade="kubectl delete -f ${prev_dir}/install.yaml --wait=false; sleep 5; ${upgrade}"
fi
upgrade+=" && kubectl rollout status deployment/cnat-controller --namespace cnat-system --timeout 3m"
status=0
hack/harness.sh upgrade -upgrade "${upgrade}" -image "${image}" || status=$?
follow_controller_log
sleep 2
check_rbac "${controller_log}" || status=1
if [[ "${mode}" == upgrade-badly ]]; then
  if [[ "${status}" -eq 1 ]]; then
    say "the upgrade done wrong failed the judge, as it must"
    exit 0
  fi
  echo "e2e-release: the upgrade done wrong passed the judge (status ${status}): the judge sees nothing" >&2
  exit 1
fi
if [[ "${status}" -eq 0 ]]; then say PASS; else say FAIL; fi
exit "${status}"
