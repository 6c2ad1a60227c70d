"""The Python rocmkit acts on: one record, one probe, and one way to hear back from it.

`rocmkit install --venv V` puts torch in V, while rocmkit itself often lives
elsewhere (pipx, uv tool, a system package). `rocmkit doctor --venv V` then runs
every isolated check with V's interpreter, and decides needs (is torch there?)
and versions from V. :func:`probe` asks an interpreter about itself once;
:func:`this_python` reads the same facts for rocmkit's own without a process.

:func:`run_json` is the one result protocol for children in another interpreter
(the probe, install's verification and snapshot, the build's torch probe, the doctor's
isolated checks and codegen compiler, distributed workers): the child writes JSON to
the file named by ``ROCMKIT_RESULT_FILE`` (:func:`write_result`), renamed into place
whole, rather than on its last stdout line, because torch, Triton and site hooks print
freely; the parent reads it bounded. Bench children and forks of a prefork worker write
with :func:`write_result` to the file their request names.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import RocmkitError, ToolError, UntrustedError, UsageError
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.proc.result_file import RESULT_ENV
from rocmkit.proc.runner import CommandResult, run

if TYPE_CHECKING:
    from packaging.requirements import Requirement

# Modules whose presence decides needs, and distributions whose versions go in the report.
MODULES = ("torch", "triton", "transformers", "packaging", "jax", "psutil")
# torch, the Triton builds, and what the level-0 package checks compare them with
# (torch.amdsmi): read here and by the probe, so no check needs a child for them.
DISTRIBUTIONS = ("torch", *TRITON_DISTRIBUTIONS, "amdsmi", "rocm-sdk-core", "jax", "jaxlib")
PROBE_TIMEOUT_S = 30.0


def child_writer() -> str:
    """:mod:`rocmkit.proc.result_file`'s text, which :class:`Inline` code runs first."""
    from rocmkit.proc import result_file

    return Path(result_file.__file__).read_text(encoding="utf-8") + "\n"


@dataclass(frozen=True)
class Inline:
    """Standard-library code run as a script, for an interpreter that may lack
    rocmkit: it ends by calling ``write_result(data)`` (:mod:`rocmkit.proc.result_file`)."""

    code: str


@dataclass(frozen=True, kw_only=True)
class JsonRun:
    """What a child run by :func:`run_json` wrote (None if nothing), and how it ended.
    ``error`` says why a result file that exists could not be read (damaged, too big)."""

    data: Any
    proc: CommandResult
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.data is not None

    def why_none(self) -> str:
        """Why there is no data, in one line: a damaged file, or how the child ended."""
        return self.error or f"it wrote no result ({self.proc.describe()})"


def run_json(
    python: str | Path,
    module: str | Path | Inline,
    args: Sequence[str] = (),
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input_text: str | None = None,
    flags: Sequence[str] = (),
) -> JsonRun:
    """Run ``python -m module args`` (a str: the child imports rocmkit), ``python script args``
    (a Path) or :class:`Inline` code (as a script beside the result file) through the command runner, and
    read the JSON it wrote with ``write_result``.

    A file that exists is complete (it is renamed into place), even when the child then
    crashed or hung in its exit handlers; ``proc`` says how it ended either way. It is read
    bounded (:mod:`rocmkit.util.safeload`): a damaged or hostile file is ``error``, not a traceback."""
    from rocmkit.proc.results import read_result, result_path

    with tempfile.TemporaryDirectory(prefix="rocmkit-run-") as tmp:
        result = result_path(Path(tmp))
        if isinstance(module, Inline):
            # A script file rather than ``-c``: the command line a failure names stays short.
            script = Path(tmp) / "child.py"
            script.write_text(child_writer() + module.code, encoding="utf-8")
            target = [str(script)]
        elif isinstance(module, Path):
            target = [str(module)]
        else:
            target = ["-m", module]
        child_env = dict(os.environ if env is None else env)
        child_env[RESULT_ENV] = str(result)
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
        data, error = read_result(result, "the child's result file")
        if data is None and not result.is_file():
            error = None  # no file: the process's own ending says why
    return JsonRun(data=data, proc=proc, error=error)


@dataclass(frozen=True, kw_only=True)
class PyEnv:
    """One Python environment: what it is, where it installs, what it has. Install acts on
    it, the doctor checks it, and their children run with its interpreter."""

    executable: Path
    version: str  # "3.11.7"
    prefix: Path  # sys.prefix
    purelib: Path
    platlib: Path
    stdlib: Path
    include: Path  # Python.h: what a source build compiles against
    # The venv folder (sys.prefix) when the interpreter runs in one: remedies name it.
    venv: Path | None = None
    has_pip: bool = False
    modules: dict[str, bool] = field(default_factory=dict)
    dists: dict[str, str | None] = field(default_factory=dict)
    own: bool = True  # this very interpreter: checks may also run in-process
    # torch's Requires-Dist, read without importing torch: the Triton it pins.
    torch_requires: tuple[str, ...] = ()

    def has(self, module: str) -> bool:
        return bool(self.modules.get(module))

    @property
    def is_venv(self) -> bool:
        return self.venv is not None

    @property
    def short_version(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def site_dirs(self) -> tuple[Path, ...]:
        return (self.purelib,) if self.purelib == self.platlib else (self.purelib, self.platlib)

    @property
    def externally_managed(self) -> Path | None:
        """PEP 668: the EXTERNALLY-MANAGED marker of a non-venv interpreter, if present."""
        if self.is_venv:
            return None
        marker = self.stdlib / "EXTERNALLY-MANAGED"
        return marker if marker.is_file() else None


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


def _venv_of(prefix: str, base_prefix: str) -> Path | None:
    return Path(prefix) if os.path.realpath(prefix) != os.path.realpath(base_prefix) else None


def this_python() -> PyEnv:
    """The interpreter rocmkit runs in, read without importing torch."""
    return PyEnv(
        executable=Path(sys.executable),
        version=platform.python_version(),
        modules={m: _find_spec(m) for m in MODULES},
        dists={d: _version(d) for d in DISTRIBUTIONS},
        venv=_venv_of(sys.prefix, sys.base_prefix),
        torch_requires=_requires("torch"),
        prefix=Path(sys.prefix),
        purelib=Path(sysconfig.get_path("purelib")),
        platlib=Path(sysconfig.get_path("platlib")),
        stdlib=Path(sysconfig.get_path("stdlib")),
        include=Path(sysconfig.get_path("include")),
        has_pip=_find_spec("pip"),
    )


def probe_script() -> Path:
    """The probe every interpreter is asked with (standard library only)."""
    return Path(__file__).resolve().parent / "proc" / "pyenv_probe.py"


UNTRUSTED_FLAG = "--allow-untrusted-python"
# Interpreters (by their environment's real path) the user chose to run anyway, this run.
_ACCEPTED: set[str] = set()
# Interpreters (as given) that passed the check in this process.
_PASSED: set[str] = set()


def untrusted_problem(python: str | Path) -> str | None:
    """As root, why ``python`` must not be started: something it reads at start-up (its venv,
    ``site-packages`` and ``.pth`` files, the base installation and its standard library)
    fails the trust rule (:func:`rocmkit.util.trust.interpreter_problem`). None for another
    user (their own venvs are theirs to run), and for rocmkit's own environment."""
    if os.geteuid() != 0:
        return None
    from rocmkit.proc.runner import which
    from rocmkit.util.trust import interpreter_prefix, interpreter_problem

    found = str(python) if os.sep in str(python) else which(str(python))
    if found is None:
        return None  # not found: the probe says so
    prefix, _ = interpreter_prefix(Path(found))
    key = os.path.realpath(prefix)
    if key in (os.path.realpath(sys.prefix), *_ACCEPTED) or found in _PASSED:
        return None
    problem = interpreter_problem(Path(found))
    if problem is None:
        # Once it passed, only root or its owner can change what was checked: the next probe
        # of it in this process (an install probes before and after) need not walk it again.
        _PASSED.add(found)
    return problem


def check_trusted(python: str | Path, on_untrusted: Callable[[str], None] | None = None) -> None:
    """:func:`untrusted_problem` as an :class:`UntrustedError` (exit 13); with ``on_untrusted``
    (the doctor's ``--allow-untrusted-python``) it is told instead and the run goes on."""
    problem = untrusted_problem(python)
    if problem is None:
        return
    from rocmkit.util.trust import interpreter_prefix

    what = f"root will not run the Python at {python}: {problem}; its owner's code would run as root"
    if on_untrusted is not None:
        on_untrusted(what)
        _ACCEPTED.add(os.path.realpath(interpreter_prefix(Path(os.path.abspath(python)))[0]))
        return
    prefix = interpreter_prefix(Path(os.path.abspath(python)))[0] if os.sep in str(python) else "VENV"
    raise UntrustedError(
        what,
        (
            f"chown -R root:root {prefix} && chmod -R go-w {prefix}   # and the same for the folder it names",
            "run rocmkit as the venv's owner",
        ),
    )


def probe(python: str | Path, *, on_untrusted: Callable[[str], None] | None = None) -> PyEnv:
    """Another interpreter's facts, from one short run of it (isolated mode: its own
    site-packages only, no PYTHONPATH). The one probe: install, build and the doctor ask it.
    As root, nothing is run that another user could have changed (:func:`check_trusted`).

    Raises :class:`UsageError` for a path that is no executable (or an answer that is not
    a Python 3's), :class:`ToolError` for one that runs but does not answer,
    :class:`UntrustedError` for one root must not run."""
    check_trusted(python, on_untrusted)
    ran = run_json(
        python,
        Inline(probe_script().read_text(encoding="utf-8")),
        [json.dumps(MODULES), json.dumps(DISTRIBUTIONS)],
        timeout=PROBE_TIMEOUT_S,
        flags=("-I",),
    )
    proc = ran.proc
    if proc.status == "absent":
        raise UsageError(f"{python} is not an executable Python", "pass a venv folder or a python path")
    if not proc.ok:
        raise ToolError(f"could not query {python}: {proc.describe()}")
    if not isinstance(ran.data, dict):
        raise ToolError(f"{python} printed no environment description: {ran.error or repr(proc.stdout[:200])}")
    return from_facts(ran.data, python)


def from_facts(data: Any, python: str | Path | None = None) -> PyEnv:
    """The record from :mod:`rocmkit.proc.pyenv_probe`'s answer. The interpreter keeps the path
    it was asked by (a venv's bin/python, not the base interpreter it links to); a bare
    name (``python3``) becomes the path the child ran from."""
    try:
        named = str(python) if python is not None and os.sep in str(python) else str(data["executable"])
        return PyEnv(
            executable=Path(named),
            version=str(data["version"]),
            modules={str(k): bool(v) for k, v in data["modules"].items()},
            dists={str(k): (None if v is None else str(v)) for k, v in data["dists"].items()},
            # A venv's python is a link to the base interpreter, so compare environments
            # (sys.prefix), not executables.
            own=os.path.realpath(str(data["prefix"])) == os.path.realpath(sys.prefix),
            venv=_venv_of(str(data["prefix"]), str(data["base_prefix"])),
            torch_requires=tuple(str(r) for r in data["torch_requires"]),
            prefix=Path(str(data["prefix"])),
            purelib=Path(str(data["purelib"])),
            platlib=Path(str(data["platlib"])),
            stdlib=Path(str(data["stdlib"])),
            include=Path(str(data["include"])),
            has_pip=bool(data["has_pip"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{data.get('executable') if isinstance(data, dict) else 'the interpreter'} did not "
            f"answer like a Python 3 interpreter ({exc})",
            "pass a Python 3.10+ interpreter or a venv folder",
        ) from exc


def venv_interpreter(venv: Path) -> Path:
    """Where a venv's interpreter is (``Scripts/python.exe`` on Windows), or will be once
    ``rocmkit install`` makes the venv."""
    windows = venv / "Scripts" / "python.exe"
    return windows if windows.exists() else venv / "bin" / "python"


def venv_python(venv: Path) -> Path:
    """The interpreter of an existing venv."""
    found = venv_interpreter(venv)
    if found.exists():
        return found
    raise UsageError(
        f"{venv} is not a virtual environment (no bin/python in it)",
        (f"rocmkit install --venv {venv}   # make it one", "pass the folder given to `rocmkit install --venv`, or --python PATH"),
    )


def select_python(
    *,
    venv: Path | None = None,
    python: str | None = None,
    environ: Mapping[str, str] | None = None,
    on_untrusted: Callable[[str], None] | None = None,
) -> PyEnv:
    """The Python to check: --python, else --venv, else the active venv (as `rocmkit install`
    does) when it is not rocmkit's own, else this interpreter. As root, one another user could
    have changed is refused, or told to ``on_untrusted`` (:func:`check_trusted`)."""
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
    try:
        found = probe(chosen, on_untrusted=on_untrusted)
    except UntrustedError:
        raise
    except RocmkitError as exc:
        raise UsageError(
            f"cannot run the Python to check: {exc.message}",
            "pass a working interpreter (--python PATH) or venv folder (--venv PATH)",
        ) from exc
    return this_python() if found.own else found


def shim_path(folder: Path, target: PyEnv, needs: tuple[str, ...] = ("packaging",)) -> Path:
    """A folder holding only what a foreign interpreter's child needs from rocmkit's
    environment: rocmkit itself and, where the target lacks them, ``needs`` (packaging; the
    bench child also psutil). Putting rocmkit's whole site-packages on its path would shadow
    the venv's own packages."""
    import rocmkit

    folder.mkdir(parents=True, exist_ok=True)
    names = ["rocmkit", *(n for n in needs if not target.has(n))]
    for name in names:
        module = rocmkit if name == "rocmkit" else __import__(name)
        src = Path(module.__file__ or "").resolve().parent
        link = folder / name
        if not link.exists():
            link.symlink_to(src, target_is_directory=True)
    return folder
