#!/usr/bin/env bash
# make mutate: mutation testing of cnat's core with gremlins (pinned in
# hack/tools/gremlins, built into bin/ by hack/tools.sh). For each package it
# mutates the code (a `<` becomes `<=`, a `==` becomes `!=`, a `+` becomes
# `-`...), one mutant at a time, runs that package's tests on it, and counts
# the mutants the tests kill. It prints one table: killed, lived, not covered,
# timed out, not viable, efficacy (killed / (killed + lived)) and mutant
# coverage ((killed + lived) / (killed + lived + not covered)), then every
# mutant that lived. It fails when a package's efficacy is below its goal.
# docs/mutation.md has the last run and what each surviving mutant means.
#
# Usage: hack/mutate.sh [package...]
#   packages, under internal/: lifecycle scheduler atpod webhook
#   controller/atstatus (the default: all five)
# Environment:
#   MUTATE_WORKERS              mutants tested at once (default 1)
#   MUTATE_TIMEOUT_COEFFICIENT  a mutant's tests time out after this many times
#                               the duration of the package's coverage run
#                               (default 5)
#   MUTATE_OUT                  where the logs and gremlins' JSON reports go
#                               (default tmp/mutate)
#
# Slow: every mutant costs a build and a test run; the webhook's tests start
# an API server (envtest) for each. Not part of make test.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workers="${MUTATE_WORKERS:-1}"
coefficient="${MUTATE_TIMEOUT_COEFFICIENT:-5}"
out="${MUTATE_OUT:-${root}/tmp/mutate}"

all=(lifecycle scheduler atpod webhook controller/atstatus)

# goal prints the efficacy a package must reach (issue 22).
goal() {
  case "$1" in
    lifecycle | scheduler) echo 90 ;;
    atpod | webhook | controller/atstatus) echo 80 ;;
  esac
}

# mutated prints the files of a package that are mutated; empty means all of
# them. In internal/webhook only the At validator is: the conversion webhook
# and the defaulter are not validation.
mutated() {
  case "$1" in
    webhook) echo at_validator.go limits.go dryrun.go fired.go guard.go ;;
  esac
}

# short says whether a package's tests run with -short: TestModel then runs
# 300 random histories instead of 3 000 (1 s instead of 8 s), which is what
# makes a run per mutant affordable. make test runs all 3 000.
short() {
  [[ "$1" == lifecycle ]]
}

if [[ $# -gt 0 ]]; then
  packages=("$@")
else
  packages=("${all[@]}")
fi
for pkg in "${packages[@]}"; do
  if [[ -z "$(goal "${pkg}")" ]]; then
    echo "mutate: unknown package '${pkg}' (known: ${all[*]})" >&2
    exit 2
  fi
done

"${root}/hack/tools.sh" gremlins >/dev/null
gremlins="${root}/bin/gremlins"
# The webhook's tests find kube-apiserver and etcd here (make tools).
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${root}/bin}"
export NO_COLOR=1 GOWORK=off

# gremlins copies the whole module for each worker; the repository holds
# bin/ (the tools, hundreds of MB) and .local/ (a running cluster's state),
# so it works on a copy of the files git knows (tracked, and new ones not
# ignored) instead. Its temporary directories, and those of the tests it
# runs, are under scratch too: a test binary killed at its timeout leaves
# envtest's kube-apiserver and etcd running, and they are found by that path.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/cnat-mutate.XXXXXX")"
src="${scratch}/src"
tmp="${scratch}/tmp"
mkdir -p "${src}" "${tmp}" "${out}"

# stop_leftovers kills the processes whose command line names scratch: the
# API servers and etcds of test binaries that did not stop them.
stop_leftovers() {
  local proc pid
  for proc in /proc/[0-9]*; do
    pid="${proc#/proc/}"
    [[ "${pid}" != "$$" ]] || continue
    if tr '\0' ' ' <"${proc}/cmdline" 2>/dev/null | grep -qF -- "${scratch}/"; then
      kill "${pid}" 2>/dev/null || true
    fi
  done
}
cleanup() {
  stop_leftovers
  rm -rf "${scratch}"
}
trap cleanup EXIT
# gremlins stops at an interrupt and exits 0: stop here too, not at the
# next package.
trap 'exit 130' INT TERM

files=()
while IFS= read -r -d '' f; do
  [[ -f "${root}/${f}" ]] && files+=("${f}")
done < <(git -C "${root}" ls-files -z --cached --others --exclude-standard)
tar -C "${root}" -cf - "${files[@]}" | tar -C "${src}" -xf -

commit="$(git -C "${root}" rev-parse --short HEAD)"
if [[ -n "$(git -C "${root}" status --porcelain -- internal)" ]]; then
  commit+=" (internal/ changed since)"
fi

table=("| package | killed | lived | not covered | timed out | not viable | efficacy | coverage | goal |"
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
survivors=()
failed=()
for pkg in "${packages[@]}"; do
  dir="internal/${pkg}"
  report="${out}/${pkg//\//-}"
  args=(unleash --workers "${workers}" --timeout-coefficient "${coefficient}" --output "${report}.json")
  keep="$(mutated "${pkg}")"
  if [[ -n "${keep}" ]]; then
    # gremlins excludes files by regular expression, so every other file of
    # the package is excluded by name.
    for f in "${src}/${dir}"/*.go; do
      f="$(basename "${f}")"
      [[ "${f}" != *_test.go && " ${keep} " != *" ${f} "* ]] || continue
      args+=(--exclude-files "^${f//./\\.}\$")
    done
  fi
  goflags="${GOFLAGS:-}"
  if short "${pkg}"; then
    goflags+=" -short"
  fi
  echo "mutate: ${dir} (log: ${report}.log)"
  start=${SECONDS}
  status=0
  (cd "${src}" && TMPDIR="${tmp}" GOFLAGS="${goflags}" "${gremlins}" "${args[@]}" "${src}/${dir}") >"${report}.log" 2>&1 || status=$?
  stop_leftovers
  if [[ ${status} -ne 0 ]]; then
    echo "mutate: gremlins failed on ${dir} (exit ${status}):" >&2
    tail -n 20 "${report}.log" >&2
    exit 1
  fi
  # One line per mutant: "<STATUS> <TYPE> at <file>:<line>:<column>".
  read -r killed lived uncovered timedout unviable < <(awk '
    / at [^ ]+:[0-9]+:[0-9]+$/ {
      if ($1 == "KILLED") k++
      else if ($1 == "LIVED") l++
      else if ($1 == "NOT" && $2 == "COVERED") c++
      else if ($1 == "TIMED" && $2 == "OUT") t++
      else if ($1 == "NOT" && $2 == "VIABLE") v++
    }
    END { print k+0, l+0, c+0, t+0, v+0 }' "${report}.log")
  efficacy="$(awk -v k="${killed}" -v l="${lived}" 'BEGIN { if (k + l == 0) print "-"; else printf "%.1f %%", 100 * k / (k + l) }')"
  coverage="$(awk -v k="${killed}" -v l="${lived}" -v c="${uncovered}" 'BEGIN { if (k + l + c == 0) print "-"; else printf "%.1f %%", 100 * (k + l) / (k + l + c) }')"
  table+=("| ${dir} | ${killed} | ${lived} | ${uncovered} | ${timedout} | ${unviable} | ${efficacy} | ${coverage} | ≥ $(goal "${pkg}") % |")
  while read -r _ type _ position; do
    survivors+=("${dir}/${position} ${type}")
  done < <(grep -E '^ *LIVED [A-Z_]+ at ' "${report}.log" | sort -t: -k1,1 -k2,2n -k3,3n)
  if awk -v k="${killed}" -v l="${lived}" -v g="$(goal "${pkg}")" 'BEGIN { exit !(k + l > 0 && 100 * k / (k + l) < g) }'; then
    failed+=("${dir}")
  fi
  echo "mutate: ${dir} done in $((SECONDS - start))s"
done

echo
echo "Mutation testing at ${commit}: gremlins $("${gremlins}" --version | awk '{print $3}'), ${workers} worker(s), timeout coefficient ${coefficient}"
echo
printf '%s\n' "${table[@]}"
echo
if [[ ${#survivors[@]} -gt 0 ]]; then
  echo "Mutants that lived (docs/mutation.md says why each is equivalent):"
  printf '  %s\n' "${survivors[@]}"
else
  echo "No mutant lived."
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "mutate: efficacy below the goal in: ${failed[*]}" >&2
  exit 1
fi
