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
    for node in ast.parse(text).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "RELEASE_PYTHON_VERSIONS"
        ):
            value = ast.literal_eval(node.value)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return tuple(value)
    raise DataError(f"{RELEASE_MATRIX_PATH}: RELEASE_PYTHON_VERSIONS not found", "record a newer revision")
