"""ROCm/TheRock: ``RELEASES.md`` (the ``device-gfxNNNN`` extras of the multi-arch
index) and ``build_tools/github_actions/configure_pytorch_release_matrix.py``
(``RELEASE_PYTHON_VERSIONS``: the CPythons its torch wheels are built for)."""

from __future__ import annotations

import ast
import re

from rocmkit.errors import DataError

RELEASES_PATH = "RELEASES.md"
RELEASE_MATRIX_PATH = "build_tools/github_actions/configure_pytorch_release_matrix.py"
REPO_URL = "https://github.com/ROCm/TheRock"

_PYTHON = re.compile(r"3\.[0-9]{1,3}t?")
_EXTRA = re.compile(r"^\|[^|]*\|\s*(gfx[0-9a-f]+)\s*\|\s*`device-(gfx[0-9a-f]+)`\s*\|", re.MULTILINE)


def device_extras(text: str) -> tuple[str, ...]:
    """The gfx targets with a ``device-gfxNNNN`` extra, in the table's order."""
    out: list[str] = []
    for m in _EXTRA.finditer(text):
        if m.group(1) == m.group(2) and m.group(1) not in out:
            out.append(m.group(1))
    if not out:
        raise DataError(f"{RELEASES_PATH}: no `device-gfxNNNN` table found", "record a newer revision")
    return tuple(out)


def release_pythons(text: str) -> tuple[str, ...]:
    """``RELEASE_PYTHON_VERSIONS = ["3.10", ...]``, read with ast (never executed)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        where = f", line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise DataError(
            f"{RELEASE_MATRIX_PATH}: not valid Python ({getattr(exc, 'msg', exc)}{where})", "record another revision"
        ) from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "RELEASE_PYTHON_VERSIONS"
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = None  # computed, not a literal
            if isinstance(value, list) and value and all(isinstance(v, str) and _PYTHON.fullmatch(v) for v in value):
                return tuple(value)
            raise DataError(
                f"{RELEASE_MATRIX_PATH}: RELEASE_PYTHON_VERSIONS is not a list of Python versions",
                "record another revision",
            )
    raise DataError(f"{RELEASE_MATRIX_PATH}: RELEASE_PYTHON_VERSIONS not found", "record a newer revision")
