#!/usr/bin/env bash
# Builds the command-line tools the project develops against from source into
# bin/: the Kubernetes control plane, etcd and kwok, and on demand the linters,
# gremlins (make mutate), promtool (make test-monitoring) and the release tools
# (make release: goreleaser, cyclonedx-gomod, krew and its validate-krew-manifest)
# and cert-manager (make e2e-release: its controllers and cainjector, wired
# by hack/tools/cert-manager/main.go, since its commands are not served).
# Each tool is pinned by a Go module under hack/tools/<module>/; bin/.<name>.stamp records the pin a binary
# was built from, so a binary is only rebuilt when its pin changes.
#
# Usage: [KUBE_VERSION=vX.Y.Z] hack/tools.sh [name...]
# Without names it builds the default set; kubelet, the linters, gremlins,
# promtool, the release tools and cert-manager are only built when named.
# KUBE_VERSION chooses the Kubernetes of kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kubelet among those a hack/tools/kubernetes*
# module pins (hack/lib/kube-version.sh); any but the default is built into
# bin/k8s/<version>/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${root}/bin"
# shellcheck source=hack/lib/kube-version.sh
source "${root}/hack/lib/kube-version.sh"

default_tools=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)

# module_of prints the tools module (a directory under hack/tools/) that pins
# a tool; package_of prints the tool's main package.
module_of() {
  case "$1" in
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet) echo kubernetes ;;
    etcd) echo etcd ;;
    kwok | kwokctl) echo kwok ;;
    golangci-lint) echo golangci-lint ;;
    actionlint) echo actionlint ;;
    gremlins) echo gremlins ;;
    kube-score) echo kube-score ;;
    golangci-lint-kube-api-linter) echo kube-api-linter ;;
    promtool) echo promtool ;;
    goreleaser) echo goreleaser ;;
    cyclonedx-gomod) echo cyclonedx-gomod ;;
    validate-krew-manifest | krew) echo krew ;;
    cert-manager) echo cert-manager ;;
    *) return 1 ;;
  esac
}

package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok | kwokctl) echo "sigs.k8s.io/kwok/cmd/$1" ;;
    golangci-lint) echo github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
    actionlint) echo github.com/rhysd/actionlint/cmd/actionlint ;;
    gremlins) echo github.com/go-gremlins/gremlins/cmd/gremlins ;;
    kube-score) echo github.com/zegl/kube-score/cmd/kube-score ;;
    golangci-lint-kube-api-linter) echo sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter ;;
    promtool) echo github.com/prometheus/prometheus/cmd/promtool ;;
    goreleaser) echo github.com/goreleaser/goreleaser/v2 ;;
    cyclonedx-gomod) echo github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod ;;
    validate-krew-manifest) echo sigs.k8s.io/krew/cmd/validate-krew-manifest ;;
    krew) echo sigs.k8s.io/krew/cmd/krew ;;
    # The tools module's own main package (main.go beside its go.mod).
    cert-manager) echo github.com/programming-kubernetes/cnat/hack/tools/cert-manager ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

# pinned_module prints the module whose version a tools module pins.
pinned_module() {
  case "$1" in
    kubernetes) echo k8s.io/kubernetes ;;
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok) echo sigs.k8s.io/kwok ;;
    golangci-lint) echo github.com/golangci/golangci-lint/v2 ;;
    actionlint) echo github.com/rhysd/actionlint ;;
    gremlins) echo github.com/go-gremlins/gremlins ;;
    kube-score) echo github.com/zegl/kube-score ;;
    kube-api-linter) echo sigs.k8s.io/kube-api-linter ;;
    promtool) echo github.com/prometheus/prometheus ;;
    goreleaser) echo github.com/goreleaser/goreleaser/v2 ;;
    cyclonedx-gomod) echo github.com/CycloneDX/cyclonedx-gomod ;;
    krew) echo sigs.k8s.io/krew ;;
    cert-manager) echo github.com/cert-manager/cert-manager ;;
  esac
}

# ldflags prints the linker flags for a tools module at a version, stamping
# the version the way the upstream release builds do.
ldflags() {
  local module="$1" version="$2"
  local flags="-s -w"
  case "${module}" in
    kubernetes)
      local major minor pkg
      IFS=. read -r major minor _ <<<"${version#v}"
      for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
        flags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=${major}"
        flags+=" -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
      done
      ;;
    kwok)
      flags+=" -X sigs.k8s.io/kwok/pkg/consts.Version=${version}"
      ;;
    gremlins | kube-score | goreleaser)
      flags+=" -X main.version=${version}"
      ;;
    promtool)
      # What `promtool --version` prints, as Prometheus's release builds
      # stamp it.
      flags+=" -X github.com/prometheus/common/version.Version=${version#v}"
      ;;
    krew)
      flags+=" -X sigs.k8s.io/krew/internal/version.gitTag=${version}"
      ;;
  esac
  echo "${flags}"
}

# buildtags prints the build tags of a tools module.
buildtags() {
  case "$1" in
    # Without the service discovery plugins of every cloud (Prometheus's
    # own tag; promtool keeps file, http and kubernetes discovery): they
    # are most of its dependencies, and checking and testing rules needs
    # none of them.
    promtool) echo remove_all_sd ;;
  esac
}

if [[ $# -gt 0 ]]; then
  tools=("$@")
else
  tools=("${default_tools[@]}")
fi
for name in "${tools[@]}"; do
  if ! module_of "${name}" >/dev/null; then
    echo "tools: unknown tool '${name}' (known: ${default_tools[*]} kubelet golangci-lint actionlint gremlins kube-score golangci-lint-kube-api-linter promtool goreleaser cyclonedx-gomod validate-krew-manifest krew cert-manager)" >&2
    exit 2
  fi
done

mkdir -p "${bin}"
staging=""
trap '[[ -z "${staging}" ]] || rm -rf "${staging}"' EXIT

# Static binaries, as the upstream releases build them; no C toolchain needed.
# GOWORK=off keeps a go.work elsewhere in the tree out of the tools modules.
export GOWORK=off CGO_ENABLED=0

for module in kubernetes etcd kwok golangci-lint actionlint gremlins kube-score kube-api-linter promtool goreleaser cyclonedx-gomod krew cert-manager; do
  wanted=()
  for name in "${tools[@]}"; do
    if [[ "$(module_of "${name}")" == "${module}" ]]; then
      wanted+=("${name}")
    fi
  done
  if [[ ${#wanted[@]} -eq 0 ]]; then
    continue
  fi

  dir="${root}/hack/tools/${module}"
  out="${bin}"
  if [[ "${module}" == kubernetes ]]; then
    dir="${kube_module}"
    out="${kube_bin}"
  fi
  version="$(cd "${dir}" && go list -m -f '{{.Version}}' "$(pinned_module "${module}")")"
  flags="$(ldflags "${module}" "${version}")"
  tags="$(buildtags "${module}")"
  # The stamp changes whenever the pin, any dependency, the flags, the tags
  # or the module's own code (a main.go; tools.go only names what is built)
  # change.
  sources=()
  for file in "${dir}"/*.go; do
    [[ "$(basename "${file}")" == tools.go ]] || sources+=("${file}")
  done
  stamp="${version} $(cat "${dir}/go.mod" "${dir}/go.sum" ${sources[@]+"${sources[@]}"} - <<<"${flags}${tags:+ -tags ${tags}}" | sha256sum | cut -d' ' -f1)"

  build=()
  for name in "${wanted[@]}"; do
    if [[ -x "${out}/${name}" && "$(cat "${out}/.${name}.stamp" 2>/dev/null)" == "${stamp}" ]]; then
      echo "tools: ${name} ${version} (cached)"
    else
      build+=("${name}")
    fi
  done
  if [[ ${#build[@]} -eq 0 ]]; then
    continue
  fi

  packages=()
  for name in "${build[@]}"; do
    packages+=("$(package_of "${name}")")
  done
  # Build into a staging directory and rename into place, so that a binary a
  # running cluster executes is replaced rather than overwritten.
  mkdir -p "${out}"
  staging="$(mktemp -d "${out}/.build.XXXXXX")"
  # With several packages go build names each binary after its package; a
  # single package (etcd's is go.etcd.io/etcd/server/v3) gets an explicit name.
  output="${staging}/"
  if [[ ${#build[@]} -eq 1 ]]; then
    output="${staging}/${build[0]}"
  fi
  start=${SECONDS}
  (cd "${dir}" && go build -trimpath -ldflags "${flags}" ${tags:+-tags "${tags}"} -o "${output}" "${packages[@]}")
  for name in "${build[@]}"; do
    mv -f "${staging}/${name}" "${out}/${name}"
    echo "${stamp}" >"${out}/.${name}.stamp"
    echo "tools: ${name} ${version} (built in $((SECONDS - start))s)"
  done
  rm -rf "${staging}"
  staging=""
done
