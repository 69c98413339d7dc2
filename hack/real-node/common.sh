# shellcheck shell=bash disable=SC2034 # variables for the scripts that source this file
# Sourced by hack/real-node-up.sh, hack/real-node-down.sh and the scripts
# beside this file: where the real node keeps its state and what it is
# called. Everything the node writes lives under .local/real-node/, except
# what the kernel, containerd and the kubelet only put in fixed places
# (hack/real-node-down.sh removes those again, from the record in
# .local/real-node/host-before).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state_dir="${root}/.local/real-node"
cluster_kubeconfig="${root}/.local/kubeconfig"
cluster_pki="${root}/.local/kwok/clusters/cnat/pki"

# The node is named after the machine: the API server reaches its kubelet
# (kubectl logs, exec) at that name, which resolves locally.
node_name="$(hostname | tr '[:upper:]' '[:lower:]')"
node_label="cnat.programming-kubernetes.info/real-node"

# The Pod network: a bridge on this machine only, no route out of it.
bridge=cnat0
pod_cidr="${REAL_NODE_POD_CIDR:-10.89.0.0/24}"
pod_gateway="${pod_cidr%.*}.1"
pod_prefix="${pod_cidr#*/}"

containerd_dir="${state_dir}/containerd"
containerd_socket="${containerd_dir}/containerd.sock"
containerd_config="${containerd_dir}/config.toml"
kubelet_dir="${state_dir}/kubelet"
kubelet_config="${state_dir}/etc/kubelet.yaml"
kubelet_kubeconfig="${state_dir}/etc/kubelet.kubeconfig"
kubelet_pki="${state_dir}/etc/pki"
pod_logs_dir="${state_dir}/pod-logs"
cni_conf_dir="${state_dir}/cni/net.d"
cni_ipam_dir="${state_dir}/cni/ipam"
images_dir="${state_dir}/images"
host_before="${state_dir}/host-before"
host_changes="${state_dir}/host-changes"

# iptables chains of the node: a DNAT of the kubernetes Service to the API
# server on 127.0.0.1 (there is no kube-proxy), and a guard that lets only
# that DNAT reach 127.0.0.1 from the bridge.
nat_chain=CNAT-REAL-NODE
filter_chain=CNAT-REAL-NODE-INPUT

# The sandbox image containerd runs for every Pod: the tag kubeadm v1.36
# uses, built from hack/image-build/pause.
pause_image=registry.k8s.io/pause:3.10.2

# What the node may change on the host and hack/real-node-down.sh restores:
# sysctls the kubelet sets at start (it wants them for the OOM killer and
# kernel panics), and directories containerd, CNI and the kubelet create at
# fixed paths.
recorded_sysctls=(
  net.ipv4.ip_forward
  net.bridge.bridge-nf-call-iptables
  vm.overcommit_memory
  vm.panic_on_oom
  kernel.panic
  kernel.panic_on_oops
  kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes
)
recorded_paths=(
  /run/containerd                 # containerd's shim sockets
  /run/mount                      # mount(8)'s table (libmount utab)
  /var/lib/cni                    # the CNI result cache
  /var/lib/kubelet                # the kubelet's device-plugins/kubelet.sock
  /var/log/containers             # the kubelet's links to the Pods' logs
)
cgroup_root=/sys/fs/cgroup

# The Kubernetes of KUBE_VERSION, the control plane's: its kubelet and kubectl.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:/usr/sbin:/sbin:${PATH}"

# pid_of prints the pid recorded in .local/real-node/NAME.pid if that
# process is alive and runs with CONFIG on its command line (so a reused pid
# is not mistaken for the node's).
pid_of() {
  local name="$1" config="$2" pid
  pid="$(cat "${state_dir}/${name}.pid" 2>/dev/null)" || return 1
  [[ -n "${pid}" && -r "/proc/${pid}/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -qF -- "${config}" || return 1
  echo "${pid}"
}

# stop_process ends the recorded process NAME: SIGTERM, then SIGKILL after
# 10 seconds.
stop_process() {
  local name="$1" config="$2" pid
  if pid="$(pid_of "${name}" "${config}")"; then
    kill -TERM "${pid}" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "${pid}" 2>/dev/null || true
  fi
  rm -f "${state_dir}/${name}.pid"
}

# kubepods_pids prints the processes in the kubelet's cgroups, one per line.
kubepods_pids() {
  find "${cgroup_root}"/*/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u || true
}

# remove_kubepods_cgroups removes the kubelet's cgroups, deepest first; they
# must hold no process.
remove_kubepods_cgroups() {
  local hierarchy
  for hierarchy in "${cgroup_root}"/*/; do
    if [[ -d "${hierarchy}kubepods" ]]; then
      find "${hierarchy}kubepods" -depth -type d -exec rmdir {} +
    fi
  done
}

ctr_k8s() {
  ctr --address "${containerd_socket}" --namespace k8s.io "$@"
}
