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


def write_result(data: object, path: str | os.PathLike[str] | None = None) -> None:
    """Write ``data`` as JSON to ``path`` or the file ``run_json`` named, renamed into place,
    so a reader never sees half of it. ``default=str``: a Path or a numpy number in the data
    must not lose the result."""
    target = os.fspath(path) if path is not None else os.environ[RESULT_ENV]
    with open(target + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, default=str)
    os.replace(target + ".tmp", target)
