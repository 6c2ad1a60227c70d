"""The requirements of an AMD channel plan resolve with uv against an index in AMD's layout.

AMD's indexes cannot be reached from here, so the index is built in the format AMD's own files
describe (tests/data/upstream/amd/SOURCE.md): a torch of host code whose `device-gfxNNNN`
extras pull `amd-torch-device-gfxNNNN`, which pulls `rocm-sdk-device-gfxNNNN`; torch depends
on `rocm[libraries]` of exactly its ROCm; versions per stream as versioning.md gives them.
Served on 127.0.0.1; uv resolves the plan's lines (`--dry-run`), nothing is installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rocmkit.machine import Gpu, Machine
from rocmkit.resolve import Constraints, resolve
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel

UV = str(Path(sys.executable).parent / "uv")
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
ARCHS = ("gfx942", "gfx1100")


def _amd_index(folder: Path, torch: str, rocm: str) -> None:
    """One build of torch/torchvision/torchaudio and the ROCm packages it needs (AMD's names)."""
    local = f"+rocm{rocm}"
    extras = [f"device-{a}" for a in ARCHS]
    make_wheel(
        folder, "torch", torch + local, tag=PLATFORM_TAG, provides_extra=extras,
        requires=[f"rocm[libraries]=={rocm}"]
        + [f'amd-torch-device-{a}=={torch}{local}; extra == "device-{a}"' for a in ARCHS],
    )
    make_wheel(
        folder, "torchvision", "0.28.0" + local, tag=PLATFORM_TAG, provides_extra=extras,
        requires=[f"torch=={torch}{local}"],
    )
    make_wheel(folder, "torchaudio", "2.11.0" + local, tag=PLATFORM_TAG, requires=[f"torch=={torch}{local}"])
    for a in ARCHS:
        make_wheel(folder, f"amd-torch-device-{a}", torch + local, requires=[f"rocm-sdk-device-{a}=={rocm}"])
        make_wheel(folder, f"rocm-sdk-device-{a}", rocm, requires=[f"rocm-sdk-libraries=={rocm}"])
    # AMD ships the `rocm` selector as an sdist; a wheel with the same extras stands in for it.
    make_wheel(
        folder, "rocm", rocm, provides_extra=["libraries", *extras],
        requires=[f"rocm-sdk-core=={rocm}", f'rocm-sdk-libraries=={rocm}; extra == "libraries"']
        + [f'rocm-sdk-device-{a}=={rocm}; extra == "device-{a}"' for a in ARCHS],
    )
    make_wheel(folder, "rocm-sdk-core", rocm)
    make_wheel(folder, "rocm-sdk-libraries", rocm, requires=[f"rocm-sdk-core=={rocm}"])


def _resolved(plan_reqs: tuple[str, ...], index: str, tmp: Path) -> dict[str, str]:
    target = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=60)
    proc = subprocess.run(
        [UV, "pip", "install", "--dry-run", "--python", str(target / "bin" / "python"), "--index-url", index,
         "--no-cache", *plan_reqs],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found = {}
    for line in proc.stderr.splitlines():
        if line.strip().startswith("+ "):
            name, _, version = line.strip()[2:].partition("==")
            found[name] = version
    return found


def test_a_two_arch_node_resolves_on_each_stream(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    # Two ROCm releases on the stable index: --backend rocmX.Y picks one through the rocm[...] pin.
    _amd_index(root / "rocm" / "whl-next", "2.13.0", "7.14.0")
    _amd_index(root / "rocm" / "whl-next", "2.13.1", "7.15.0")
    _amd_index(root / "rc" / "whl-next", "2.13.0", "7.14.0rc2")
    _amd_index(root / "rc" / "whl-next", "2.12.0", "7.13.0rc1")
    machine = Machine(gpus=tuple(Gpu(vendor="amd", index=i, arch=a) for i, a in enumerate(ARCHS)))
    with IndexServer(root) as server:
        plan = resolve(machine, Constraints(channel="amd", rocm="7.14", python=PY))
        assert plan.index_urls == ("https://repo.amd.com/rocm/whl-next/",)
        got = _resolved(plan.requirements, f"{server.url}/rocm/whl-next/", tmp_path / "a")
        assert got["torch"] == "2.13.0+rocm7.14.0" and got["rocm"] == "7.14.0"
        assert {"amd-torch-device-gfx942", "amd-torch-device-gfx1100", "rocm-sdk-device-gfx942",
                "rocm-sdk-device-gfx1100", "rocm-sdk-libraries"} <= set(got)
        # Without --backend rocmX.Y, the newest ROCm on the index.
        plan = resolve(machine, Constraints(channel="amd", python=PY))
        assert _resolved(plan.requirements, f"{server.url}/rocm/whl-next/", tmp_path / "b")["rocm"] == "7.15.0"
        # A release candidate: the pre-release pin selects it without --pre.
        plan = resolve(machine, Constraints(channel="amd-rc", rocm="7.14", python=PY))
        got = _resolved(plan.requirements, f"{server.url}/rc/whl-next/", tmp_path / "c")
        assert got["rocm"] == "7.14.0rc2" and got["torch"] == "2.13.0+rocm7.14.0rc2"
