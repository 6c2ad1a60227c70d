"""The Python environment the doctor checks: this interpreter, or another venv's.

`rocmkit install --venv V` puts torch in V, while rocmkit itself often lives
elsewhere (pipx, uv tool, a system package). `rocmkit doctor --venv V` then runs
every isolated check with V's interpreter, and decides needs (is torch there?)
and versions from V, read by one short probe run through the command runner.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from rocmkit.errors import UsageError
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.runner import run

# Modules whose presence decides needs, and distributions whose versions go in the report.
MODULES = ("torch", "triton", "transformers", "packaging")
DISTRIBUTIONS = ("torch", *TRITON_DISTRIBUTIONS)
PROBE_TIMEOUT_S = 30.0

# Run by the other interpreter: stdlib only, no rocmkit (it may not be importable there).
_PROBE = """
import importlib.metadata as md, importlib.util as u, json, platform, sys
def v(d):
    try:
        return md.version(d)
    except md.PackageNotFoundError:
        return None
def req(d):
    try:
        return md.requires(d) or []
    except md.PackageNotFoundError:
        return []
print(json.dumps({
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "torch_requires": req("torch"),
    "version": platform.python_version(),
    "modules": {m: u.find_spec(m) is not None for m in MODULES},
    "dists": {d: v(d) for d in DISTRIBUTIONS},
}))
"""


@dataclass(frozen=True, kw_only=True)
class PythonEnv:
    executable: str
    version: str
    modules: dict[str, bool] = field(default_factory=dict)
    dists: dict[str, str | None] = field(default_factory=dict)
    own: bool = True  # this very interpreter: checks may also run in-process
    # The venv folder (sys.prefix) when the interpreter runs in one: remedies name it.
    venv: str | None = None
    # torch's Requires-Dist, read without importing torch: the Triton it pins.
    torch_requires: tuple[str, ...] = ()

    def has(self, module: str) -> bool:
        return bool(self.modules.get(module))


def triton_pin(requires: Iterable[str] | None) -> Requirement | None:
    """The Triton requirement in torch's Requires-Dist that applies to this platform."""
    for raw in requires or ():
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) not in TRITON_DISTRIBUTIONS:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        return req
    return None


def _find_spec(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requires(dist: str) -> tuple[str, ...]:
    try:
        return tuple(importlib.metadata.requires(dist) or ())
    except importlib.metadata.PackageNotFoundError:
        return ()


def _venv_of(prefix: str, base_prefix: str) -> str | None:
    return prefix if os.path.realpath(prefix) != os.path.realpath(base_prefix) else None


def this_python() -> PythonEnv:
    """The interpreter rocmkit runs in, read without importing torch."""
    return PythonEnv(
        executable=sys.executable,
        version=platform.python_version(),
        modules={m: _find_spec(m) for m in MODULES},
        dists={d: _version(d) for d in DISTRIBUTIONS},
        venv=_venv_of(sys.prefix, sys.base_prefix),
        torch_requires=_requires("torch"),
    )


def probe_python(python: str) -> PythonEnv:
    """Another interpreter's facts, from one short run of it."""
    script = f"MODULES = {MODULES!r}\nDISTRIBUTIONS = {DISTRIBUTIONS!r}\n{_PROBE}"
    res = run([python, "-c", script], timeout=PROBE_TIMEOUT_S)
    if not res.ok:
        raise UsageError(
            f"cannot run the Python to check: {res.describe()}",
            "pass a working interpreter (--python PATH) or venv folder (--venv PATH)",
        )
    try:
        data = json.loads(res.stdout.strip().splitlines()[-1])
        return PythonEnv(
            executable=str(data["executable"]),
            version=str(data["version"]),
            modules={str(k): bool(v) for k, v in data["modules"].items()},
            dists={str(k): (None if v is None else str(v)) for k, v in data["dists"].items()},
            # A venv's python is a link to the base interpreter, so compare environments
            # (sys.prefix), not executables.
            own=os.path.realpath(str(data["prefix"])) == os.path.realpath(sys.prefix),
            venv=_venv_of(str(data["prefix"]), str(data["base_prefix"])),
            torch_requires=tuple(str(r) for r in data["torch_requires"]),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise UsageError(
            f"{python} did not answer like a Python 3 interpreter ({exc})",
            "pass a Python 3.10+ interpreter or a venv folder",
        ) from exc


def venv_python(venv: Path) -> Path:
    for candidate in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    raise UsageError(
        f"{venv} is not a virtual environment (no bin/python in it)",
        "pass the folder given to `rocmkit install --venv`, or --python PATH",
    )


def select_python(
    *, venv: Path | None = None, python: str | None = None, environ: Mapping[str, str] | None = None
) -> PythonEnv:
    """The Python to check: --python, else --venv, else the active venv (as `rocmkit install`
    does) when it is not rocmkit's own, else this interpreter."""
    if venv is not None and python is not None:
        raise UsageError("--venv and --python name the same thing twice", "pass only one of them")
    env = os.environ if environ is None else environ
    chosen: str | None = python
    if chosen is None and venv is not None:
        chosen = str(venv_python(venv))
    if chosen is None and env.get("VIRTUAL_ENV"):
        active = Path(env["VIRTUAL_ENV"])
        if active.is_dir() and os.path.realpath(active) != os.path.realpath(sys.prefix):
            chosen = str(venv_python(active))
    if chosen is None:
        return this_python()
    found = probe_python(chosen)
    return this_python() if found.own else found


def shim_path(folder: Path, target: PythonEnv) -> Path:
    """A folder holding only what a foreign interpreter's child needs from rocmkit's
    environment: rocmkit itself and, where the target lacks it, packaging. Putting
    rocmkit's whole site-packages on its path would shadow the venv's own packages."""
    import rocmkit

    folder.mkdir(parents=True, exist_ok=True)
    names = ["rocmkit"] + ([] if target.has("packaging") else ["packaging"])
    for name in names:
        module = rocmkit if name == "rocmkit" else __import__(name)
        src = Path(module.__file__ or "").resolve().parent
        link = folder / name
        if not link.exists():
            link.symlink_to(src, target_is_directory=True)
    return folder
