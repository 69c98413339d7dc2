# shellcheck shell=bash
# kwokctl's structured log, said the way the local cluster's scripts speak
# (hack/cluster-up.sh, hack/cluster-down.sh). Source it; needs ${root}.
#
# kwokctl_said PREFIX reads kwokctl's output on stdin, keeps every line
# whole in .local/kwokctl.log (for when it fails), and says each of its JSON
# records in one line, "PREFIX: kwokctl: <msg> (<elapsed>)"; a line that is
# not one of its records is shown as it is.

kwok_log="${root}/.local/kwokctl.log"

kwokctl_said() {
  local prefix="$1" line msg elapsed
  mkdir -p "$(dirname "${kwok_log}")"
  while IFS= read -r line; do
    printf '%s\n' "${line}" >>"${kwok_log}"
    msg="$(sed -n 's/.*"msg":"\(\([^"\\]\|\\.\)*\)".*/\1/p' <<<"${line}")"
    if [[ -z "${msg}" ]]; then
      printf '%s\n' "${line}"
      continue
    fi
    elapsed="$(sed -n 's/.*"elapsed":"\([^"]*\)".*/ (\1)/p' <<<"${line}")"
    echo "${prefix}: kwokctl: ${msg}${elapsed}"
  done
}
