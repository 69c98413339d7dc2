#!/usr/bin/env bash
# Removes the real node that hack/real-node-up.sh added and puts the host
# back as .local/real-node/host-before recorded it: stops the kubelet,
# every container and containerd, unmounts what they mounted, deletes the
# bridge, the iptables chains, the kubepods cgroups and the directories they
# created, restores the sysctls, and deletes the Node object if the cluster
# is up (its simulated nodes lose their taint and take every Pod again).
# Keeps only the image tarballs and the logs in .local/real-node.
# Does nothing if there is no real node.
set -euo pipefail

# shellcheck source=hack/real-node/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/real-node/common.sh"
trap 'echo "real-node-down: failed at line ${LINENO}: ${BASH_COMMAND}" >&2' ERR

# hack/real-node-up.sh records the host before it changes anything, and
# this script removes the record last.
if [[ ! -f "${host_before}" ]]; then
  echo "real-node-down: no real node"
  exit 0
fi
if [[ ${EUID} -ne 0 ]]; then
  echo "real-node-down: needs root, as hack/real-node-up.sh did" >&2
  exit 1
fi
# before KIND NAME: what host-before recorded.
before() { awk -v k="$1" -v n="$2" '$1 == k && $2 == n { $1 = ""; $2 = ""; sub(/^ +/, ""); print }' "${host_before}"; }

# The kubelet first, so it restarts nothing; then every container (the
# processes in the kubepods cgroups), their shims and containerd.
stop_process kubelet "${kubelet_config}"
for _ in $(seq 1 50); do
  pids="$(kubepods_pids)"
  [[ -n "${pids}" ]] || break
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL ${pids} 2>/dev/null || true
  sleep 0.1
done
for pid in $(pgrep -f -- "-address ${containerd_socket}( |\$)" || true); do
  kill -KILL "${pid}" 2>/dev/null || true
done
stop_process containerd "${containerd_config}"

# Mounts, all under .local/real-node (container root file systems, network
# namespaces, shm, volumes, the kubelet's directory), deepest first.
awk -v d="${state_dir}/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r mount; do
  umount "${mount}" 2>/dev/null || umount -l "${mount}"
done

# The kubelet's cgroups (hack/real-node-up.sh starts only where there are
# none of another kubelet).
remove_kubepods_cgroups

# The network: the DNAT and the guard, the bridge, the Pods' connections.
for entry in "nat PREROUTING ${nat_chain}" "filter INPUT ${filter_chain}"; do
  read -r table parent chain <<<"${entry}"
  while iptables -t "${table}" -C "${parent}" -i "${bridge}" -j "${chain}" 2>/dev/null; do
    iptables -t "${table}" -D "${parent}" -i "${bridge}" -j "${chain}"
  done
  if [[ "$(before chain "${table}/${chain}")" == absent ]] && iptables -t "${table}" -S "${chain}" >/dev/null 2>&1; then
    iptables -t "${table}" -F "${chain}"
    iptables -t "${table}" -X "${chain}"
  fi
done
# iptables (its nf_tables flavour) created the tables if there were none:
# remove them again unless someone else has put rules or chains in them.
for table in nat filter; do
  if [[ "$(before table "ip/${table}")" == absent ]] && nft list table ip "${table}" >/dev/null 2>&1 &&
    ! iptables-save -t "${table}" | grep -qE '^-A|^:[^ ]+ (-|DROP) '; then
    nft delete table ip "${table}"
  fi
done
if [[ "$(before link "${bridge}")" == absent ]] && ip link show "${bridge}" >/dev/null 2>&1; then
  ip link delete "${bridge}"
fi
conntrack -D --src "${pod_cidr}" >/dev/null 2>&1 || true
conntrack -D --dst "${pod_cidr}" >/dev/null 2>&1 || true

for key in "${recorded_sysctls[@]}"; do
  value="$(before sysctl "${key}")"
  if [[ -n "${value}" && "${value}" != absent && "$(sysctl -n "${key}" 2>/dev/null)" != "${value}" ]]; then
    sysctl -qw "${key}=${value}"
  fi
done

# Directories at fixed paths: the node's entries in them, and the
# directories themselves if the node created them.
find /var/log/containers -maxdepth 1 -type l -lname "${pod_logs_dir}/*" -delete 2>/dev/null || true
rm -f /var/lib/cni/results/cnat-real-node-*
for path in "${recorded_paths[@]}"; do
  if [[ "$(before path "${path}")" == absent && -e "${path}" ]]; then
    rm -rf "${path}"
  fi
done

if [[ -f "${cluster_kubeconfig}" ]] && kubectl --kubeconfig "${cluster_kubeconfig}" get --raw /readyz >/dev/null 2>&1; then
  kubectl --kubeconfig "${cluster_kubeconfig}" delete node "${node_name}" --ignore-not-found --wait=false
  # The simulated nodes take every Pod again.
  # shellcheck source=hack/lib/nodes.sh
  source "${root}/hack/lib/nodes.sh"
  KUBECONFIG="${cluster_kubeconfig}" place_simulated_nodes
fi

find "${state_dir}" -mindepth 1 -maxdepth 1 ! -name images ! -name '*.log' ! -name host-before -exec rm -rf {} +
rm -f "${host_before}"
echo "real-node-down: node ${node_name} removed, host restored (kept: ${images_dir}, logs)"
