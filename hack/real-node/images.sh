#!/usr/bin/env bash
# Builds container images without Docker (hack/image-build) and imports them
# into the real node's containerd (namespace k8s.io, where the kubelet sees
# them), so Pods run them with imagePullPolicy IfNotPresent or Never:
#
#   busybox          docker.io/library/busybox:1.37, from Debian's static
#                    busybox (cnat's --default-image)
#   pause            registry.k8s.io/pause:3.10.2, from hack/image-build/pause
#                    (containerd's sandbox image)
#   cnat-controller  cnat-controller:<VERSION>, from ./cmd/cnat-controller as
#                    the Dockerfile builds it (kustomize/overlays/local-incluster
#                    deploys that tag, the release in VERSION)
#   FILE.tar         an image tarball made elsewhere (docker save, skopeo
#                    copy, crane pull, hack/image-build; an OCI image index
#                    such as make release's multi-platform
#                    dist/cnat-controller_<v>_image.oci.tar too), imported as
#                    it is and kept in .local/real-node/images/imported, from
#                    where hack/real-node-up.sh imports it again into a new
#                    node; the names it holds are listed
#
# Every image imported is also named repository@digest, so that a Pod that
# pins it by digest (the release's install.yaml) finds it.
#
# Usage: hack/real-node/images.sh [busybox] [pause] [cnat-controller] [FILE.tar...]
# Without names: busybox and pause. Needs the node's containerd running
# (hack/real-node-up.sh). Tarballs stay in .local/real-node/images.
set -euo pipefail

# shellcheck source=hack/real-node/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [[ $# -eq 0 ]]; then
  set -- busybox pause
fi
if ! ctr --address "${containerd_socket}" version >/dev/null 2>&1; then
  echo "images: the real node's containerd is not running: run hack/real-node-up.sh" >&2
  exit 1
fi
snapshotter="$(sed -n 's/^ *snapshotter = "\(.*\)"/\1/p' "${containerd_config}")"

mkdir -p "${images_dir}"
image_build="${images_dir}/image-build"
# hack/image-build is the harness's (the module hack/go.mod).
(cd "${root}/hack" && GOWORK=off go build -o "${image_build}" ./image-build)

# static_build OUT PACKAGE [MODULE_DIR]: a static binary, as the Dockerfile
# builds the controller, of PACKAGE in the module at MODULE_DIR (default: the
# product's, the repository root).
static_build() {
  (cd "${3:-${root}}" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$1" "$2")
}

# tag_by_digest NAME gives the image NAME (repository:tag) a second name,
# repository@digest, and prints it. containerd's CRI finds an image that a
# Pod names by digest (ghcr.io/...@sha256:..., as the release's install.yaml
# pins the controller) only under such a name: a registry pull creates it,
# an import does not. The digest is the imported target's: for an OCI image
# index (the release's multi-platform tarball) the index digest, the one a
# registry serves it under; the CRI then runs this platform's image of it.
tag_by_digest() {
  local name="$1" repository digest
  repository="${name%@*}"
  if [[ "${repository##*/}" == *:* ]]; then
    repository="${repository%:*}"
  fi
  digest="$(ctr_k8s images ls "name==${name}" | awk 'NR == 2 { print $3 }')"
  [[ "${digest}" == sha256:* ]] || { echo "images: no digest for ${name}" >&2; return 1; }
  ctr_k8s images tag --force "${name}" "${repository}@${digest}" >/dev/null
  echo "${repository}@${digest}"
}

for image in "$@"; do
  start=${SECONDS}
  tarball="${images_dir}/${image}.tar"
  case "${image}" in
    *.tar)
      if [[ ! -f "${image}" ]]; then
        echo "images: ${image}: no such file (expected an image tarball: an OCI layout or docker-archive .tar)" >&2
        exit 2
      fi
      mkdir -p "${images_dir}/imported"
      tarball="${images_dir}/imported/$(basename "${image}")"
      [[ "${image}" -ef "${tarball}" ]] || cp "${image}" "${tarball}"
      ;;
    busybox)
      if [[ ! -x /bin/busybox ]] || ! /bin/busybox --list-full >/dev/null 2>&1; then
        echo "images: /bin/busybox is missing or not a full busybox: apt-get install busybox-static" >&2
        exit 1
      fi
      "${image_build}" -tag docker.io/library/busybox:1.37 -o "${tarball}" -busybox /bin/busybox
      ;;
    pause)
      static_build "${images_dir}/pause" ./image-build/pause "${root}/hack"
      "${image_build}" -tag "${pause_image}" -o "${tarball}" -binary "${images_dir}/pause" -user 65535
      ;;
    cnat-controller)
      static_build "${images_dir}/cnat-controller" ./cmd/cnat-controller
      "${image_build}" -tag "docker.io/library/cnat-controller:$(<"${root}/VERSION")" -o "${tarball}" -binary "${images_dir}/cnat-controller" -user 65532
      ;;
    *)
      echo "images: unknown image '${image}' (known: busybox pause cnat-controller, or a FILE.tar to import)" >&2
      exit 2
      ;;
  esac
  imported="$(ctr_k8s images import --snapshotter "${snapshotter}" "${tarball}" | awk '$1 == "unpacking" { print $2 }' | sort -u | paste -sd' ')"
  by_digest=""
  for name in ${imported}; do
    by_digest+=" $(tag_by_digest "${name}")"
  done
  echo "images: ${image} imported ($((SECONDS - start))s)${imported:+: ${imported}; by digest:${by_digest}}"
done
