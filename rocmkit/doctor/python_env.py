"""The Python environment the doctor checks: now :mod:`rocmkit.pyenv`, which install,
the doctor and their children share. These names stay for code that imports them here."""

from __future__ import annotations

from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.pyenv import (
    DISTRIBUTIONS,
    MODULES,
    PROBE_TIMEOUT_S,
    PyEnv,
    probe,
    select_python,
    shim_path,
    this_python,
    triton_pin,
    venv_python,
)

PythonEnv = PyEnv
probe_python = probe

__all__ = [
    "DISTRIBUTIONS",
    "MODULES",
    "PROBE_TIMEOUT_S",
    "TRITON_DISTRIBUTIONS",
    "PythonEnv",
    "probe_python",
    "select_python",
    "shim_path",
    "this_python",
    "triton_pin",
    "venv_python",
]
