#!/usr/bin/env bash
# The one test command (README.md and .ci/run both run this).
# Makes .venv with rocmkit, its test tools, and a CPU torch + Triton for the
# validation suite (torch==2.13.0 is a CPU build on these machines; elsewhere
# add --index-url https://download.pytorch.org/whl/cpu for torch), then runs
# lint, types and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
make_venv() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 'torch==2.13.0' 'triton==3.8.0'
}
# The TIMM suite's Python (bench models --suite timm --python .venv-timm/bin/python): timm needs
# torchvision, kept out of .venv (transformers would pick it up). PyPI's torchvision 0.28.0 is a
# CUDA build whose C++ ops do not load beside the CPU torch; its Python half does, once the two
# operators it registers unguarded are defined (tests/support/timm_env says how and why).
make_timm_venv() {
  if [ ! -x .venv-timm/bin/python ]; then
    "$PY" -m venv .venv-timm
  fi
  .venv-timm/bin/python -m pip install -q --disable-pip-version-check 'torch==2.13.0' 'torchvision==0.28.0' 'timm==1.0.31'
  local timm_site
  timm_site=$(.venv-timm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cp tests/support/timm_env/_rocmkit_torchvision_ops.py "$timm_site/"
  echo "import _rocmkit_torchvision_ops" >"$timm_site/_rocmkit_torchvision_ops.pth"
  .venv-timm/bin/python -c 'import timm' || { echo "test.sh: timm does not import in .venv-timm" >&2; return 1; }
}
# The two venvs are made side by side: each pip install unpacks on one core.
make_timm_venv &
timm_pid=$!
trap 'kill "$timm_pid" 2>/dev/null || true' EXIT
make_venv
wait "$timm_pid" || { echo "test.sh: could not make .venv-timm (above)" >&2; exit 1; }
# rocmkit's bytecode, once: the suite starts hundreds of `python -m rocmkit` children, and where
# PYTHONDONTWRITEBYTECODE is set (CI boxes often set it) each would compile what it imports again.
.venv/bin/python -m compileall -q -j 0 rocmkit tests/support >/dev/null
.venv/bin/ruff check rocmkit tests benchmarks
# mypy (a minute on a cold cache) runs beside the tests, niced: it takes the cores while the
# tests wait on their children, servers and timeouts. Its output follows the tests'; either
# failing fails the run.
mypy_log=$(mktemp)
nice -n 10 .venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
trap 'kill "$mypy_pid" 2>/dev/null || true; rm -f "$mypy_log"' EXIT
# Three workers (xdist) on two cores: most tests wait on child processes, servers and
# timeouts, and the three bench files (the long poles, 80-100 s each) then run side by side
# (measured: 232 s against 268 s with two). Each test file runs whole on one worker (--dist
# loadfile), so a module or session fixture (the bench model set, the kernels' child run) runs
# once. (--dist loadgroup would be finer, but xdist 3.8 cannot group under pytest 9.2: it
# renames node ids that pytest no longer reads.) The longest files go first, so that the long
# poles run side by side from the start (tests/support/xdist_schedule.py, which tests/conftest.py
# hands xdist). ROCMKIT_TEST_WORKERS=0 runs in one process; "$@" may override -n.
tests=0
.venv/bin/python -m pytest -n "${ROCMKIT_TEST_WORKERS:-3}" --dist loadfile "$@" || tests=$?
types=0
wait "$mypy_pid" || types=$?
cat "$mypy_log"
if [ "$types" -ne 0 ]; then
  echo "test.sh: mypy failed (exit $types)" >&2
fi
if [ "$tests" -ne 0 ]; then
  exit "$tests"
fi
exit "$types"
