# shellcheck shell=bash
# The Kubernetes version the local cluster runs (make cluster KUBE_VERSION=...)
# and where its binaries are. Sourced by hack/tools.sh and by every script
# that starts or uses the cluster; needs ${root}, the repository.
#
#   kube_version  KUBE_VERSION, or the version hack/tools/kubernetes pins
#                 (the default, the newest minor cnat is tested on)
#   kube_module   the tools module under hack/tools/ that pins kube_version:
#                 hack/tools/kubernetes, or a hack/tools/kubernetes-v<minor>
#                 whose go.mod requires exactly that version
#   kube_bin      where its kube-apiserver, kube-controller-manager,
#                 kube-scheduler, kubectl and kubelet are built: bin/ for the
#                 default, bin/k8s/<version>/ for any other, so that building
#                 another version never overwrites the default's binaries

# pinned_kubernetes DIR prints the k8s.io/kubernetes version DIR/go.mod requires.
pinned_kubernetes() {
  sed -n 's|^require k8s.io/kubernetes \(v[^ ]*\)$|\1|p' "$1/go.mod"
}

kube_default="$(pinned_kubernetes "${root}/hack/tools/kubernetes")"
kube_version="${KUBE_VERSION:-${kube_default}}"
kube_module=""
for dir in "${root}"/hack/tools/kubernetes "${root}"/hack/tools/kubernetes-v*; do
  if [[ "$(pinned_kubernetes "${dir}")" == "${kube_version}" ]]; then
    kube_module="${dir}"
    break
  fi
done
if [[ -z "${kube_module}" ]]; then
  echo "KUBE_VERSION=${kube_version}: no tools module pins it; the versions pinned:" \
    "$(for dir in "${root}"/hack/tools/kubernetes "${root}"/hack/tools/kubernetes-v*; do pinned_kubernetes "${dir}"; done | paste -sd' ')" >&2
  exit 2
fi
if [[ "${kube_version}" == "${kube_default}" ]]; then
  kube_bin="${root}/bin"
else
  kube_bin="${root}/bin/k8s/${kube_version}"
fi
unset dir
