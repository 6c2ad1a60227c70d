"""Verdicts of the software stack, computed once and reused.

Some checks judge the software, not the node's health: ``compile.correctness`` asks whether
this torch, this Triton and inductor's settings train a model the way eager does on this GPU
arch with this driver. Nothing else changes that answer, and it costs the most of a level-2
run (real compiles). Such a check says ``@check(..., stack_verdict=True)``; its passing
verdict is stored under a key of everything it depends on (:func:`stack_key`) and reused by
every later run with the same key: on this node, and on every node that shares the cache
folder and has the same stack. The report says it was reused and from when; ``--fresh``
computes it again.

The key holds: the check, its level, backend and ``--set`` options; rocmkit's version and the
source of the doctor (the check and the rule that judges it); the checked Python (its path,
version, torch and Triton builds, each with the mtime of its installed metadata, so a
reinstall of the same version is a new key); every variable that configures torch, Triton,
inductor or the device runtime (``TORCHINDUCTOR_*``, ``TRITON_*``, ``HSA_*``, ...); the GPUs'
vendors, archs and names; the ROCm, HIP and driver versions.

An entry is read only through the trust rule (:func:`rocmkit.util.trust.load_cached`: this
user's or root's, in folders nobody else can write): a verdict someone else wrote would let
them declare a broken compiler sound. Only a pass is stored: a failure, a warning or a check
that could not run is looked at again on every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rocmkit import __version__
from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.pyenv import PyEnv
from rocmkit.util.trust import load_cached, store_cached

SCHEMA = "rocmkit.verdict/1"
FOLDER = "verdicts"
# The stack is in the key; a month bounds how long a verdict outlives a change nobody keys
# (a system compiler inductor calls, say).
MAX_AGE_S = 30 * 24 * 3600.0
# Variables that change what torch, Triton, inductor or the device runtime do. The cache
# folders are left out: where compiled code is kept does not change what it computes.
_STACK_VARS = ("TORCH", "TORCHINDUCTOR_", "TRITON_", "PYTORCH_", "HSA_", "HIP_", "ROCR_", "ROCM_", "CUDA_", "HCC_", "AMD_", "MIOPEN_")
_NOT_STACK = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR")


def _doctor_source() -> str:
    """The doctor's own code (its folder and the checks): a changed rule is a new key."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*here.glob("*.py"), *(here / "checks").glob("*.py")]):
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _dist_stamp(python: PyEnv, name: str) -> str | None:
    """A distribution's version and the mtime of its metadata folder (a reinstall moves it)."""
    version = python.dists.get(name)
    if version is None:
        return None
    stamps = []
    for site in python.site_dirs:
        for info in site.glob(f"{name.replace('-', '_')}-*.dist-info"):
            with contextlib.suppress(OSError):
                stamps.append(f"{info.name}:{info.stat().st_mtime_ns}")
    return f"{version} {' '.join(sorted(stamps))}"


def stack_key(chk: Check, ctx: CheckContext, python: PyEnv) -> str:
    """The key of ``chk``'s verdict: everything the verdict depends on, hashed."""
    machine = ctx.machine
    facts: dict[str, Any] = {
        "check": chk.name,
        "level": ctx.level,
        "backend": ctx.backend,
        "options": {k: v for k, v in sorted(ctx.options.items()) if k.split(".", 1)[0] == chk.name.split(".", 1)[0]},
        "rocmkit": __version__,
        "doctor": _doctor_source(),
        "python": [str(python.executable), python.version],
        "dists": {d: _dist_stamp(python, d) for d in ("torch", *TRITON_DISTRIBUTIONS)},
        "env": {k: v for k, v in sorted(ctx.env.items()) if k.startswith(_STACK_VARS) and k not in _NOT_STACK},
        "gpus": [[g.vendor, g.arch, g.name, g.visible] for g in machine.gpus],
        "rocm": [machine.rocm.version, machine.rocm.hip_version, machine.rocm.driver_version],
        "nvidia": [machine.nvidia.driver_version, machine.nvidia.cuda_version] if machine.nvidia else None,
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _path(cache_dir: Path, key: str) -> Path:
    return cache_dir / FOLDER / f"{key}.json"


def when_text(stamp: float) -> str:
    """A stored time as the report says it: ``2026-12-07T03:40:12Z``."""
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def reused(cache_dir: Path, key: str, *, now: float | None = None) -> list[CheckResult] | None:
    """The stored verdict for ``key``, marked as reused, or None (absent, too old, damaged, or
    in a folder the trust rule refuses)."""
    try:
        data = json.loads(load_cached(_path(cache_dir, key)) or b"{}")
        stored_at = float(data["stored_at"])
        age = (time.time() if now is None else now) - stored_at
        if data.get("schema") != SCHEMA or not 0 <= age < MAX_AGE_S:
            return None
        results = [CheckResult.from_dict(r) for r in data["results"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if not results or any(r.status is not Status.PASS for r in results):
        return None
    when = when_text(stored_at)
    note = f" [verdict reused from {when}: same torch, Triton, inductor settings, GPU and driver; --fresh reruns it]"
    return [
        replace(r, message=r.message + note, duration_s=0.0, details={**r.details, "reused_from": when, "stack_key": key})
        for r in results
    ]


def store(cache_dir: Path, key: str, results: list[CheckResult], *, now: float | None = None) -> bool:
    """Keep a passing verdict for later runs; True when stored. A cache that cannot be
    written is a slower rerun, never a failed doctor."""
    if not results or any(r.status is not Status.PASS for r in results):
        return False
    payload = {
        "schema": SCHEMA,
        "stored_at": time.time() if now is None else now,
        "results": [r.to_dict() for r in results],
    }
    try:
        return store_cached(_path(cache_dir, key), json.dumps(payload).encode())
    except OSError:
        return False
