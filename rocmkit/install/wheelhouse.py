"""Wheelhouses: download a plan's whole closure once, install it on many nodes offline.

``--download-only --wheelhouse DIR`` runs ``pip download`` (uv has no
download command) for the target's Python and writes ``DIR/rocmkit-lock.txt``:
every wheel pinned with the sha256 of the file actually downloaded, plus the
plan. ``--wheelhouse DIR`` installs exactly that list with ``--no-index``
(and ``--offline`` for uv) and hash checking, so it never touches the network.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from pathlib import Path

from rocmkit.errors import DataError, ToolError
from rocmkit.install.base import InstallSpec, LineSink, Locked, Sources
from rocmkit.install.lock import LockFile, parse, render
from rocmkit.install.pip import PipInstaller
from rocmkit.packages import canonical
from rocmkit.plan import Plan
from rocmkit.util.atomicio import write_text_atomic

LOCK_NAME = "rocmkit-lock.txt"
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def lock_from_folder(folder: Path) -> list[Locked]:
    """Pins and hashes of the wheels in ``folder`` (several files per version are all accepted)."""
    found: dict[tuple[str, str], list[str]] = {}
    for wheel in sorted(folder.glob("*.whl")):
        match = _WHEEL.match(urllib.parse.unquote(wheel.name))
        if match is None:
            continue
        key = (canonical(match.group("name")), match.group("version"))
        found.setdefault(key, []).append(_sha256(wheel))
    return [Locked(name=n, version=v, hashes=tuple(h)) for (n, v), h in sorted(found.items())]


def platform_tags(plan: Plan, machine: str) -> tuple[str, ...]:
    """``pip download --platform`` tags when the plan's CPU (``linux-aarch64``) is not ``machine``
    (this host's, ``platform.machine()``); empty when they agree or the plan names none. The
    manylinux levels cover torch's (2_28) and the older ones its dependencies use."""
    want = (plan.platform or "").rpartition("-")[2]
    have = "aarch64" if machine.lower() in ("aarch64", "arm64") else machine.lower()
    if not want or want == have:
        return ()
    return tuple(f"{level}_{want}" for level in ("manylinux_2_28", "manylinux_2_17", "manylinux2014", "linux"))


def download(
    installer: PipInstaller, spec: InstallSpec, plan: Plan, folder: Path, *, on_line: LineSink = None
) -> Path:
    """Download the closure of ``spec`` into ``folder`` and write its lock; returns the lock path."""
    folder.mkdir(parents=True, exist_ok=True)
    result = installer.download(spec, folder, on_line=on_line)
    if not result.ok:
        raise ToolError(f"download into the wheelhouse {folder} failed: {result.describe()}")
    entries = lock_from_folder(folder)
    if not entries:
        raise ToolError(f"pip download left no wheel in {folder}")
    lock = folder / LOCK_NAME
    write_text_atomic(lock, render(entries, Sources(find_links=(str(folder),)), plan))
    return lock


def open_wheelhouse(folder: Path) -> LockFile:
    """The wheelhouse's lock, offline from where it is now. As root, the folder, its lock and
    every wheel in it pass the trust rule (exit 13 otherwise): the lock's hashes only say the
    wheels are the ones its writer chose."""
    from rocmkit.util.trust import check_file_as_root, check_folder

    lock = folder / LOCK_NAME
    fix = f"chown -R root:root {folder} && chmod -R go-w {folder}   # or install as the wheelhouse's owner"
    if os.geteuid() == 0:
        check_folder(folder, "the wheelhouse", fix)
        for item in sorted(folder.iterdir()):
            if item.name == LOCK_NAME or item.suffix == ".whl":
                check_file_as_root(item, "the wheelhouse file", fix)
    if not lock.is_file():
        raise DataError(
            f"{folder} is not a rocmkit wheelhouse (no {LOCK_NAME})",
            "rocmkit wheelhouse DIR   # on a connected node, then install from it",
        )
    parsed = parse(lock)
    missing = [e.name for e in parsed.entries if not any(folder.glob(f"*{e.version}*.whl"))]
    if missing:
        raise DataError(f"the wheelhouse {folder} lacks wheels for {', '.join(missing)}", "download it again")
    # Wherever the folder was made, install from where it is now, offline.
    return LockFile(
        entries=parsed.entries,
        sources=Sources(find_links=(str(folder.absolute()),), no_index=True, offline=True),
        plan=parsed.plan,
    )
