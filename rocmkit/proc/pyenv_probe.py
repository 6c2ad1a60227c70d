"""Run by another interpreter (``python -I SCRIPT MODULES DISTS``, from
:func:`rocmkit.pyenv.probe`): what it is, where it installs, and which of the named modules
and distributions it has.

Standard library only, and never imports rocmkit: the interpreter asked may not have
it. The answer goes to the file named by ``ROCMKIT_RESULT_FILE`` through ``write_result``,
which :func:`rocmkit.pyenv.run_json` puts before this code (with the ``__future__``
import that keeps the annotations below lazy on older interpreters), never to stdout,
which a ``sitecustomize`` may print on.
"""

import importlib.metadata as md
import importlib.util as u
import json
import platform
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:

    from rocmkit.proc.result_file import write_result  # put before this code by pyenv.Inline


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _requires(dist: str) -> list[str]:
    try:
        return md.requires(dist) or []
    except md.PackageNotFoundError:
        return []


def _spec(name: str) -> bool:
    try:
        return u.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def facts(modules: list[str], dists: list[str]) -> dict[str, Any]:
    try:
        scheme = sysconfig.get_default_scheme()
    except AttributeError:  # Python < 3.10
        scheme = sysconfig._get_default_scheme()  # type: ignore[attr-defined,unused-ignore]
    return {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "version": platform.python_version(),
        "purelib": sysconfig.get_path("purelib"),
        "platlib": sysconfig.get_path("platlib"),
        "stdlib": sysconfig.get_path("stdlib", scheme),
        "include": sysconfig.get_paths()["include"],
        "has_pip": _spec("pip"),
        "modules": {m: _spec(m) for m in modules},
        "dists": {d: _version(d) for d in dists},
        "torch_requires": _requires("torch"),
    }


def main() -> int:
    modules = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
    dists = json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
    write_result(facts(modules, dists))
    return 0


if __name__ == "__main__":
    sys.exit(main())
