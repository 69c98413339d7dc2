#!/usr/bin/env bash
# make lint: kube-score (pinned in hack/tools/kube-score) on every overlay
# in kustomize/overlays, rendered as cnatctl applies it. Warnings fail too.
# A new overlay is scored with no exception until one is written down here.
#
# Usage: hack/kube-score.sh [overlay...]   (default: every overlay)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Checks kube-score leaves optional, held here as well.
optional=(
  container-seccomp-profile # RuntimeDefault, as the restricted level asks
  container-ports-check     # named, unique container ports
)

# Deliberate exceptions, for every overlay, each with its reason.
every=(
  # No CPU limit on the controller, on purpose: it works in bursts (every
  # At due at one instant is fired at once) and a CFS quota would make
  # those runs late while the node has CPU to spare. Its CPU request
  # reserves its share; memory and ephemeral storage are limited
  # (kustomize/base/manager/deployment.yaml).
  --ignore-container-cpu-limit
  # imagePullPolicy is not Always: the image is pinned to a release tag
  # (VERSION; TestOverlayImages refuses latest or no tag), so pulling on
  # every start would only make each restart depend on the registry; the
  # kind and local-incluster overlays load the image into their nodes and
  # must never pull it.
  --ignore-test container-image-pull-policy
)

# Deliberate exceptions of one overlay.
declare -A overlay_ignores=(
  # Test clusters with one controller: a second replica would only wait
  # for the leader's lease. production runs two.
  [kind]="deployment-replicas"
  [local-incluster]="deployment-replicas"
  # production spreads its replicas with topologySpreadConstraints on
  # kubernetes.io/hostname, whenUnsatisfiable DoNotSchedule
  # (overlays/production/manager.yaml), which keeps two on one node as a
  # required podAntiAffinity would; kube-score does not read spread
  # constraints.
  [production]="deployment-has-host-podantiaffinity"
  # production with components/monitoring: the same Deployment. The
  # component's ServiceMonitor, PrometheusRule, ClusterRoleBinding and
  # dashboard ConfigMap are kinds kube-score has no checks for.
  [production-monitoring]="deployment-has-host-podantiaffinity"
)

"${root}/hack/tools.sh" kube-score >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
(cd "${root}" && go build -o "${work}/cnatctl" ./cmd/cnatctl)

if [[ $# -gt 0 ]]; then
  overlays=("$@")
else
  overlays=()
  for dir in "${root}"/kustomize/overlays/*/; do
    overlays+=("$(basename "${dir}")")
  done
fi

failed=()
for overlay in "${overlays[@]}"; do
  args=(--exit-one-on-warning "${every[@]}")
  for test in "${optional[@]}"; do
    args+=(--enable-optional-test "${test}")
  done
  for test in ${overlay_ignores[${overlay}]:-}; do
    args+=(--ignore-test "${test}")
  done
  rendered="${work}/${overlay}.yaml"
  "${work}/cnatctl" build -k "${root}/kustomize/overlays/${overlay}" >"${rendered}"
  echo "kube-score: kustomize/overlays/${overlay}"
  if ! "${root}/bin/kube-score" score "${args[@]}" "${rendered}"; then
    failed+=("${overlay}")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "kube-score: failed for ${failed[*]}: fix the manifests, or write the exception and its reason into hack/kube-score.sh" >&2
  exit 1
fi
