#!/usr/bin/env bash
# Adds a real node to the local cluster (hack/cluster-up.sh), beside the
# simulated ones: containerd and a kubelet built from the pinned Kubernetes
# of KUBE_VERSION, the control plane's (bin/kubelet; bin/k8s/<version>/kubelet
# for another than the default: hack/lib/kube-version.sh) run as background
# processes of this machine, with their state, socket and logs in
# .local/real-node/. Its Pods run for real: runc containers on a bridge
# (cnat0, 10.89.0.0/24 or $REAL_NODE_POD_CIDR) that only this machine
# reaches, from images built here without Docker (hack/real-node/images.sh).
# The node is named after the machine and
# labelled cnat.programming-kubernetes.info/real-node=true. It is the default
# node: once it is Ready, the simulated nodes are tainted
# cnat.programming-kubernetes.info/simulated=true:NoSchedule
# (hack/lib/nodes.sh), so a Pod without placement of its own runs here, for
# real, and only Pods that ask for the simulated nodes go there.
#
# Needs Linux and root; elsewhere, or with CNAT_REAL_NODE=0, it says so,
# leaves the simulated nodes untainted (Pods run there, simulated) and exits
# 0. Installs containerd,
# runc, CNI plugins, busybox-static, iptables, nftables, conntrack and
# openssl with apt-get when they are missing. Idempotent: a second run changes nothing,
# and after the cluster was recreated it reconnects the node. What it changes
# on the host is recorded in .local/real-node/host-before before the first
# change and listed in .local/real-node/host-changes;
# hack/real-node-down.sh undoes it.
set -euo pipefail

# shellcheck source=hack/real-node/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/real-node/common.sh"
trap 'echo "real-node-up: failed at line ${LINENO}: ${BASH_COMMAND}" >&2' ERR
templates="${root}/hack/real-node"
mapfile -t packages < <(grep -v "^#" "${templates}/packages.txt")

# shellcheck source=hack/lib/nodes.sh
source "${root}/hack/lib/nodes.sh"

# not_available says why there is no real node and makes the simulated
# nodes the default ones, if the cluster is up.
not_available() {
  echo "real node: not available here ($1); only simulated nodes"
  if [[ -f "${cluster_kubeconfig}" ]] && KUBECONFIG="${cluster_kubeconfig}" kubectl get --raw /readyz >/dev/null 2>&1; then
    KUBECONFIG="${cluster_kubeconfig}" place_simulated_nodes
  fi
  exit 0
}

die() {
  echo "real-node-up: $*" >&2
  exit 1
}

# --- Can this machine run a kubelet at all? --------------------------------

if [[ "${CNAT_REAL_NODE:-1}" == 0 ]]; then
  if [[ -f "${host_before}" ]]; then
    echo "real-node-up: CNAT_REAL_NODE=0, but the real node of an earlier make cluster is still set up: make cluster-down removes it" >&2
  fi
  not_available "CNAT_REAL_NODE=0"
fi
[[ "$(uname -s)" == Linux ]] || not_available "needs Linux, this is $(uname -s)"
[[ ${EUID} -eq 0 ]] || not_available "needs root for containers, mounts and the bridge; run it with sudo"
grep -qw cgroup /proc/filesystems || not_available "the kernel has no cgroups"
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("${package}")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  command -v apt-get >/dev/null || not_available "missing ${missing[*]} and no apt-get to install them"
  echo "real-node-up: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The kubelet refuses a loopback node IP: the node's is the machine's own
# address, though no traffic of the node leaves the machine.
node_ip="$(ip -4 -o addr show scope global | awk -v br="${bridge}" '$2 != br { sub(/\/.*/, "", $4); print $4; exit }')"
[[ -n "${node_ip}" ]] || not_available "no non-loopback IPv4 address for the node"
# The API server calls the kubelet (logs, exec) at the node's name; the
# kubelet listens on 127.0.0.1 only.
if ! getent ahostsv4 "${node_name}" | awk '{ print $1 }' | grep '^127\.' >/dev/null; then
  echo "real-node-up: warning: ${node_name} does not resolve to 127.0.0.1 here: kubectl logs and exec will not reach the node" >&2
fi
[[ "${pod_cidr}" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.0/(1[6-9]|2[0-4])$ ]] ||
  die "REAL_NODE_POD_CIDR=${pod_cidr}: expected a network like 10.89.0.0/24 (a prefix of /16 to /24)"
(( ${#containerd_socket} < 100 )) || die "${containerd_socket} is too long for a unix socket; move the repository to a shorter path"

# --- The cluster it joins --------------------------------------------------

kube() { kubectl --kubeconfig "${cluster_kubeconfig}" "$@"; }
if [[ ! -f "${cluster_kubeconfig}" ]] || ! kube get --raw /readyz >/dev/null 2>&1; then
  die "the local cluster is not up: run make cluster first"
fi
[[ -f "${cluster_pki}/ca.crt" && -f "${cluster_pki}/ca.key" ]] || die "no cluster CA in ${cluster_pki}"
server="$(kube config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
[[ "${server}" =~ ^https://127\.0\.0\.1:([0-9]+)$ ]] || die "expected the API server at https://127.0.0.1:PORT, not ${server}"
api_port="${BASH_REMATCH[1]}"
read -r service_ip service_port <<<"$(kube get service kubernetes --namespace default -o jsonpath='{.spec.clusterIP} {.spec.ports[0].port}')"

KUBE_VERSION="${kube_version}" "${root}/hack/tools.sh" kubelet

# --- Record the host before the first change -------------------------------

mkdir -p "${state_dir}"
chain_exists() { iptables -t "$1" -S "$2" >/dev/null 2>&1; }
if [[ ! -f "${host_before}" ]]; then
  if compgen -G "${cgroup_root}/*/kubepods" >/dev/null; then
    # A kubelet that was killed (a machine's session ended, a checkout was
    # deleted before make cluster-down) leaves its cgroups behind, empty.
    # Only a running kubelet, or containers still in them, make them
    # another node's.
    if pgrep -x kubelet >/dev/null || [[ -n "$(kubepods_pids)" ]]; then
      die "another kubelet's cgroups (${cgroup_root}/*/kubepods) are on this machine, in use; a second kubelet cannot run beside it"
    fi
    echo "real-node-up: removing the empty kubepods cgroups a stopped kubelet left behind"
    remove_kubepods_cgroups
  fi
  {
    for key in "${recorded_sysctls[@]}"; do
      echo "sysctl ${key} $(sysctl -n "${key}" 2>/dev/null || echo absent)"
    done
    for path in "${recorded_paths[@]}"; do
      echo "path ${path} $([[ -e "${path}" ]] && echo present || echo absent)"
    done
    echo "link ${bridge} $(ip link show "${bridge}" >/dev/null 2>&1 && echo present || echo absent)"
    for table in nat filter; do
      echo "table ip/${table} $(nft list table ip "${table}" >/dev/null 2>&1 && echo present || echo absent)"
    done
    echo "chain nat/${nat_chain} $(chain_exists nat "${nat_chain}" && echo present || echo absent)"
    echo "chain filter/${filter_chain} $(chain_exists filter "${filter_chain}" && echo present || echo absent)"
  } >"${host_before}.tmp"
  mv "${host_before}.tmp" "${host_before}"
fi

# Created now, so that host-changes lists them, rather than with the first
# Pod.
for path in "${recorded_paths[@]}"; do
  mkdir -p "${path}"
done

# --- Configuration ---------------------------------------------------------

mkdir -p "${containerd_dir}" "${kubelet_dir}" "${kubelet_pki}" "${pod_logs_dir}" "${cni_conf_dir}" "${cni_ipam_dir}"
shopt -u patsub_replacement 2>/dev/null || true

# render TEMPLATE OUTPUT NAME=VALUE...: the template with each @NAME@
# replaced; fails if one is left.
render() {
  local template="$1" output="$2" text pair
  shift 2
  text="$(<"${template}")"
  for pair in "$@"; do
    text="${text//@${pair%%=*}@/${pair#*=}}"
  done
  if [[ "${text}" =~ @[A-Z_]+@ ]]; then
    die "${template}: no value for ${BASH_REMATCH[0]}"
  fi
  printf '%s\n' "${text}" >"${output}"
}

# overlayfs where this file system supports it (not on overlayfs itself,
# for one), else containerd's copying "native" snapshotter.
snapshotter=native
probe="$(mktemp -d "${state_dir}/overlay-probe.XXXXXX")"
mkdir "${probe}/lower" "${probe}/upper" "${probe}/work" "${probe}/merged"
if mount -t overlay overlay -o "lowerdir=${probe}/lower,upperdir=${probe}/upper,workdir=${probe}/work" "${probe}/merged" 2>/dev/null; then
  umount "${probe}/merged"
  snapshotter=overlayfs
fi
rm -rf "${probe}"

render "${templates}/containerd.toml" "${containerd_config}" \
  CONTAINERD_DIR="${containerd_dir}" PAUSE_IMAGE="${pause_image}" SNAPSHOTTER="${snapshotter}" CNI_CONF_DIR="${cni_conf_dir}"
render "${templates}/cni.conflist" "${cni_conf_dir}/10-cnat-real-node.conflist" \
  BRIDGE="${bridge}" CNI_IPAM_DIR="${cni_ipam_dir}" POD_CIDR="${pod_cidr}" POD_GATEWAY="${pod_gateway}"
render "${templates}/kubelet.yaml" "${kubelet_config}" \
  CLUSTER_CA="${cluster_pki}/ca.crt" CONTAINERD_SOCKET="${containerd_socket}" POD_LOGS_DIR="${pod_logs_dir}"

# The kubelet's client certificate: system:node:<name> in system:nodes, the
# identity the Node authorizer and NodeRestriction expect, signed by the
# cluster's CA. Renewed when the cluster (its CA) is new or it expires.
cert="${kubelet_pki}/kubelet-client.crt"
key="${kubelet_pki}/kubelet-client.key"
if ! openssl verify -CAfile "${cluster_pki}/ca.crt" "${cert}" >/dev/null 2>&1 ||
  ! openssl x509 -in "${cert}" -noout -checkend 86400 >/dev/null 2>&1; then
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "${key}" \
    -subj "/O=system:nodes/CN=system:node:${node_name}" -out "${kubelet_pki}/kubelet-client.csr" 2>/dev/null
  openssl x509 -req -in "${kubelet_pki}/kubelet-client.csr" -CA "${cluster_pki}/ca.crt" -CAkey "${cluster_pki}/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -out "${cert}" \
    -extfile <(printf 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n') 2>/dev/null
  rm -f "${kubelet_pki}/kubelet-client.csr"
  chmod 600 "${key}"
fi
cat >"${kubelet_kubeconfig}" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: cnat
    cluster:
      server: ${server}
      certificate-authority: ${cluster_pki}/ca.crt
users:
  - name: system:node:${node_name}
    user:
      client-certificate: ${cert}
      client-key: ${key}
contexts:
  - name: kubelet
    context: {cluster: cnat, user: "system:node:${node_name}"}
current-context: kubelet
EOF

# --- Network: the bridge, and the kubernetes Service for Pods ---------------

if ip -4 route show match "${pod_gateway}" | grep -v '^default' | grep -qv "dev ${bridge}"; then
  die "${pod_cidr} is already routed on this machine: choose another with REAL_NODE_POD_CIDR"
fi
ip link show "${bridge}" >/dev/null 2>&1 || ip link add "${bridge}" type bridge
ip addr replace "${pod_gateway}/${pod_prefix}" dev "${bridge}"
ip link set "${bridge}" up
# Pods reach the API server, which listens on 127.0.0.1 only, through the
# kubernetes Service's cluster IP: a DNAT to 127.0.0.1, which the kernel
# accepts from the bridge with route_localnet. The filter chain drops
# anything else from the bridge to 127.0.0.0/8.
sysctl -qw "net.ipv4.conf.${bridge}.route_localnet=1"
chain_exists nat "${nat_chain}" || iptables -t nat -N "${nat_chain}"
iptables -t nat -F "${nat_chain}"
iptables -t nat -A "${nat_chain}" -d "${service_ip}/32" -p tcp --dport "${service_port}" \
  -m comment --comment "cnat real node: default/kubernetes" -j DNAT --to-destination "127.0.0.1:${api_port}"
iptables -t nat -C PREROUTING -i "${bridge}" -j "${nat_chain}" 2>/dev/null ||
  iptables -t nat -A PREROUTING -i "${bridge}" -j "${nat_chain}"
chain_exists filter "${filter_chain}" || iptables -t filter -N "${filter_chain}"
iptables -t filter -F "${filter_chain}"
iptables -t filter -A "${filter_chain}" -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT \
  -m comment --comment "cnat real node: only the DNAT reaches loopback" -j DROP
iptables -t filter -C INPUT -i "${bridge}" -j "${filter_chain}" 2>/dev/null ||
  iptables -t filter -I INPUT -i "${bridge}" -j "${filter_chain}"

# --- containerd and the kubelet --------------------------------------------

# start NAME CONFIG INPUTS COMMAND...: runs COMMAND, whose command line
# names CONFIG, in a session of its own (it outlives this script), unless it
# already runs with the same INPUTS (a hash of its configuration,
# certificates and binary); changed inputs restart it. Sets "started".
start() {
  local name="$1" config="$2" inputs="$3"
  shift 3
  started=false
  if pid_of "${name}" "${config}" >/dev/null && [[ "$(cat "${state_dir}/${name}.inputs" 2>/dev/null)" == "${inputs}" ]]; then
    return
  fi
  stop_process "${name}" "${config}"
  setsid "$@" >>"${state_dir}/${name}.log" 2>&1 </dev/null &
  echo "$!" >"${state_dir}/${name}.pid"
  echo "${inputs}" >"${state_dir}/${name}.inputs"
  started=true
}

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# failed NAME WHAT: the end of NAME's log, and exit.
failed() {
  echo "real-node-up: $1 $2; the end of ${state_dir}/$1.log:" >&2
  tail -n 20 "${state_dir}/$1.log" >&2
  exit 1
}

start containerd "${containerd_config}" "$(hash_of "${containerd_config}" "$(command -v containerd)")" \
  containerd --config "${containerd_config}"
for _ in $(seq 1 100); do
  ctr --address "${containerd_socket}" version >/dev/null 2>&1 && break
  pid_of containerd "${containerd_config}" >/dev/null || failed containerd "exited"
  sleep 0.1
done
ctr --address "${containerd_socket}" version >/dev/null 2>&1 || failed containerd "does not answer on ${containerd_socket}"
echo "real-node-up: containerd $([[ ${started} == true ]] && echo started || echo running) (${snapshotter} snapshotter)"

# Import the images the node needs that containerd does not have yet;
# hack/real-node/images.sh rebuilds and reimports them on demand.
missing=()
images="$(ctr_k8s images ls -q)"
grep -qxF docker.io/library/busybox:1.37 <<<"${images}" || missing+=(busybox)
grep -qxF "${pause_image}" <<<"${images}" || missing+=(pause)
# A new store (after real-node-down.sh) also gets the tarballs imported
# earlier with images.sh FILE.tar.
if [[ ${#missing[@]} -gt 0 ]]; then
  shopt -s nullglob
  missing+=("${images_dir}"/imported/*.tar)
  shopt -u nullglob
  "${root}/hack/real-node/images.sh" "${missing[@]}"
fi

ready() {
  [[ "$(kube get node "${node_name}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
begin="$(date +%s%N)"
start kubelet "${kubelet_config}" \
  "$(hash_of "${kubelet_config}" "${kubelet_kubeconfig}" "${cert}" "${kube_bin}/.kubelet.stamp" - <<<"${node_ip}")" \
  "${kube_bin}/kubelet" --config "${kubelet_config}" --kubeconfig "${kubelet_kubeconfig}" \
  --root-dir "${kubelet_dir}" --cert-dir "${kubelet_dir}/pki" --hostname-override "${node_name}" --node-ip "${node_ip}" \
  --node-labels "${node_label}=true" --v=1
for _ in $(seq 1 600); do
  ready && break
  pid_of kubelet "${kubelet_config}" >/dev/null || failed kubelet "exited"
  sleep 0.1
done
ready || failed kubelet "did not make node ${node_name} Ready within 60s"
if [[ ${started} == true ]]; then
  echo "real-node-up: kubelet started; node ${node_name} Ready after $((($(date +%s%N) - begin) / 1000000)) ms"
else
  echo "real-node-up: kubelet running; node ${node_name} Ready"
fi
# A node registered by an earlier version of this script kept the taint it
# registered with; the kubelet never removes it.
if kube get node "${node_name}" -o jsonpath='{.spec.taints[*].key}' | grep -qwF "${node_label}"; then
  kube taint node "${node_name}" "${node_label}:NoSchedule-" >/dev/null
fi
KUBECONFIG="${cluster_kubeconfig}" place_simulated_nodes

# --- What is different on the host now -------------------------------------

{
  while read -r kind name before; do
    case "${kind}" in
      sysctl)
        now="$(sysctl -n "${name}" 2>/dev/null || echo absent)"
        if [[ "${now}" != "${before}" ]]; then echo "sysctl ${name}: ${before} -> ${now}"; fi
        ;;
      path)
        if [[ "${before}" == absent && -e "${name}" ]]; then echo "directory ${name}: created"; fi
        ;;
      link)
        if [[ "${before}" == absent ]]; then echo "link ${name}: created (${pod_gateway}/${pod_prefix}, route_localnet=1)"; fi
        ;;
      table)
        if [[ "${before}" == absent ]] && nft list table "${name/\// }" >/dev/null 2>&1; then echo "nftables table ${name}: created (by iptables)"; fi
        ;;
      chain)
        if [[ "${before}" == absent ]]; then echo "iptables chain ${name}: created, jumped to for the bridge's traffic"; fi
        ;;
    esac
  done <"${host_before}"
  echo "cgroups: kubepods/ in $(compgen -G "${cgroup_root}/*/kubepods" | wc -l) hierarchies"
  echo "mounts: $(awk -v d="${state_dir}/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l) under ${state_dir}"
  echo "processes: containerd $(pid_of containerd "${containerd_config}"), kubelet $(pid_of kubelet "${kubelet_config}"), a containerd-shim per Pod"
} >"${host_changes}"
echo "real-node-up: host changes (hack/real-node-down.sh undoes them):"
sed 's/^/  /' "${host_changes}"
cat <<EOF
real-node-up: Pods run on node ${node_name} with an image it has (hack/real-node/images.sh:
busybox:1.37, cnat-controller:$(<"${root}/VERSION"); no registry is reachable). To run on the simulated nodes instead:
  nodeSelector: {${simulated_key}: "true"}
  tolerations: [{key: ${simulated_key}, operator: Exists, effect: NoSchedule}]
EOF
