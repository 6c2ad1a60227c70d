"""The Python rocmkit acts on: one record, one probe, and one way to hear back from it.

`rocmkit install --venv V` puts torch in V, while rocmkit itself often lives
elsewhere (pipx, uv tool, a system package). `rocmkit doctor --venv V` then runs
every isolated check with V's interpreter, and decides needs (is torch there?)
and versions from V. :func:`probe` asks an interpreter about itself once;
:func:`this_python` reads the same facts for rocmkit's own without a process.

:func:`run_json` is the one result protocol for children in another interpreter
(the doctor's isolated checks, probes): the child writes JSON to the file named by
``ROCMKIT_RESULT_FILE`` (:func:`write_result`), renamed into place whole, rather
than on its last stdout line, because torch, Triton and site hooks print freely.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UsageError
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.runner import CommandResult, run

if TYPE_CHECKING:
    from packaging.requirements import Requirement

# Modules whose presence decides needs, and distributions whose versions go in the report.
MODULES = ("torch", "triton", "transformers", "packaging")
# torch, the Triton builds, and what the level-0 package checks compare them with
# (torch.amdsmi): read here and by the probe, so no check needs a child for them.
DISTRIBUTIONS = ("torch", *TRITON_DISTRIBUTIONS, "amdsmi", "rocm-sdk-core")
PROBE_TIMEOUT_S = 30.0
RESULT_ENV = "ROCMKIT_RESULT_FILE"


@dataclass(frozen=True, kw_only=True)
class JsonRun:
    """What a child run by :func:`run_json` wrote (None if nothing), and how it ended."""

    data: Any
    proc: CommandResult

    @property
    def ok(self) -> bool:
        return self.data is not None


def run_json(
    python: str | Path,
    module: str | Path,
    args: Sequence[str] = (),
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input_text: str | None = None,
    flags: Sequence[str] = (),
) -> JsonRun:
    """Run ``python -m module args`` (or ``python script args`` for a Path) through the
    command runner and read the JSON it wrote with :func:`write_result`.

    A file that exists is complete (it is renamed into place), even when the child then
    crashed or hung in its exit handlers; ``proc`` says how it ended either way."""
    with tempfile.TemporaryDirectory(prefix="rocmkit-run-") as tmp:
        result_path = Path(tmp) / "result.json"
        target = [str(module)] if isinstance(module, Path) else ["-m", module]
        child_env = dict(os.environ if env is None else env)
        child_env[RESULT_ENV] = str(result_path)
        exe = str(python)
        if os.sep in exe and not os.path.isabs(exe):
            exe = os.path.abspath(exe)  # the child starts in another folder
        proc = run(
            [exe, *flags, *target, *args],
            timeout=timeout,
            env=child_env,
            input_text=input_text,
            cwd=cwd or Path(tmp),
        )
        data: Any = None
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(result_path.read_text(encoding="utf-8"))
    return JsonRun(data=data, proc=proc)


def write_result(data: Any, path: str | Path | None = None) -> None:
    """The child's side of :func:`run_json`: write whole or not at all.
    ``default=str``: a Path or a numpy number in the data must not lose the result."""
    target = Path(path if path is not None else os.environ[RESULT_ENV])
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
    tmp.replace(target)


@dataclass(frozen=True, kw_only=True)
class PyEnv:
    """One Python environment: what it is, where it installs, what it has."""

    executable: str
    version: str
    modules: dict[str, bool] = field(default_factory=dict)
    dists: dict[str, str | None] = field(default_factory=dict)
    own: bool = True  # this very interpreter: checks may also run in-process
    # The venv folder (sys.prefix) when the interpreter runs in one: remedies name it.
    venv: str | None = None
    # torch's Requires-Dist, read without importing torch: the Triton it pins.
    torch_requires: tuple[str, ...] = ()
    prefix: str = ""
    purelib: str = ""
    platlib: str = ""
    stdlib: str = ""
    has_pip: bool = False

    def has(self, module: str) -> bool:
        return bool(self.modules.get(module))

    @property
    def is_venv(self) -> bool:
        return self.venv is not None

    @property
    def short_version(self) -> str:
        return ".".join(self.version.split(".")[:2])


def triton_pin(requires: Iterable[str] | None) -> Requirement | None:
    """The Triton requirement in torch's Requires-Dist that applies to this platform."""
    # Here, not at the top: the doctor's level 0 and every probe import this module.
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

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


def this_python() -> PyEnv:
    """The interpreter rocmkit runs in, read without importing torch."""
    return PyEnv(
        executable=sys.executable,
        version=platform.python_version(),
        modules={m: _find_spec(m) for m in MODULES},
        dists={d: _version(d) for d in DISTRIBUTIONS},
        venv=_venv_of(sys.prefix, sys.base_prefix),
        torch_requires=_requires("torch"),
        prefix=sys.prefix,
        purelib=sysconfig.get_path("purelib"),
        platlib=sysconfig.get_path("platlib"),
        stdlib=sysconfig.get_path("stdlib"),
        has_pip=_find_spec("pip"),
    )


def probe_script() -> Path:
    """The probe every interpreter is asked with (standard library only)."""
    return Path(__file__).resolve().parent / "pyenv_probe.py"


def probe(python: str | Path) -> PyEnv:
    """Another interpreter's facts, from one short run of it (isolated mode: its own
    site-packages only, no PYTHONPATH)."""
    ran = run_json(
        python,
        probe_script(),
        [json.dumps(MODULES), json.dumps(DISTRIBUTIONS)],
        timeout=PROBE_TIMEOUT_S,
        flags=("-I",),
    )
    if not ran.ok:
        raise UsageError(
            f"cannot run the Python to check: {ran.proc.describe()}",
            "pass a working interpreter (--python PATH) or venv folder (--venv PATH)",
        )
    return from_facts(ran.data)


def from_facts(data: Any) -> PyEnv:
    """The record from :mod:`rocmkit.pyenv_probe`'s answer."""
    try:
        return PyEnv(
            executable=str(data["executable"]),
            version=str(data["version"]),
            modules={str(k): bool(v) for k, v in data["modules"].items()},
            dists={str(k): (None if v is None else str(v)) for k, v in data["dists"].items()},
            # A venv's python is a link to the base interpreter, so compare environments
            # (sys.prefix), not executables.
            own=os.path.realpath(str(data["prefix"])) == os.path.realpath(sys.prefix),
            venv=_venv_of(str(data["prefix"]), str(data["base_prefix"])),
            torch_requires=tuple(str(r) for r in data["torch_requires"]),
            prefix=str(data["prefix"]),
            purelib=str(data["purelib"]),
            platlib=str(data["platlib"]),
            stdlib=str(data["stdlib"]),
            has_pip=bool(data["has_pip"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{data.get('executable') if isinstance(data, dict) else 'the interpreter'} did not "
            f"answer like a Python 3 interpreter ({exc})",
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
) -> PyEnv:
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
    found = probe(chosen)
    return this_python() if found.own else found


def shim_path(folder: Path, target: PyEnv) -> Path:
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
