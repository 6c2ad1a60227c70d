"""matrices/rocm.toml's kernel-driver windows against AMD's own support table (recorded)."""

from __future__ import annotations

import re

from rocmkit.matrix import load_matrix
from tests.conftest import DATA

TABLE = DATA / "upstream" / "amd" / "amdgpu-compatibility-matrix.rst"
# AMD names the driver package of ROCm 7.0, 7.1 and 7.2 30.10, 30.20 and 30.30 (rocm.toml's
# amdgpu_numbering source); before 7.0 the driver row is the ROCm release itself.
PACKAGE_OF = {"7.0": "30.10", "7.1": "30.20", "7.2": "30.30"}


def amd_rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for driver, versions in re.findall(r'^\s+"([0-9.]+)\.x", "([^"]+)"$', TABLE.read_text(), re.M):
        # "6.2.x" -> "6.2"; "10.0.0" -> "10.0"
        found = [".".join(v.strip().split(".")[:2]) for v in versions.split(",")]
        rows[driver] = (found[0], found[-1])
    return rows


def test_windows_are_amds() -> None:
    rows = amd_rows()
    assert rows["30.10"] == ("6.2", "10.0") and rows["6.0"] == ("5.6", "6.2")
    checked = 0
    for rel in load_matrix().rocm_releases:
        if rel.userspace_min is None:
            continue
        row = rows[PACKAGE_OF.get(rel.version, rel.version)]
        assert (rel.userspace_min, rel.userspace_max) == row, rel.version
        checked += 1
    assert checked >= 8  # 6.0-6.4 and 7.0-7.2
