#!/usr/bin/env bash
# Starts "cnat", the local development cluster: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler run as processes from bin/, and
# kwok simulates three nodes whose "kubelet" follows hack/kwok/stages.yaml.
# The simulated nodes are labelled cnat.programming-kubernetes.info/simulated
# (hack/lib/nodes.sh); hack/real-node-up.sh adds the real node and taints them
# so that Pods without placement of their own run for real.
# The control plane is the Kubernetes of KUBE_VERSION (default: the one
# hack/tools/kubernetes pins; hack/lib/kube-version.sh), built by make tools.
# Everything listens on 127.0.0.1; all state lives in .local/. Does nothing if
# the cluster is already up, and creates it afresh if it exists but is not
# healthy, or was created from other hack/kwok/ files (stages, audit policy)
# than the checkout's or at another Kubernetes version.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster=cnat
nodes=3
kubeconfig="${root}/.local/kubeconfig"
export KWOK_WORKDIR="${root}/.local/kwok"
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
export KUBECONFIG="${kubeconfig}"
# shellcheck source=hack/lib/nodes.sh
source "${root}/hack/lib/nodes.sh"

for tool in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if [[ ! -x "${kube_bin}/${tool}" ]]; then
    echo "cluster-up: ${kube_bin#"${root}/"}/${tool} missing: run make tools KUBE_VERSION=${kube_version}" >&2
    exit 1
  fi
done
for tool in etcd kwok kwokctl; do
  if [[ ! -x "${root}/bin/${tool}" ]]; then
    echo "cluster-up: bin/${tool} missing: run make tools" >&2
    exit 1
  fi
done

usage() {
  cat <<EOF
cluster-up: use it with
  export KUBECONFIG=\$PWD/.local/kubeconfig
  kubectl get nodes
EOF
}

# healthy succeeds if the cluster exists and kwokctl reports every component
# (etcd, kube-apiserver, ...) Ready.
healthy() {
  local status
  status="$(kwokctl --name "${cluster}" get components --output wide 2>/dev/null)" || return 1
  awk 'NR > 1 && $2 != "Ready" { bad = 1 } END { exit bad || NR < 2 }' <<<"${status}"
}

# config is the digest of what the cluster is created from, hack/kwok/ and
# the Kubernetes version; it is stored beside the cluster, so that a change
# to either recreates it.
config="$(cat "${root}"/hack/kwok/* - <<<"${kube_version}" | sha256sum | cut -d' ' -f1)"
config_file="${KWOK_WORKDIR}/clusters/${cluster}/cnat-config.sha256"

if healthy && [[ "$(cat "${config_file}" 2>/dev/null)" != "${config}" ]]; then
  echo "cluster-up: hack/kwok/ or the Kubernetes version (now ${kube_version}) changed since cluster ${cluster} was created: recreating it"
  "${root}/hack/cluster-down.sh"
fi
if healthy; then
  kwokctl --name "${cluster}" get kubeconfig >"${kubeconfig}"
  echo "cluster-up: cluster ${cluster} is already up"
  place_simulated_nodes >/dev/null
  usage
  exit 0
fi

# A cluster that exists but is not healthy, typically because its processes
# were stopped, is created afresh: restarted in place, its nodes would stay
# unmanaged until the leases of the previous kwok expired (200s by default).
if [[ -d "${KWOK_WORKDIR}/clusters/${cluster}" ]]; then
  echo "cluster-up: cluster ${cluster} is not healthy: recreating it"
  "${root}/hack/cluster-down.sh"
fi

# kwokctl's log: whole in .local/kwokctl.log, each record said in one line.
# shellcheck source=hack/lib/kwokctl-log.sh
source "${root}/hack/lib/kwokctl-log.sh"
mkdir -p "${root}/.local"
: >"${kwok_log}"

start=${SECONDS}
# --kubeconfig= keeps kwokctl away from ~/.kube/config.
kwokctl --name "${cluster}" \
  --config "${root}/hack/kwok/kwokctl.yaml" \
  --config "${root}/hack/kwok/stages.yaml" \
  create cluster \
  --kubeconfig= \
  --etcd-binary "${root}/bin/etcd" \
  --kube-apiserver-binary "${kube_bin}/kube-apiserver" \
  --kube-controller-manager-binary "${kube_bin}/kube-controller-manager" \
  --kube-scheduler-binary "${kube_bin}/kube-scheduler" \
  --kwok-controller-binary "${root}/bin/kwok" \
  --kube-audit-policy "${root}/hack/kwok/audit-policy.yaml" \
  --wait 2m 2>&1 | kwokctl_said cluster-up || {
  echo "cluster-up: kwokctl could not create the cluster; its log: ${kwok_log}" >&2
  exit 1
}
kwokctl --name "${cluster}" get kubeconfig >"${kubeconfig}"
echo "${config}" >"${config_file}"

kwokctl --name "${cluster}" scale node --replicas "${nodes}" 2>&1 | kwokctl_said cluster-up
kubectl wait --for=condition=Ready nodes --all --timeout=2m
# Pods can only be created once the controller manager has created the
# namespace's default ServiceAccount.
kubectl wait --for=create serviceaccount/default --namespace default --timeout=2m

echo "cluster-up: cluster ${cluster} (Kubernetes ${kube_version}) is up with ${nodes} nodes ($((SECONDS - start))s)"
place_simulated_nodes >/dev/null
usage
