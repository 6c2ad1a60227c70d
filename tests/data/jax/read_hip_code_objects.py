"""Print the gfx targets of the HIP code objects in an unzipped ROCm plugin wheel.

Usage: python3 read_hip_code_objects.py DIR   (DIR: the unzipped wheel; needs the `zstd` program)

Each shared object's ``.hip_fatbin`` section holds a compressed offload bundle (magic ``CCOB``,
version 2 with 32-bit or version 3 with 64-bit sizes, zstd data); the bundle's entry ids name the
targets (``hipv4-amdgcn-amd-amdhsa--gfx90a``). How tests/data/jax/wheels/*/hip_code_objects.txt
was made.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

_TARGET = re.compile(rb"amdgcn-amd-amdhsa-[-a-z]*-(gfx[0-9a-f]+[:a-z+-]*)")


def targets(data: bytes) -> set[str]:
    found: set[str] = set()
    at = data.find(b"CCOB")
    while at >= 0:
        version = struct.unpack_from("<H", data, at + 4)[0]
        if version == 3:
            total = struct.unpack_from("<Q", data, at + 8)[0]
            header = 32
        else:
            total = struct.unpack_from("<I", data, at + 8)[0]
            header = 24
        raw = subprocess.run(
            ["zstd", "-d", "-c"], input=data[at + header : at + total], capture_output=True, timeout=60, check=False
        ).stdout
        found |= {m.decode() for m in _TARGET.findall(raw)}
        at = data.find(b"CCOB", at + 4)
    return found


def main(folder: Path) -> str:
    found: set[str] = set()
    for lib in sorted(folder.glob("*/*.so")):
        found |= targets(lib.read_bytes())
    return " ".join(sorted(found, key=lambda g: (len(g), g)))


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
