"""Where rocmkit's data and caches live."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def matrices_dir() -> Path:
    """The compatibility data: inside the package when installed from a wheel,
    at the repository root in a source checkout or an editable install."""
    override = os.environ.get("ROCMKIT_MATRICES_DIR")
    if override:
        return Path(override)
    shipped = shipped_matrices_dir()
    overlay = overlay_dir()
    # `matrix refresh --write` without --dir writes here: newer data without a rocmkit upgrade.
    return overlay if overlay_is_newer(overlay, shipped) else shipped


# The file in an overlay that names the rocmkit that wrote it ("0.2.0").
OVERLAY_STAMP = "written-by-rocmkit"


def _version_key(text: str) -> tuple[int, ...]:
    """``"0.10.1"`` -> (0, 10, 1); what is not a number counts as 0 (no packaging import here:
    every resolve and detect reads this)."""
    import re

    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+-]", text.strip())[:4])


def overlay_is_newer(overlay: Path, shipped: Path) -> bool:
    """The overlay wins only while it is newer than the shipped data: written by a newer
    rocmkit, or by this one after its data was installed. An overlay an older rocmkit wrote
    (or one without a stamp, from before stamps) never shadows the tables a rocmkit upgrade
    brought, whatever the file times say (a package manager may set them to anything)."""
    from rocmkit import __version__
    from rocmkit.util.trust import read_trusted

    if overlay_problem(overlay):
        return False
    try:
        stamp = (read_trusted(overlay / OVERLAY_STAMP, max_bytes=4096) or b"").decode("utf-8")[:64]
        overlay_time = (overlay / "torch.toml").stat().st_mtime
        shipped_time = (shipped / "torch.toml").stat().st_mtime
    except (OSError, UnicodeDecodeError):
        return False
    writer, running = _version_key(stamp), _version_key(__version__)
    if writer != running:
        return writer > running
    return overlay_time > shipped_time


def overlay_problem(overlay: Path) -> str | None:
    """Why the overlay may not be used: the matrices say which index and which builds to
    install, so a folder another user can write (``sudo -E`` keeps a user's ``XDG_DATA_HOME``;
    a ``ROCMKIT_DATA_DIR`` in a shared folder) would choose root's wheels. None when it is
    safe (rocmkit/util/trust.py) or absent."""
    import stat

    from rocmkit.util.trust import file_problem, folder_problem, stat_problem

    if not overlay.is_dir():
        return None
    problem = folder_problem(overlay)
    if problem is not None:
        return problem
    # Every file it serves (channels.toml says which index root's installs use, companions.toml
    # which wheels...), not only torch.toml; and whatever sits in its subfolders.
    todo = [overlay]
    while todo:
        folder = todo.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            return f"{folder} cannot be read ({exc.strerror})"
        for entry in entries:
            path = Path(entry.path)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if reason := stat_problem(st, folder=False):
                    return f"{path} is {reason}"
                todo.append(path)
            elif reason := file_problem(path):
                return f"{path} is {reason}"
    return None


def matrices_origin() -> str:
    """Why :func:`matrices_dir` is the folder it is, for ``rocmkit matrix show``."""
    if os.environ.get("ROCMKIT_MATRICES_DIR"):
        return "from ROCMKIT_MATRICES_DIR"
    if matrices_dir() != shipped_matrices_dir():
        return "an overlay written by `rocmkit matrix refresh --write`, newer than the shipped data"
    if (overlay_dir() / "torch.toml").exists():
        problem = overlay_problem(overlay_dir())
        if problem:
            return f"shipped with rocmkit; the overlay in {overlay_dir()} is not used: {problem}"
        try:
            by = "rocmkit " + (overlay_dir() / OVERLAY_STAMP).read_text(encoding="utf-8")[:64].strip()
        except (OSError, UnicodeDecodeError):
            by = "an older rocmkit"
        return f"shipped with rocmkit; the older overlay in {overlay_dir()} (written by {by}) is not used"
    return "shipped with rocmkit"


def shipped_matrices_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # rocmkit/, from rocmkit/util/
    packaged = package / "matrices"  # a wheel: the data ships inside the package
    if packaged.is_dir():
        return packaged
    return package.parent / "matrices"  # a checkout: the data sits beside the package


def overlay_dir() -> Path:
    """Where `rocmkit matrix refresh --write` puts refreshed data (ROCMKIT_DATA_DIR overrides)."""
    override = os.environ.get("ROCMKIT_DATA_DIR")
    if override:
        return Path(override) / "matrices"
    if sys.platform.startswith("linux"):
        # platformdirs' Linux rule, without importing it on every resolve and detect.
        xdg = os.environ.get("XDG_DATA_HOME", "").strip()
        return Path(xdg or os.path.expanduser("~/.local/share")) / "rocmkit" / "matrices"
    from platformdirs import user_data_dir

    return Path(user_data_dir("rocmkit")) / "matrices"


def cache_dir() -> Path:
    """rocmkit's cache folder (compile caches, downloaded indexes). ROCMKIT_CACHE_DIR overrides."""
    override = os.environ.get("ROCMKIT_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform.startswith("linux"):
        # platformdirs' Linux rule (XDG base directories), without importing it: resolve
        # and detect read the compiled matrix from here on every run.
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return Path(xdg or os.path.expanduser("~/.cache")) / "rocmkit"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("rocmkit"))
