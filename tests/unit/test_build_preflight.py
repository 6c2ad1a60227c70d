"""Preflight on described hosts: each missing item is reported with its fix."""

from __future__ import annotations

from pathlib import Path

from rocmkit.source_build.preflight import Probes, PythonInfo, blocking, run_preflight

GIB = 1024**3
PY311 = PythonInfo(include_dir="/usr/include/python3.11", version="3.11")


def probes(
    tools: dict[str, str],
    files: set[str],
    free_gib: float | None = 100,
    mem_gib: float | None = 64,
    python: PythonInfo | None = PY311,
) -> Probes:
    return Probes(
        which=tools.get,
        exists=lambda p: p in files,
        disk_free=lambda _p: None if free_gib is None else int(free_gib * GIB),
        python_info=lambda _py: python,
        memory_bytes=None if mem_gib is None else int(mem_gib * GIB),
    )


FULL_TOOLS = {
    "git": "/usr/bin/git",
    "cmake": "/usr/bin/cmake",
    "ninja": "/usr/bin/ninja",
    "gcc": "/usr/bin/gcc",
    "g++": "/usr/bin/g++",
    "ccache": "/usr/bin/ccache",
}
ROCM_FILES = {
    "/opt/rocm/bin/hipcc",
    "/opt/rocm/include/hip/hip_runtime.h",
    "/usr/include/python3.11/Python.h",
}


def by_name(items: list) -> dict:  # type: ignore[type-arg]
    return {i.name: i for i in items}


def test_complete_rocm_host_passes(tmp_path: Path) -> None:
    items = run_preflight(
        backend="rocm", build_dir=tmp_path, python="/v/bin/python", probes=probes(FULL_TOOLS, ROCM_FILES)
    )
    assert blocking(items) == []
    assert all(i.ok for i in items)
    assert by_name(items)["hipcc"].detail == "/opt/rocm/bin/hipcc"  # found in ROCm's bin, not on PATH


def test_bare_host_lists_every_missing_item_with_its_fix(tmp_path: Path) -> None:
    items = run_preflight(
        backend="rocm",
        build_dir=tmp_path / "deep/not/yet",
        python="/v/bin/python",
        probes=probes({}, set(), free_gib=12, mem_gib=4),
    )
    missing = {i.name for i in blocking(items)}
    assert missing == {
        "disk",
        "memory",
        "git",
        "C compiler",
        "C++ compiler",
        "hipcc",
        "ROCm development files",
        "Python headers",
    }
    got = by_name(items)
    assert "12.0 GiB free" in got["disk"].detail and "about 38 GiB" in got["disk"].detail
    assert got["disk"].fix == "free space there, or pass --build-dir on a bigger disk"
    assert got["cmake"].severity == "warning"  # torch-build-deps installs it
    assert (got["cmake"].fix or "").endswith("or: /v/bin/python -m pip install cmake")
    assert "rocm-hip-sdk" in (got["hipcc"].fix or "")
    assert got["Python headers"].fix == "sudo apt install python3.11-dev (or python3.11-devel)"
    assert "build-essential" in (got["C++ compiler"].fix or "")
    assert not got["ccache"].ok and got["ccache"].severity == "warning"
    assert all(i.fix for i in items if not i.ok)
    assert got["hipcc"].line().startswith("[FAIL] hipcc: not in PATH or /opt/rocm/bin (fix: ")


def test_tools_in_the_target_venv_count(tmp_path: Path) -> None:
    files = ROCM_FILES | {"/v/bin/cmake", "/v/bin/ninja"}
    tools = {k: v for k, v in FULL_TOOLS.items() if k not in {"cmake", "ninja"}}
    items = run_preflight(
        backend="rocm", build_dir=tmp_path, python="/v/bin/python", probes=probes(tools, files)
    )
    assert by_name(items)["cmake"].detail == "/v/bin/cmake"
    assert blocking(items) == []


def test_cuda_host_needs_nvcc_not_hipcc(tmp_path: Path) -> None:
    files = {"/usr/include/python3.11/Python.h"}
    items = run_preflight(
        backend="cuda",
        build_dir=tmp_path,
        python="/v/bin/python",
        probes=probes(FULL_TOOLS, files),
        cuda_home="/cuda",
    )
    names = by_name(items)
    assert "hipcc" not in names
    assert [i.name for i in blocking(items)] == ["nvcc"]
    files.add("/cuda/bin/nvcc")
    items = run_preflight(
        backend="cuda",
        build_dir=tmp_path,
        python="/v/bin/python",
        probes=probes(FULL_TOOLS, files),
        cuda_home="/cuda",
    )
    assert blocking(items) == []


def test_small_memory_is_a_warning_and_disk_need_shrinks_without_extras(tmp_path: Path) -> None:
    items = run_preflight(
        backend="rocm",
        build_dir=tmp_path,
        python="/v/bin/python",
        probes=probes(FULL_TOOLS, ROCM_FILES, free_gib=31, mem_gib=12),
        triton=False,
        torchvision=False,
    )
    got = by_name(items)
    assert got["disk"].ok  # 31 GiB is enough for torch alone
    assert not got["memory"].ok and got["memory"].severity == "warning"
    assert blocking(items) == []


def test_broken_interpreter(tmp_path: Path) -> None:
    items = run_preflight(
        backend="rocm", build_dir=tmp_path, python="/nope", probes=probes(FULL_TOOLS, ROCM_FILES, python=None)
    )
    assert [i.name for i in blocking(items)] == ["python"]
