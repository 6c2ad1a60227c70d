#!/usr/bin/env bash
# Onboard one host: install rocmkit into a venv, install the torch/triton
# builds that fit this machine, run the doctor and keep its reports.
#
#   scripts/onboard-node.sh [--venv DIR] [--level N] [--out DIR] [--from SPEC] [-- INSTALL_ARGS...]
#
#   --venv DIR   the virtual environment to create or reuse (default ~/.venvs/rocmkit)
#   --level N    doctor level 0-3 (default 2: kernels and performance)
#   --out DIR    where the reports go (default ./rocmkit-reports)
#   --from SPEC  what pip installs rocmkit from (default: the checkout this script is in)
#   -- ARGS      passed on to `rocmkit install` (e.g. -- --torch 2.5 --backend rocm6.2)
#
# Writes OUT/<host>.json (rocmkit.report/1), OUT/<host>.xml (JUnit) and
# OUT/<host>.prom (node_exporter textfile). Exit status: the doctor's (0 pass,
# 1 a check failed, 2 warnings only, 3 a check could not run); 4 bad arguments;
# the failing step's own status when setup fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=${HOME}/.venvs/rocmkit
level=2
out=./rocmkit-reports
from=$(dirname "$here")
install_args=()

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
# A missing value is bad arguments (exit 4, as documented), not a shell error.
need() {
  if [ -z "${2:-}" ]; then
    echo "error: $1 needs $3 (fix: see $0 --help)" >&2
    exit 4
  fi
}
while [ "$#" -gt 0 ]; do
  case $1 in
    --venv) need "$1" "${2:-}" "a folder"; venv=$2; shift 2 ;;
    --level) need "$1" "${2:-}" "0-3"; level=$2; shift 2 ;;
    --out) need "$1" "${2:-}" "a folder"; out=$2; shift 2 ;;
    --from) need "$1" "${2:-}" "a pip requirement or path"; from=$2; shift 2 ;;
    --) shift; install_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown option $1 (fix: see $0 --help)" >&2; exit 4 ;;
  esac
done
case $level in
  0|1|2|3) ;;
  *) echo "error: --level must be 0-3, not $level" >&2; exit 4 ;;
esac

host=$(hostname -s)
mkdir -p "$out"
step() { echo "== $*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
  step "creating $venv"
  python3 -m venv "$venv"
fi
step "installing rocmkit from $from"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$from"
rocmkit=$venv/bin/rocmkit

step "what this machine has"
"$rocmkit" detect >&2
step "installing the torch/triton builds that fit"
"$rocmkit" install --venv "$venv" ${install_args[@]+"${install_args[@]}"}

step "doctor, level $level"
rc=0
"$rocmkit" doctor --level "$level" --json \
  --report junit="$out/$host.xml" --report prom="$out/$host.prom" > "$out/$host.json" || rc=$?
"$rocmkit" fleet summarize "$out/$host.json" >&2
step "reports: $out/$host.json, $out/$host.xml, $out/$host.prom (doctor exit $rc)"
exit "$rc"
