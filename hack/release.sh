#!/usr/bin/env bash
# Builds everything a tagged release ships into dist/ (make release), and
# checks it (make release-verify). Offline: the tools and the module cache
# must be there already (make release fills them first); this script runs
# with GOPROXY=off and reaches no network.
#
# Usage:
#   hack/release.sh                    build dist/ and verify it
#   hack/release.sh verify             verify dist/ (make release-verify)
#   hack/release.sh plugin-name PATH   goreleaser's post-build hook: put
#                                      kubectl-cnat beside the cnatctl at PATH
#
# The version is VERSION (v0.1.0) when HEAD is tagged with it and the work
# tree is clean, and VERSION-snapshot.<short commit>[.dirty] otherwise; a
# v* tag on HEAD other than VERSION is an error (the overlays pin the
# controller image to VERSION: a release changes VERSION and that pin in
# one commit, then tags it).
#
# dist/ then holds (the assets, each listed in checksums.txt):
#   cnatctl_<version>_<os>_<arch>.tar.gz|.zip   cnatctl and kubectl-cnat (a copy), for
#                                               linux, darwin, windows x amd64, arm64
#   cnat-controller_<version>_image.oci.tar     the controller image: an OCI image
#                                               index for linux/amd64 and linux/arm64,
#                                               as an OCI layout tarball
#   cnat-controller_<version>_image.digest      the index digest (sha256:...)
#   install.yaml                                kustomize/overlays/production with the
#                                               image pinned by that digest
#   cnat.yaml                                   the krew plugin manifest
#   <binary>_<version>_<os>_<arch>.sbom.cdx.json
#                                               a CycloneDX SBOM of each binary
#                                               (cyclonedx-gomod)
#   release-notes.md                            the commits since the previous tag
#   checksums.txt                               SHA-256 of all of the above
# and, not assets: cnat-controller-oci/ (the same layout as a directory, what
# `crane push` pushes) and goreleaser's build directories and metadata.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
export PATH="${root}/bin:${PATH}"
dist="${root}/dist"
image_name="ghcr.io/programming-kubernetes/cnat-controller"

# plugin_name: kubectl-cnat beside cnatctl, the same binary. A copy, not
# the symlink make build makes: krew (v0.4.3) unpacks only directories and
# regular files, and `kubectl krew install` fails on an archive with a
# symlink ("unable to handle file type 50"); a zip has no portable one.
plugin_name() {
  local path="$1"
  case "${path}" in
    *.exe) cp -f "${path}" "$(dirname "${path}")/kubectl-cnat.exe" ;;
    *) cp -f "${path}" "$(dirname "${path}")/kubectl-cnat" ;;
  esac
}

verify() {
  [[ -f "${dist}/checksums.txt" ]] || { echo "release-verify: no ${dist}/checksums.txt: run make release" >&2; exit 1; }
  export GOPROXY=off GOFLAGS=-mod=readonly GOWORK=off
  echo "release-verify: sha256sum -c checksums.txt"
  (cd "${dist}" && sha256sum --strict -c checksums.txt)
  # The image digest in install.yaml, the OCI layout and the digest file
  # agree; every platform archive is in the krew manifest with its hash;
  # every file of dist/ that is an asset is in checksums.txt.
  hack/harness.sh release verify -dist "${dist}" -image "${image_name}" -tag "$(cat VERSION)"
  # krew's own validation of the manifest; its install check would fetch the
  # archives from their release URLs, so krew installs each platform's
  # archive from dist/ instead (--archive: the sha256 checked, the archive
  # unpacked, the bin linked as kubectl-cnat), into a throwaway KREW_ROOT.
  validate-krew-manifest -skip-install -manifest "${dist}/cnat.yaml"
  local krew_root archive name platform kos karch plugin
  krew_root="$(mktemp -d)"
  for archive in "${dist}"/cnatctl_*.tar.gz "${dist}"/cnatctl_*.zip; do
    name="$(basename "${archive}")"
    platform="${name%.tar.gz}" platform="${platform%.zip}"
    karch="${platform##*_}" platform="${platform%_*}" kos="${platform##*_}"
    plugin="kubectl-cnat"
    [[ "${kos}" == windows ]] && plugin="kubectl-cnat.exe"
    KREW_ROOT="${krew_root}/${kos}_${karch}" KREW_OS="${kos}" KREW_ARCH="${karch}" KREW_NO_UPGRADE_CHECK=1 \
      krew install --manifest="${dist}/cnat.yaml" --archive="${archive}" >"${krew_root}/${kos}_${karch}.log" 2>&1 ||
      { cat "${krew_root}/${kos}_${karch}.log" >&2; echo "release-verify: krew install of ${name} failed" >&2; exit 1; }
    [[ -e "${krew_root}/${kos}_${karch}/bin/${plugin}" ]] ||
      { echo "release-verify: krew installed ${name} without bin/${plugin}" >&2; exit 1; }
    echo "release-verify: krew install --manifest=cnat.yaml --archive=${name} (${kos}/${karch}): bin/${plugin}"
  done
  # The binaries say which release they are.
  local version commit os arch tmp out cmd label controller
  version="$(cat "${dist}/version")"
  commit="$(cat "${dist}/commit")"
  os="$(go env GOOS)" arch="$(go env GOARCH)"
  tmp="$(mktemp -d)"
  if [[ -f "${dist}/cnatctl_${version#v}_${os}_${arch}.tar.gz" ]]; then
    tar -xzf "${dist}/cnatctl_${version#v}_${os}_${arch}.tar.gz" -C "${tmp}"
    for cmd in "${tmp}/cnatctl version" "${tmp}/cnatctl --version" "${tmp}/kubectl-cnat --version" \
      "${krew_root}/${os}_${arch}/bin/kubectl-cnat version"; do
      out="$(${cmd})"
      label="${cmd#"${tmp}/"}" label="${label/#"${krew_root}/${os}_${arch}/bin/"/krew\'s }"
      echo "release-verify: ${label}: ${out}"
      [[ "${out}" == "cnatctl ${version} (commit ${commit}, "* ]] || { echo "release-verify: ${label} does not report ${version} and ${commit}" >&2; exit 1; }
    done
  fi
  rm -rf "${tmp}" "${krew_root}"
  if [[ "${os}" == linux ]]; then
    controller=("${dist}"/cnat-controller_linux_"${arch}"*/cnat-controller)
    out="$("${controller[0]}" --version)"
    echo "release-verify: cnat-controller --version: ${out}"
    [[ "${out}" == "cnat-controller ${version} (commit ${commit}, "* ]] || { echo "release-verify: cnat-controller does not report ${version} and ${commit}" >&2; exit 1; }
  fi
  echo "release-verify: dist/ is the release ${version}, image ${image_name}@$(cat "${dist}/cnat-controller_${version#v}_image.digest")"
}

case "${1:-}" in
  plugin-name) plugin_name "$2"; exit 0 ;;
  verify) verify; exit 0 ;;
  "") ;;
  *) echo "usage: hack/release.sh [verify | plugin-name PATH]" >&2; exit 2 ;;
esac

# Offline from here on: a module missing from the cache fails the release
# instead of being downloaded.
export GOPROXY=off GOFLAGS=-mod=readonly GOWORK=off

tag="$(cat VERSION)"
commit="$(git rev-parse HEAD)"
short="$(git rev-parse --short=12 HEAD)"
dirty=""
if [[ -n "$(git status --porcelain)" ]]; then
  dirty=".dirty"
  commit="${commit}-dirty"
fi
tags_here="$(git tag --points-at HEAD --list 'v*')"
if [[ -n "${tags_here}" ]] && ! grep -qxF "${tag}" <<<"${tags_here}"; then
  echo "release: HEAD is tagged ${tags_here//$'\n'/, } but VERSION is ${tag}: a release tag is VERSION" >&2
  exit 1
fi
if grep -qxF "${tag}" <<<"${tags_here}" && [[ -z "${dirty}" ]]; then
  version="${tag}"
else
  version="${tag}-snapshot.${short}${dirty}"
fi
v="${version#v}"
echo "release: ${version} (commit ${commit}) into dist/"

export RELEASE_VERSION="${version}" RELEASE_COMMIT="${commit}" RELEASE_TAG="${tag}"
RELEASE_TIMESTAMP="$(git log -1 --format=%ct HEAD)"
RELEASE_DATE="$(git log -1 --format=%cI HEAD)"
export RELEASE_TIMESTAMP RELEASE_DATE
start=${SECONDS}
goreleaser release --snapshot --clean
echo "release: goreleaser done in $((SECONDS - start))s"
echo "${version}" >"${dist}/version"
echo "${commit}" >"${dist}/commit"

# The controller image from goreleaser's linux binaries.
hack/harness.sh image-build -tag "${image_name}:${tag}" -user 65532 \
  -platform-binary linux/amd64="$(echo "${dist}"/cnat-controller_linux_amd64*/cnat-controller)" \
  -platform-binary linux/arm64="$(echo "${dist}"/cnat-controller_linux_arm64*/cnat-controller)" \
  -annotation org.opencontainers.image.source=https://github.com/programming-kubernetes/cnat \
  -annotation org.opencontainers.image.version="${version}" \
  -annotation org.opencontainers.image.revision="${commit}" \
  -annotation org.opencontainers.image.title=cnat-controller \
  -annotation org.opencontainers.image.description="cnat: at(1) for Kubernetes, the controller" \
  -oci "${dist}/cnat-controller-oci" \
  -o "${dist}/cnat-controller_${v}_image.oci.tar" \
  -digest-file "${dist}/cnat-controller_${v}_image.digest"
digest="$(cat "${dist}/cnat-controller_${v}_image.digest")"

# install.yaml: the production overlay, the image pinned by that digest.
hack/harness.sh release install-yaml -overlay kustomize/overlays/production \
  -image "${image_name}" -digest "${digest}" -version "${version}" -commit "${commit}" \
  -o "${dist}/install.yaml"

cp "${dist}/krew/cnat.yaml" "${dist}/cnat.yaml"

# Release notes: the commits since the previous v* tag (all of them when
# there is none).
if grep -qxF "${tag}" <<<"${tags_here}"; then
  previous="$(git describe --tags --abbrev=0 --match 'v*' HEAD^ 2>/dev/null || true)"
else
  previous="$(git describe --tags --abbrev=0 --match 'v*' HEAD 2>/dev/null || true)"
fi
{
  echo "# cnat ${version}"
  echo
  echo "Commit ${commit}. Controller image \`${image_name}@${digest}\` (linux/amd64, linux/arm64)."
  echo
  echo "## Install"
  echo
  echo '```sh'
  echo "kubectl apply --server-side -f https://github.com/programming-kubernetes/cnat/releases/download/${tag}/install.yaml"
  echo '```'
  echo
  echo "It needs cert-manager in the cluster. Verify the assets with \`sha256sum -c checksums.txt\` and their signatures with cosign (docs/release.md)."
  echo
  if [[ -n "${previous}" ]]; then
    echo "## Changes since ${previous}"
    range="${previous}..HEAD"
  else
    echo "## Changes (all commits: no earlier release)"
    range="HEAD"
  fi
  echo
  git log --no-merges --format='- %h %s' "${range}"
} >"${dist}/release-notes.md"

# checksums.txt over every asset.
(
  cd "${dist}"
  sha256sum -- cnatctl_"${v}"_*.tar.gz cnatctl_"${v}"_*.zip \
    "cnat-controller_${v}_image.oci.tar" "cnat-controller_${v}_image.digest" \
    install.yaml cnat.yaml ./*.sbom.cdx.json release-notes.md |
    sed 's#  \./#  #' >checksums.txt
)

echo "release: dist/ in $((SECONDS - start))s; image ${image_name}@${digest}"
verify
