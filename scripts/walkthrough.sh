#!/usr/bin/env bash
# The README's command lines, in its order, in a throwaway folder, as a new user runs them:
# each line's exit code and the output it promises are checked (a failed check exits 1).
#
#   bash scripts/walkthrough.sh          the lines that download nothing (CI runs this, through
#                                        tests/integration/test_readme.py): a fresh copy of this
#                                        checkout, a fresh .venv with this checkout's rocmkit in it
#                                        (WALKTHROUGH_ROCMKIT, default .venv/bin/rocmkit), the
#                                        planned index a dead port on 127.0.0.1
#   bash scripts/walkthrough.sh --full   the README's main line itself, from a fresh copy: pip
#                                        installs rocmkit from the indexes, then the main job
#                                        (with --fallback-index where download.pytorch.org does not
#                                        answer, as the README says); prints its time and
#                                        `du -sh .venv`, the figures the README quotes
#                                        (benchmarks/first-run.md records them)
#
# Each README line it runs is printed first as "walkthrough: $ LINE" (the README's command, less
# its comment); test_readme.py holds every README line to being run here, there, or listed with
# why not.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
full=0
[ "${1:-}" = "--full" ] && full=1
work=$(mktemp -d "${TMPDIR:-/tmp}/rocmkit-walkthrough.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" ROCMKIT_CACHE_DIR="$work/home/.cache/rocmkit"
mkdir -p "$HOME"

fail() {
  echo "walkthrough: FAILED: $*" >&2
  exit 1
}
# say LINE: the README line about to run (the test matches it against the README).
say() { echo "walkthrough: \$ $1"; }
# expect CODE WHAT-THE-OUTPUT-MUST-HOLD COMMAND...: run it, keep its output in $work/out.
expect() {
  local code=$1 holds=$2 got=0
  shift 2
  "$@" >"$work/out" 2>&1 || got=$?
  [ "$got" = "$code" ] || { cat "$work/out" >&2; fail "exit $got, not $code: $*"; }
  [ -z "$holds" ] || grep -qF -- "$holds" "$work/out" || { cat "$work/out" >&2; fail "no '$holds' in the output of: $*"; }
}

# A fresh copy of this checkout (what `git clone` gives: tracked and new files, nothing ignored;
# without git, everything but the venvs, caches and .git).
mkdir "$work/rocmkit"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$repo" ls-files -co --exclude-standard -z | (cd "$repo" && xargs -0 cp --parents -t "$work/rocmkit")
else
  tar -C "$repo" --exclude=./.git --exclude='./.venv*' --exclude='*/__pycache__' --exclude='./.*_cache' -cf - . \
    | tar -C "$work/rocmkit" -xf -
fi
cd "$work/rocmkit"

if [ "$full" = 1 ]; then
  # The main line exactly; where the planned index does not answer, the README's next line
  # (--fallback-index). Timed whole, from nothing to the doctor's verdict.
  line='python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/rocmkit install --venv .venv && .venv/bin/rocmkit doctor --venv .venv --level 2'
  say "$line"
  start=$(date +%s)
  python3 -m venv .venv
  .venv/bin/pip install -q -e .
  got=0
  .venv/bin/rocmkit install --venv .venv 2>"$work/install.err" || got=$?
  if [ "$got" = 9 ]; then
    grep -q -- "--fallback-index" "$work/install.err" || fail "exit 9 without the --fallback-index fix"
    echo "walkthrough: the planned index does not answer here: the README's note, --fallback-index"
    .venv/bin/rocmkit install --venv .venv --fallback-index
  elif [ "$got" != 0 ]; then
    cat "$work/install.err" >&2
    fail "install: exit $got"
  fi
  got=0
  .venv/bin/rocmkit doctor --venv .venv --level 2 || got=$?
  # 2: warnings only (a CPU machine has no GPU to check); 1 or 3 is a broken environment.
  [ "$got" = 0 ] || [ "$got" = 2 ] || fail "doctor: exit $got"
  end=$(date +%s)
  echo "walkthrough: main line: $((end - start)) s; .venv: $(du -sh .venv | cut -f1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  say "source .venv/bin/activate"
  # shellcheck disable=SC1091
  source .venv/bin/activate
  expect 0 "rocmkit, version" rocmkit --version
  echo "walkthrough: ok"
  exit 0
fi

# The setup line's pip install needs the indexes (--full runs it): here the fresh .venv gets
# this checkout's rocmkit, already installed, and the planned index is a dead port.
rocmkit_bin=${WALKTHROUGH_ROCMKIT:-$repo/.venv/bin/rocmkit}
[ -x "$rocmkit_bin" ] || fail "no rocmkit at $rocmkit_bin (run scripts/test.sh first, or set WALKTHROUGH_ROCMKIT)"
python3 -m venv .venv
ln -s "$rocmkit_bin" .venv/bin/rocmkit
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROCMKIT_INDEX_BASE="http://127.0.0.1:$dead/whl" PIP_INDEX_URL="http://127.0.0.1:$dead/simple"

say ".venv/bin/rocmkit install --venv .venv"
expect 9 "fix: rocmkit install --venv .venv --fallback-index" .venv/bin/rocmkit install --venv .venv
# What is wrong first, then the fixes, the useful one (--fallback-index) first; no long line.
grep -m1 -q "^error: package index $ROCMKIT_INDEX_BASE" "$work/out" || fail "exit 9 does not open with the index"
grep -m1 '^fix: ' "$work/out" | grep -q -- "--fallback-index" || { cat "$work/out" >&2; fail "--fallback-index is not the first fix"; }
! grep -E '^(error|fix): ' "$work/out" | awk 'length > 160' | grep -q . || fail "an error line over 160 characters"
! compgen -G ".venv/lib/python3*/site-packages/torch" >/dev/null || fail "exit 9 left torch behind"

say "source .venv/bin/activate"
# shellcheck disable=SC1091
source .venv/bin/activate
expect 0 "rocmkit, version" rocmkit --version
# The README's "Getting started" lines that change nothing (the plan from rocmkit's data: offline).
say "rocmkit detect"
expect 0 "" rocmkit detect
say "rocmkit resolve"
ROCMKIT_OFFLINE=1 expect 0 "torch" rocmkit resolve
say "rocmkit resolve --json"
ROCMKIT_OFFLINE=1 expect 0 '"schema": "rocmkit.plan/1"' rocmkit resolve --json
say "rocmkit docker render --backend cpu --output Dockerfile"
expect 0 "next: docker build -f Dockerfile" rocmkit docker render --backend cpu --output Dockerfile
grep -q "^#   docker build -f Dockerfile " Dockerfile || fail "the Dockerfile's build line names another file"
# A failed write leaves no file: --output into a folder that does not exist.
expect 4 "error: " rocmkit docker render --backend cpu --output no-such-folder/Dockerfile
[ ! -e no-such-folder ] || fail "a failed --output left something behind"
echo "walkthrough: ok"
