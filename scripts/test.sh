#!/usr/bin/env bash
# The one test command (README.md and .ci/run both run this).
# Makes .venv with rocmkit, its test tools, and a CPU torch + Triton for the
# validation suite (torch==2.13.0 is a CPU build on these machines; elsewhere
# add --index-url https://download.pytorch.org/whl/cpu for torch), then runs
# lint, types and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 'torch==2.13.0' 'triton==3.8.0'
.venv/bin/ruff check rocmkit tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
