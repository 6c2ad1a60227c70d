"""The child's side of :func:`rocmkit.pyenv.run_json`: write the result, whole or not at all.

Standard library only, and syntax every supported Python reads: a child that cannot import
rocmkit (the target venv's interpreter, the probe) gets this file's text put before its own
code by :class:`rocmkit.pyenv.Inline`, so this is the one definition for both kinds of child.
The ``__future__`` import keeps the annotations lazy on older interpreters.
"""

from __future__ import annotations

import json
import os

RESULT_ENV = "ROCMKIT_RESULT_FILE"
# Where a child says what it is doing now, for its parent's status line on a terminal.
PHASE_ENV = "ROCMKIT_PHASE_FILE"


def write_result(data: object, path: str | os.PathLike[str] | None = None) -> None:
    """Write ``data`` as JSON to ``path`` or the file ``run_json`` named, renamed into place,
    so a reader never sees half of it. ``default=str``: a Path or a numpy number in the data
    must not lose the result."""
    target = os.fspath(path) if path is not None else os.environ[RESULT_ENV]
    with open(target + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, default=str)
    os.replace(target + ".tmp", target)


def say_phase(text: str) -> None:
    """Tell the parent what this child is doing now ("importing jax", "compiling"), for the
    status line it draws on a terminal (:mod:`rocmkit.util.ticker`). Best effort and cheap (one
    small file renamed into place): with no parent listening, or a write that fails, nothing
    changes."""
    target = os.environ.get(PHASE_ENV)
    if not target:
        return
    try:
        with open(target + ".tmp", "w", encoding="utf-8") as f:
            f.write(text[:200])
        os.replace(target + ".tmp", target)
    except OSError:
        pass
