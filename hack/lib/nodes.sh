# shellcheck shell=bash
# Which nodes of the local cluster a Pod without placement of its own lands
# on (hack/cluster-up.sh, hack/real-node-up.sh, hack/real-node-down.sh,
# hack/run-local.sh). Source it; it defines functions only, and runs kubectl
# against $KUBECONFIG.
#
# Where the real node runs, it is the default: the simulated (kwok) nodes
# carry the label and the taint simulated_key=true:NoSchedule, so only Pods
# that select and tolerate them go there. Where no real node runs, the
# simulated nodes carry only the label and take every Pod.

simulated_key=cnat.programming-kubernetes.info/simulated
real_node_key=cnat.programming-kubernetes.info/real-node

# simulated_nodes prints the names of the nodes kwok plays the kubelet of
# (the annotation kwok.x-k8s.io/node=fake that `kwokctl scale node` sets and
# hack/kwok/kwokctl.yaml selects).
simulated_nodes() {
  kubectl get nodes --no-headers \
    -o 'custom-columns=NAME:.metadata.name,KWOK:.metadata.annotations.kwok\.x-k8s\.io/node' |
    awk '$2 == "fake" { print $1 }'
}

# real_node_ready prints the name of the real node if it is Ready.
real_node_ready() {
  kubectl get nodes --selector "${real_node_key}=true" --no-headers \
    -o 'custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status' |
    awk '$2 == "True" { print $1; found = 1; exit } END { exit !found }'
}

# place_simulated_nodes labels every simulated node, and taints them if the
# real node is Ready or untaints them if not. It prints one line saying
# where Pods without placement of their own now run.
place_simulated_nodes() {
  local nodes real node
  mapfile -t nodes < <(simulated_nodes)
  if [[ ${#nodes[@]} -eq 0 ]]; then
    return 0
  fi
  kubectl label nodes "${nodes[@]}" "${simulated_key}=true" --overwrite >/dev/null
  if real="$(real_node_ready)"; then
    kubectl taint nodes "${nodes[@]}" "${simulated_key}=true:NoSchedule" --overwrite >/dev/null
    echo "nodes: Pods without placement of their own run on the real node ${real};" \
      "the ${#nodes[@]} simulated nodes take only Pods that select and tolerate ${simulated_key}=true"
    return 0
  fi
  for node in "${nodes[@]}"; do
    if kubectl get node "${node}" -o jsonpath='{.spec.taints[*].key}' | grep -qwF "${simulated_key}"; then
      kubectl taint nodes "${node}" "${simulated_key}:NoSchedule-" >/dev/null
    fi
  done
  echo "nodes: no real node; Pods run on the ${#nodes[@]} simulated nodes." \
    "simulated: the command is not executed"
}
