"""Wheels rebuilt from distributions installed in the test interpreter: a local index without a download.

The jax install test needs jax, jaxlib and their dependencies as wheels on a 127.0.0.1 index,
and tests never download. scripts/test.sh installs them (the ``test`` extra pins jax and
jaxlib), so each is rebuilt here from what pip installed: the files its ``RECORD`` lists,
its ``*.dist-info`` metadata and its ``WHEEL`` tags, with a fresh ``RECORD`` (sha256 of each
file). Files outside site-packages (console scripts) and byte code are left out; pip and uv
install the result like the wheel it came from. Stored uncompressed: jaxlib is 250 MB
unpacked, and deflating it would cost more than serving it.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_from_installed(name: str, dest: Path) -> Path:
    """``dest/<name>-<version>-<tag>.whl`` rebuilt from the installed distribution ``name``."""
    dist = metadata.distribution(name)
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = re.findall(r"^Tag:\s*(\S+)", wheel_meta, flags=re.M)
    if not tags:
        raise RuntimeError(f"{name}: its WHEEL file names no tag (not installed from a wheel?)")
    project = re.sub(r"[-_.]+", "_", str(dist.metadata["Name"])).lower()
    root = Path(str(dist.locate_file("")))
    entries: list[tuple[str, bytes]] = []
    record_name = ""
    for file in dist.files or ():
        path = str(file)
        if path.startswith("..") or "__pycache__" in path or path.endswith(".pyc"):
            continue
        # Only the distribution's own .dist-info (top level): a vendored one inside the package
        # (setuptools/_vendor/zipp-*.dist-info/RECORD) is an ordinary file of the wheel.
        own_meta = path.count("/") == 1 and path.split("/", 1)[0].endswith(".dist-info")
        if own_meta and path.endswith("/RECORD"):
            record_name = path
            continue
        if own_meta and path.endswith(("/INSTALLER", "/REQUESTED", "/direct_url.json")):
            continue  # written by the installer, not part of the wheel
        full = root / path
        if full.is_file():
            entries.append((path, full.read_bytes()))
    if not record_name:
        raise RuntimeError(f"{name}: no RECORD among its files")
    record = "".join(f"{p},{_hash(d)},{len(d)}\n" for p, d in entries) + f"{record_name},,\n"
    entries.append((record_name, record.encode()))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{project}-{dist.version}-{'.'.join(sorted(set(t.split('-')[0] for t in tags)))}-" \
        f"{'.'.join(sorted(set(t.split('-')[1] for t in tags)))}-{'.'.join(sorted(set(t.split('-')[2] for t in tags)))}.whl"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=_ZIP_DATE)
            info.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            zf.writestr(info, data)
    return out


def closure(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` and every installed distribution they require (extras and markers that do not
    apply left out), in a stable order."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, None] = {}
    todo = list(names)
    while todo:
        name = str(canonicalize_name(todo.pop(0)))
        if name in seen:
            continue
        seen[name] = None
        for raw in metadata.requires(name) or ():
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(req.name)
    return tuple(seen)
