"""The environment an install targets: a venv (made if missing) or an explicit interpreter.

Facts about the target come from the target interpreter itself (:func:`rocmkit.pyenv.probe`,
a short child process), never from rocmkit's own interpreter: rocmkit usually runs from its
own venv or pipx, and the Python it installs into may be another version.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from rocmkit.errors import ToolError, UnsafeEnvironmentError, UsageError, rerun
from rocmkit.proc.runner import run, which
from rocmkit.pyenv import PyEnv, probe, venv_interpreter

VENV_TIMEOUT_S = 120.0


def create_venv(venv: Path, *, base_python: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Make a venv without pip (uv when present: fast; else the stdlib ``venv``).

    No pip is seeded on purpose: rocmkit drives pip from outside
    (``pip --python``) or uses uv, and seeding pip costs seconds per venv.
    """
    python = base_python or sys.executable
    uv = find_uv(env)
    if uv is None and re.fullmatch(r"\d+\.\d+", python):
        python = f"python{python}"  # the stdlib venv needs an interpreter, not a version
    if uv is not None:
        result = run([uv, "venv", "--quiet", "--python", python, str(venv)], timeout=VENV_TIMEOUT_S, env=env)
    else:
        result = run([python, "-m", "venv", "--without-pip", str(venv)], timeout=VENV_TIMEOUT_S, env=env)
    if not result.ok or not venv_interpreter(venv).exists():
        # uv ends its stderr with a "hint:" line; the "error:" line above it is the cause.
        cause = next((ln for ln in result.stderr.splitlines() if ln.startswith("error:")), None)
        detail = f"`{' '.join(result.argv)}` failed: {cause}" if cause else result.describe()
        raise ToolError(f"could not create the virtual environment {venv}: {detail}")


def base_interpreter(base_python: str | None, env: Mapping[str, str] | None = None) -> Path:
    """The interpreter a new venv would be made from (``--python``: a path, or a version uv or
    PATH finds); a version found nowhere is a :class:`UsageError`, as the real run would fail."""
    if base_python is None:
        return Path(sys.executable)
    if "/" in base_python:
        return Path(base_python)
    uv = find_uv(env)
    if uv is not None:
        result = run([uv, "python", "find", base_python], timeout=VENV_TIMEOUT_S, env=env)
        found = result.stdout.strip().splitlines()
        if result.ok and found:
            return Path(found[-1])
    exe = which(f"python{base_python}", env)
    if exe:
        return Path(exe)
    raise UsageError(
        f"--python {base_python}: no such Python on this machine",
        (f"uv python install {base_python}", "pass another version, or the path of a python"),
    )


def find_uv(env: Mapping[str, str] | None = None) -> str | None:
    """uv on PATH, else next to rocmkit's interpreter (``pip install uv`` puts it there)."""
    found = which("uv", env)
    if found:
        return found
    sibling = Path(sys.executable).parent / "uv"
    return str(sibling) if os.access(sibling, os.X_OK) else None


def select_target(
    *,
    venv: Path | None,
    python: Path | None,
    environ: Mapping[str, str],
    break_system_packages: bool,
    create: bool = True,
    base_python: str | None = None,
) -> tuple[PyEnv, bool]:
    """The target environment and whether rocmkit just created it.

    Order: ``--venv`` (made if missing), ``--python``, then the active venv
    (``VIRTUAL_ENV``). A non-venv interpreter marked EXTERNALLY-MANAGED
    (PEP 668) is refused unless ``break_system_packages``.
    """
    created = False
    if venv is not None and python is not None:
        raise UsageError("--venv and --interpreter name two targets", "pass only one of them")
    if venv is None and python is None:
        active = environ.get("VIRTUAL_ENV")
        if not active:
            raise UsageError(
                "no target environment: no virtual environment is active",
                (
                    rerun("--venv", ".venv") + "   # made if missing",
                    "source .venv/bin/activate   # or activate another venv, then run it again",
                    "pass --interpreter PATH (a Python outside any venv)",
                ),
            )
        venv = Path(active)
    if venv is not None:
        venv = venv.absolute()
        if not venv_interpreter(venv).exists():
            if venv.exists() and any(venv.iterdir()):
                raise UsageError(
                    f"{venv} exists but is not a virtual environment (no bin/python)",
                    ("pass an empty or missing folder (made into a venv)", "pass an existing venv"),
                )
            if not create:
                raise UsageError(
                    f"{venv} does not exist", "pass an existing venv (an install creates a missing one)"
                )
            create_venv(venv, base_python=base_python)
            created = True
        python = venv_interpreter(venv)
    assert python is not None
    target = probe(python)
    marker = target.externally_managed
    if marker is not None and not break_system_packages:
        raise UnsafeEnvironmentError(
            f"{python} is an externally managed system Python (PEP 668 marker {marker})",
            (rerun("--venv", ".venv") + "   # a venv of its own", rerun("--allow", "system-packages") + "   # if you mean it"),
        )
    return target, created
