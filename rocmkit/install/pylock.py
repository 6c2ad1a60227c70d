"""A plan as a PEP 751 ``pylock.toml``: the whole closure, each wheel with its URL and sha256.

A lock file installs exactly what it lists (no resolving), so it must hold every dependency of
torch, not only the plan's pins. uv resolves that closure against the plan's indexes in the plan's
order (torch's index first, each named with ``--index``), for the plan's Python on Linux, and
writes it in PEP 751's format (``uv pip compile --format pylock.toml``): ``lock-version = "1.0"``,
each package with its version, its index and its wheels' URLs and hashes, as the index answered.
A ``--with`` package built from source is not in it (a wheel built here has no URL); the file's
header says how to add it.
"""

from __future__ import annotations

import platform
import tempfile
from pathlib import Path

from rocmkit.errors import ToolError, UsageError
from rocmkit.install.base import QUERY_TIMEOUT_S, base_env
from rocmkit.install.venv import find_uv
from rocmkit.packages import canonical, parse_pin
from rocmkit.plan import Plan
from rocmkit.proc.runner import run
from rocmkit.resolve.render import source_build_command


def _platform(plan: Plan) -> str:
    """uv's ``--python-platform``: the plan's CPU (``linux-aarch64``: aarch64 wheels), else this host's."""
    machine = (plan.platform or "").rpartition("-")[2] or platform.machine().lower()
    return f"{'aarch64' if machine in ('aarch64', 'arm64') else 'x86_64'}-manylinux_2_28"


def _index_of(requirements: str) -> dict[str, str]:
    """``{name: index URL}`` from uv's ``# from URL`` annotations."""
    found: dict[str, str] = {}
    name = ""
    for line in requirements.splitlines():
        pin = parse_pin(line.strip()) if line[:1] not in (" ", "#") else None
        if pin is not None:
            name = pin.project
        elif line.strip().startswith("# from ") and name:
            found[name] = line.strip()[len("# from ") :].strip()
    return found


def with_indexes(text: str, indexes: dict[str, str]) -> str:
    """uv's pylock.toml with each package's ``index`` (PEP 751's optional key) filled in."""
    import tomlkit

    doc = tomlkit.parse(text)
    for package in doc.get("packages", []):
        url = indexes.get(canonical(str(package.get("name", ""))))
        if url and "index" not in package:
            package["index"] = url
    return tomlkit.dumps(doc)


def pylock_text(plan: Plan, *, python: str, offline: bool) -> str:
    """``pylock.toml`` for ``plan`` and Python ``python`` ("3.11")."""
    if offline:
        raise UsageError(
            "--format pylock needs the package index: a lock names each wheel's URL and sha256",
            ("drop --offline (the index is asked once)", "rocmkit export requirements   # needs no index"),
        )
    if not plan.index_urls:
        raise UsageError("the plan names no index to lock from")
    uv = find_uv()
    if uv is None:
        raise ToolError("--format pylock resolves the closure with uv, which is not installed", "`pip install uv`")
    reqs = [*plan.requirements, *(p.requirement for p in plan.with_packages if p.how != "source")]
    from rocmkit.install.base import Sources
    from rocmkit.install.uv import UvInstaller

    # The plan's URLs are masked (user:***@): a credentialed index gets its real URL the way
    # an install gives it, in uv's environment (never its argv, which `ps` shows and an error
    # quotes); the others stay on the command line, in the plan's order.
    sources = Sources(index_urls=tuple(plan.index_urls))
    index_args = UvInstaller._source_args(sources)
    with tempfile.TemporaryDirectory(prefix="rocmkit-pylock-") as tmp:
        src = Path(tmp) / "requirements.in"
        out = Path(tmp) / "pylock.toml"
        src.write_text("\n".join(reqs) + "\n")
        argv = [uv, "pip", "compile", str(src), "--format", "pylock.toml", "-o", str(out), "--quiet"]
        argv += ["--python-version", python, "--python-platform", _platform(plan), *index_args]
        env = {**base_env(), "UV_NO_PROGRESS": "1", **UvInstaller._source_env(sources)}
        result = run(argv, timeout=QUERY_TIMEOUT_S, env=env)
        if not result.ok or not out.is_file():
            raise ToolError(f"uv could not lock the plan: {result.describe()}", "check the indexes (--index-base)")
        # The same resolution (from uv's cache) as requirements, to learn which index served each.
        where = [a for a in argv if a not in ("--format", "pylock.toml", "-o", str(out), "--quiet")]
        annotated = run([*where, "--emit-index-annotation", "--no-header"], timeout=QUERY_TIMEOUT_S, env=env)
        body = with_indexes(out.read_text(), _index_of(annotated.stdout) if annotated.ok else {})
    header = [
        f"# rocmkit.plan/1: backend {plan.backend}, torch {plan.torch_version or '?'}, Python {python}, "
        f"{plan.platform or 'Linux'} ({_platform(plan)})",
        "# written by `rocmkit resolve --format pylock` (resolved by uv against the plan's indexes)",
    ]
    header += [f"# set before running: export {k}={v}" for k, v in plan.env.items()]
    header += [
        f"# {p.requirement} is built from source against this torch, not locked: {source_build_command(p)}"
        for p in plan.with_packages
        if p.how == "source"
    ]
    # uv writes its own "# This file was autogenerated" comment line first: keep it after ours.
    return "\n".join(header) + "\n" + body
