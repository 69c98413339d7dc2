#!/usr/bin/env bash
# Stops and deletes "cnat", the local development cluster started by
# hack/cluster-up.sh, with all its state in .local/. Does nothing if there is
# no cluster.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster=cnat
kubeconfig="${root}/.local/kubeconfig"
export KWOK_WORKDIR="${root}/.local/kwok"
# shellcheck source=hack/lib/kwokctl-log.sh
source "${root}/hack/lib/kwokctl-log.sh"

if [[ -d "${KWOK_WORKDIR}/clusters/${cluster}" ]]; then
  if [[ ! -x "${root}/bin/kwokctl" ]]; then
    echo "cluster-down: bin/kwokctl missing: run make tools" >&2
    exit 1
  fi
  # Appended to the log of the create, each record said in one line.
  "${root}/bin/kwokctl" --name "${cluster}" delete cluster --kubeconfig "${kubeconfig}" 2>&1 | kwokctl_said cluster-down
  echo "cluster-down: cluster ${cluster} deleted"
else
  echo "cluster-down: no cluster ${cluster}"
fi
rm -f "${kubeconfig}"
