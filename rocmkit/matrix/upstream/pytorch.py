"""pytorch/pytorch: ``.ci/docker/manywheel/build.sh``, the script that builds the ROCm wheel
images, and with them ``PYTORCH_ROCM_ARCH``: the gfx targets each ROCm version's wheels carry.

The script is bash; it is read as text, never run. The ROCm case sets a common
``PYTORCH_ROCM_ARCH``, then branches on the ROCm version (``[[ "$GPU_ARCH_VERSION" ==
*"7.14"* ]]``); a branch may extend the list (``PYTORCH_ROCM_ARCH="gfx900;gfx906;${PYTORCH_ROCM_ARCH}"``:
the legacy images). The first branch whose pattern is in the version is the one bash takes.
"""

from __future__ import annotations

import re

from rocmkit.errors import DataError

BUILD_SH_PATH = ".ci/docker/manywheel/build.sh"
REPO_URL = "https://github.com/pytorch/pytorch"

_CASE = re.compile(r"^\s*manylinux2_28-builder:rocm\*\)\s*$")
_END = re.compile(r"^\s*;;\s*$")
_SET = re.compile(r'^\s*PYTORCH_ROCM_ARCH="([^"]*)"\s*$')
_IF = re.compile(r'^\s*(if|elif) \[\[ "\$GPU_ARCH_VERSION" == \*"([^"]+)"\* \]\]; then\s*$')
_ELSE = re.compile(r"^\s*else\s*$")
_NESTED_IF = re.compile(r"^\s*if \[\[")
_FI = re.compile(r"^\s*fi\s*$")


def _rocm_block(text: str) -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _CASE.match(line):
            for j in range(i + 1, len(lines)):
                if _END.match(lines[j]):
                    return lines[i + 1 : j]
    raise DataError(f"{BUILD_SH_PATH}: no `manylinux2_28-builder:rocm*)` case found", "record a newer revision")


def _branches(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The common ``PYTORCH_ROCM_ARCH`` of the ROCm case, and its top-level version branches in
    order: (pattern, the PYTORCH_ROCM_ARCH assignments inside), the ``else`` branch as ""."""
    common: str | None = None
    branches: list[tuple[str, list[str]]] = []
    depth = 0
    for line in _rocm_block(text):
        head = _IF.match(line)
        if head and (depth == 0 or (depth == 1 and head.group(1) == "elif")):
            depth = 1
            branches.append((head.group(2), []))
            continue
        if depth == 1 and _ELSE.match(line):
            branches.append(("", []))
            continue
        if depth >= 1 and _NESTED_IF.match(line):
            depth += 1  # an if inside a branch (patch-version fixups): not a version branch
            continue
        if depth >= 1 and _FI.match(line):
            depth -= 1
            continue
        found = _SET.match(line)
        if found:
            if depth == 0:
                common = found.group(1)
            else:
                branches[-1][1].append(found.group(1))
    if common is None:
        raise DataError(f"{BUILD_SH_PATH}: the ROCm case sets no PYTORCH_ROCM_ARCH", "record a newer revision")
    return common, branches


def _taken(branches: list[tuple[str, list[str]]], rocm: str) -> tuple[str, list[str]] | None:
    """The branch bash takes for ROCm ``rocm``: the first whose pattern is in it, else ``else``."""
    return next((b for b in branches if b[0] == "" or b[0] in rocm), None)


def names_version(text: str, rocm: str) -> bool:
    """Does a branch of the ROCm case name ``rocm`` itself (not only the catch-all ``else``)?
    The catch-all's list is today's, which wheels built earlier for that index may not carry."""
    branch = _taken(_branches(text)[1], rocm)
    return branch is not None and branch[0] not in ("", "preview")


def rocm_archs(text: str, rocm: str) -> tuple[str, ...]:
    """The ``PYTORCH_ROCM_ARCH`` list the script builds ROCm ``rocm`` ("7.14") wheels with."""
    common, branches = _branches(text)
    value = common
    branch = _taken(branches, rocm)
    for edit in branch[1] if branch is not None else []:
        value = edit.replace("${PYTORCH_ROCM_ARCH}", value)
    archs = tuple(a for a in value.split(";") if a)
    bad = [a for a in archs if not re.fullmatch(r"gfx[0-9a-f]+", a)]
    if bad:
        raise DataError(f"{BUILD_SH_PATH}: {bad[0]!r} in PYTORCH_ROCM_ARCH is not a gfx target", "check the script")
    return archs
