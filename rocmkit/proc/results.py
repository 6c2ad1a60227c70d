"""The parent's side of the child-result protocol: where a child's result file lies, and the
one way it is read.

A child (spawned through :func:`rocmkit.pyenv.run_json`, or a fork of a prefork worker) writes
its JSON answer with :func:`rocmkit.proc.result_file.write_result`, renamed into place whole, to
:func:`result_path` of the folder its parent gave it. The parent reads it with
:func:`read_result`: bounded in size and depth (:mod:`rocmkit.util.safeload`), never stdout, and
a missing, damaged or hostile file is an answer (``None`` with why), not a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocmkit.errors import RocmkitError

RESULT_NAME = "result.json"
# The file a child names its phase in (:func:`rocmkit.proc.result_file.say_phase`), in its folder.
PHASE_NAME = "phase.txt"


def result_path(folder: Path) -> Path:
    """The result file of the child whose folder is ``folder``."""
    return folder / RESULT_NAME


def read_result(path: Path, what: str) -> tuple[Any, str | None]:
    """The JSON a child left at ``path``, and None; or None and why there is none (no file, or
    one that is too big, too deep or not JSON)."""
    from rocmkit.util.safeload import load_json_file

    if not path.is_file():
        return None, f"{what} was not written"
    try:
        return load_json_file(path, what), None
    except RocmkitError as exc:
        return None, exc.message


def phase_path(folder: Path) -> Path:
    """The phase file of the child whose folder is ``folder``."""
    return folder / PHASE_NAME


def read_phase(path: Path) -> str | None:
    """What the child last said it is doing (:func:`rocmkit.proc.result_file.say_phase`), or
    None: read bounded, never blocking (a FIFO in its place is refused), for display only
    (the status line strips control characters)."""
    from rocmkit.util.boundedio import read_bounded

    try:
        data = read_bounded(path, max_bytes=256, truncate=True)
    except OSError:
        return None
    return data.decode("utf-8", "replace").strip() or None
