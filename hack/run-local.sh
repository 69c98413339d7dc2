#!/usr/bin/env bash
# The newcomer's first run (make run): runs the controller on the host
# against the local cluster that `make install` set up, its webhooks served
# at https://localhost:9443 (the local overlay points the API server there),
# then creates the sample At "hello" a few seconds ahead, shows its phases as
# they change and, once it finished, what its command printed (read back
# from its Pod with cnatctl logs), and the commands to try next. The
# controller then stays in the foreground, its log following; Ctrl-C stops
# it.
#
# Where the real node runs (hack/real-node-up.sh), the sample's Pod runs
# there and its command really runs. Where not, the Pod goes to a simulated
# node, and this script says so at start-up and at the sample: the command
# is not executed. What it prints about the sample is read from the cluster
# (the node the Pod ran on, its log), never assumed.
#
# A controller of an earlier make run that still answers on 127.0.0.1:8081
# is used rather than a second one started.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KUBECONFIG="${root}/.local/kubeconfig"
# kubectl of the cluster's Kubernetes (KUBE_VERSION), the rest from bin/.
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"
export PATH="${kube_bin}:${root}/bin:${PATH}"
log="${root}/.local/run-controller.log"
# shellcheck source=hack/lib/controller.sh
source "${root}/hack/lib/controller.sh"
# shellcheck source=hack/lib/nodes.sh
source "${root}/hack/lib/nodes.sh"

if [[ ! -f "${KUBECONFIG}" ]]; then
  echo "run-local: ${KUBECONFIG} missing: run make cluster" >&2
  exit 1
fi

# --- Where Ats run ----------------------------------------------------------

simulated_line="simulated: the command is not executed"
if real_node="$(real_node_ready)"; then
  echo "run-local: real: an At without placement of its own runs on node ${real_node} (containerd, runc): its command really runs"
else
  echo "run-local: ${simulated_line} — there is no real node (make cluster says why: it needs Linux and root, and CNAT_REAL_NODE=0 turns it off); Pods go to kwok's simulated nodes, which report exit code 0 after a second"
fi

# --- The controller ---------------------------------------------------------

controller=""
watcher=""
stop() {
  if [[ -n "${watcher}" ]]; then kill "${watcher}" 2>/dev/null || true; fi
  if [[ -n "${controller}" ]]; then
    kill "${controller}" 2>/dev/null || true
    wait "${controller}" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if status="$(readyz)" && [[ "${status}" == *" 200 "* ]]; then
  echo "run-local: a controller already answers on 127.0.0.1:8081 (an earlier make run): using it"
else
  echo "run-local: starting the controller (log: ${log#"${root}/"})"
  # The local node has no registry to pull from: a container that names no
  # pull policy is never pulled, so an image the node lacks fails at once
  # with ErrImageNeverPull instead of retrying a pull.
  start_host_controller --zap-encoder=console --image-pull-policy=Never >"${log}" 2>&1
  controller=${controller_pid}
  # Ready means the webhook certificate is in place and the webhooks serve.
  wait_ready "${controller}" "${log}"
fi

# --- The sample At ----------------------------------------------------------

# sample creates the At "hello", shows its status as it changes and then
# what its command printed. It reports its own failures and returns 1
# rather than exiting: what goes wrong while showing the sample (a log that
# cannot be read, an At that does not finish in time) is told, and the
# controller started above keeps running for the next At.
sample() {
  local schedule columns line previous="" phase="" reason exit_code pod message deadline node annotation labels output
  # Nodes added since make cluster (kwokctl scale node) are marked like the
  # others before the sample picks one.
  place_simulated_nodes | sed 's/^/run-local: /'
  schedule="$(date -u -d '+5 seconds' +%Y-%m-%dT%H:%M:%SZ)"
  kubectl delete at hello --ignore-not-found --wait=true >/dev/null || return 1
  kubectl apply -f - >/dev/null <<YAML || return 1
apiVersion: cnat.programming-kubernetes.info/v1beta1
kind: At
metadata:
  name: hello
  namespace: default
spec:
  schedule: "${schedule}"
  command: echo "Hello from cnat, in Pod \$(hostname)"
YAML
  echo "run-local: created the At \"hello\": schedule ${schedule}, command: echo \"Hello from cnat, in Pod \$(hostname)\""
  echo "run-local: its status as it changes (kubectl get at hello --watch):"

  # Each change of the At's status, until it has finished or two minutes
  # have passed: phase, reason, exit code, Pod, message (the only field
  # with spaces, so last).
  columns='PHASE:.status.phase,REASON:.status.reason,EXIT:.status.exitCode,POD:.status.podName,MESSAGE:.status.message'
  exec {watch}< <(kubectl get at hello --watch --no-headers --output "custom-columns=${columns}")
  watcher=$!
  row TIME PHASE REASON "EXIT CODE" POD MESSAGE
  deadline=$((SECONDS + 120))
  while ((SECONDS < deadline)) && IFS= read -r -t $((deadline - SECONDS)) line <&"${watch}"; do
    line="${line//<none>/-}"
    [[ "${line}" == "${previous}" ]] && continue
    previous="${line}"
    read -r phase reason exit_code pod message <<<"${line}"
    row "$(date +%T)" "${phase}" "${reason}" "${exit_code}" "${pod}" "${message}"
    case "${phase}" in Succeeded | Failed | Missed) break ;; esac
  done
  kill "${watcher}" 2>/dev/null || true
  exec {watch}<&-
  watcher=""

  case "${phase}" in
    Succeeded | Failed | Missed) ;;
    *)
      echo "run-local: the At has not finished within two minutes; kubectl describe at hello says why" >&2
      return 1
      ;;
  esac
  if [[ "${phase}" != Succeeded ]]; then
    echo "run-local: it ended ${phase}: $(kubectl get at hello -o jsonpath='{.status.reason}: {.status.message}')"
  fi

  pod="$(kubectl get at hello -o jsonpath='{.status.podName}')" || return 1
  [[ -n "${pod}" ]] || return 0
  node="$(kubectl get pod "${pod}" -o jsonpath='{.spec.nodeName}')" || return 1
  # Simulated is what kwok plays the kubelet of (its annotation), whether or
  # not the node was labelled.
  annotation="$(kubectl get node "${node}" -o jsonpath='{.metadata.annotations.kwok\.x-k8s\.io/node}')" || return 1
  labels="$(kubectl get node "${node}" -o jsonpath='{.metadata.labels}')" || return 1
  if [[ "${annotation}" == fake ]]; then
    echo "run-local: ${simulated_line}: Pod ${pod} went to the simulated node ${node}, which ran nothing, printed nothing and reported exit code 0"
    return 0
  fi
  if [[ "${labels}" == *"\"${real_node_key}\":\"true\""* ]]; then
    echo "run-local: its output (cnatctl logs hello: the log of Pod ${pod} on the real node ${node}):"
  else
    echo "run-local: Pod ${pod} ran on node ${node}; its output (cnatctl logs hello):"
  fi
  if ! output="$(cnatctl logs hello 2>&1)"; then
    echo "run-local: cnatctl logs hello could not read it: ${output}" >&2
    return 1
  fi
  sed 's/^/  | /' <<<"${output}"
}

row() { printf '  %-8s  %-9s  %-16s  %-9s  %-24s  %s\n' "$@"; }

sample_ok=true
if ! sample; then
  sample_ok=false
  echo "run-local: the sample did not complete (said above)." >&2
fi

cat <<EOF

Next, in another shell:
  export KUBECONFIG=${KUBECONFIG} PATH=${root}/bin:\$PATH
  cnatctl at +1m -- 'echo hi; exit 3'   # your command, in a minute (prints the At's name)
  cnatctl get -o wide                   # your Ats: phase, exit code, Pod
  cnatctl logs <at>                     # what its command printed
  kubectl get ats -w                    # watch them change
EOF

if [[ -z "${controller}" ]]; then
  [[ "${sample_ok}" == true ]]
  exit
fi
echo
echo "run-local: the controller keeps running; its log follows (${log#"${root}/"}). Ctrl-C stops it."
tail -n 0 -f --pid "${controller}" "${log}" &
watcher=$!
wait "${controller}" || true
