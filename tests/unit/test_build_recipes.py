"""Build plans for three kinds of machines, checked step by step."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, Host, Machine
from rocmkit.source_build.recipes import BuildOptions, HostFacts, load_build_matrix, make_recipe
from rocmkit.source_build.targets import build_memory, target_from_args, target_from_machine
from rocmkit.util.buildjobs import max_jobs

GIB = 1024**3
PY = "/opt/venv/bin/python"
ROCMKIT_PY = "/usr/bin/python3"


def workstation_gfx1031() -> Machine:
    # RX 6700 XT next to the Ryzen's integrated gfx90c (as in the rx6800m-gfx1031-gfx90c capture).
    return Machine(
        gpus=(
            Gpu(vendor="amd", index=0, arch="gfx1031", name="AMD Radeon RX 6700 XT", integrated=False),
            Gpu(vendor="amd", index=1, arch="gfx90c", name="AMD Radeon Graphics", integrated=True),
        ),
        host=Host(cpu_cores=16, memory_bytes=32 * GIB),
    )


def cluster_gfx90a() -> Machine:
    gcds = tuple(
        Gpu(vendor="amd", index=i, arch="gfx90a", name="AMD Instinct MI250X", integrated=False)
        for i in range(8)
    )
    return Machine(gpus=gcds, host=Host(cpu_cores=128, memory_bytes=512 * GIB))


def nvidia_node() -> Machine:
    return Machine(
        gpus=(
            Gpu(
                vendor="nvidia", index=0, arch="sm_90", name="NVIDIA H100 80GB HBM3", compute_capability="9.0"
            ),
            Gpu(vendor="nvidia", index=1, arch=None, name="NVIDIA A100-SXM4-80GB", compute_capability=None),
        ),
        host=Host(cpu_cores=64, memory_bytes=256 * GIB),
    )


def host_of(machine: Machine, ccache: str | None = None) -> HostFacts:
    return HostFacts(cores=machine.host.cpu_cores, memory_bytes=machine.host.memory_bytes, ccache=ccache)


def options(tmp_path: Path, **kw: object) -> BuildOptions:
    return BuildOptions(build_dir=tmp_path / "b", python=PY, rocmkit_python=ROCMKIT_PY, **kw)  # type: ignore[arg-type]


def test_gfx1031_workstation_plan_step_by_step(tmp_path: Path) -> None:
    machine = workstation_gfx1031()
    release = load_build_matrix().release("2.7")
    target = target_from_machine(machine)
    assert target.backend == "rocm"
    assert target.archs == ("gfx1031",)  # the iGPU is left out ...
    assert any("gfx90c" in s and "integrated" in s for s in target.skipped)  # ... and the plan says so

    recipe = make_recipe(release, target, host_of(machine, ccache="/usr/bin/ccache"), options(tmp_path))
    b = (tmp_path / "b").resolve()
    names = [s.name for s in recipe.steps]
    assert names == [
        "torch-source",
        "torch-build-deps",
        "triton-source",
        "triton-build-deps",
        "triton-wheel",
        "torch-hipify",
        "torch-wheel",
        "torch-install",
        "vision-source",
        "vision-wheel",
        "vision-install",
        "wheelhouse",
        "doctor",
    ]
    steps = {s.name: s for s in recipe.steps}

    clone = steps["torch-source"]
    assert clone.argv[:2] == ("git", "clone")
    assert "--branch" in clone.argv and clone.argv[clone.argv.index("--branch") + 1] == "v2.7.1"
    assert "--recurse-submodules" in clone.argv
    assert clone.argv[-2:] == ("https://github.com/pytorch/pytorch.git", str(b / "src/pytorch"))
    assert clone.clean == (str(b / "src/pytorch"),)

    assert steps["torch-build-deps"].argv == (PY, "-m", "pip", "install", "-r", "requirements.txt")
    assert steps["torch-build-deps"].cwd == str(b / "src/pytorch")

    pin = steps["triton-source"].argv
    assert pin[:3] == (ROCMKIT_PY, "-m", "rocmkit.source_build.pin")
    assert pin[pin.index("--pin-file") + 1] == ".ci/docker/ci_commit_pins/triton.txt"
    assert pin[pin.index("--torch-src") + 1] == str(b / "src/pytorch")
    assert "--expect" not in pin  # 2.7's commit is not in build.toml: the checkout decides

    triton_wheel = steps["triton-wheel"]
    assert triton_wheel.argv[-1] == str(b / "src/triton/python")  # Triton <= 3.3 keeps setup.py there
    assert "--no-build-isolation" in triton_wheel.argv
    assert triton_wheel.env == {"MAX_JOBS": "7", "TRITON_BUILD_WITH_CCACHE": "true"}

    hipify = steps["torch-hipify"]
    assert hipify.argv == (PY, "tools/amd_build/build_amd.py")
    assert hipify.cwd == str(b / "src/pytorch")

    wheel = steps["torch-wheel"]
    assert wheel.argv[:6] == (PY, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps")
    assert wheel.argv[wheel.argv.index("-w") + 1] == str(b / "wheelhouse")
    env = wheel.env
    assert env["USE_ROCM"] == "1" and env["USE_CUDA"] == "0"
    assert env["PYTORCH_ROCM_ARCH"] == "gfx1031"
    assert env["ROCM_PATH"] == "/opt/rocm"
    # 32 GiB: (32 - 2) / 4 GiB per ROCm job = 7, below the 16 cores.
    assert env["MAX_JOBS"] == "7"
    assert env["CMAKE_C_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["CMAKE_HIP_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["PYTORCH_BUILD_VERSION"] == "2.7.1+rocmkit.gfx1031"

    install = steps["torch-install"].argv
    assert install[:7] == (PY, "-m", "pip", "install", "--no-index", "--find-links", str(b / "wheelhouse"))
    assert "torch==2.7.1+rocmkit.gfx1031" in install and "triton" in install

    vision = steps["vision-source"].argv
    assert vision[vision.index("--branch") + 1] == "v0.22.1"
    assert steps["vision-wheel"].env["FORCE_CUDA"] == "1"
    assert "PYTORCH_BUILD_VERSION" not in steps["vision-wheel"].env
    assert steps["wheelhouse"].argv == (
        ROCMKIT_PY, "-m", "rocmkit.source_build.wheelhouse",
        "--wheelhouse", str(b / "wheelhouse"), "--python", PY, "--arch", "gfx1031",
    )  # fmt: skip
    assert steps["doctor"].argv == (PY, "-m", "rocmkit", "doctor")
    # Notes carry the rule and the unconfirmed facts.
    assert any(n.startswith("MAX_JOBS = min(cores") and n.endswith("= 7") for n in recipe.notes)
    assert any(n.startswith("unconfirmed in build.toml: triton") for n in recipe.notes)
    assert any("rocmkit installed in" in n for n in recipe.notes)  # PY is not this interpreter


def test_gfx90a_cluster_node_plan(tmp_path: Path) -> None:
    machine = cluster_gfx90a()
    release = load_build_matrix().release("2.12.1")
    target = target_from_machine(machine)
    assert target.archs == ("gfx90a",)  # eight GCDs, one arch
    recipe = make_recipe(
        release, target, host_of(machine), options(tmp_path, torchvision=False, doctor=False)
    )
    steps = {s.name: s for s in recipe.steps}
    assert [s.name for s in recipe.steps] == [
        "torch-source",
        "torch-build-deps",
        "triton-source",
        "triton-build-deps",
        "triton-wheel",
        "torch-hipify",
        "torch-wheel",
        "torch-install",
        "wheelhouse",
    ]
    # build.toml records 2.12's pin (abbreviated); the pin step cross-checks it against the checkout.
    pin = steps["triton-source"].argv
    assert pin[pin.index("--expect") + 1] == "5d6048aa"
    assert steps["triton-wheel"].argv[-1].endswith("src/triton")  # setup.py at the root from 3.4 on
    assert steps["torch-source"].argv[steps["torch-source"].argv.index("--branch") + 1] == "v2.12.1"
    env = steps["torch-wheel"].env
    assert env["PYTORCH_ROCM_ARCH"] == "gfx90a"
    assert env["MAX_JOBS"] == "127"  # min(128 cores, (512 - 2) / 4)
    assert "CMAKE_C_COMPILER_LAUNCHER" not in env  # no ccache on this host
    assert any("ccache not found" in n for n in recipe.notes)
    assert recipe.facts["triton_commit"] == "5d6048aa"


def test_nvidia_node_plan(tmp_path: Path) -> None:
    machine = nvidia_node()
    looked_up: list[str] = []

    def cc_of(name: str) -> str | None:
        looked_up.append(name)
        return "8.0" if "A100" in name else None

    target = target_from_machine(machine, nvidia_cc=cc_of)
    assert target.backend == "cuda"
    assert target.archs == ("9.0", "8.0")
    assert looked_up == ["NVIDIA A100-SXM4-80GB"]  # only the GPU whose capability was unknown
    release = load_build_matrix().release("2.9")
    recipe = make_recipe(release, target, host_of(machine, ccache="/usr/bin/ccache"), options(tmp_path))
    names = [s.name for s in recipe.steps]
    assert "torch-hipify" not in names
    env = {s.name: s for s in recipe.steps}["torch-wheel"].env
    assert env["USE_CUDA"] == "1" and env["USE_ROCM"] == "0"
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0;8.0"
    assert "PYTORCH_ROCM_ARCH" not in env
    assert env["MAX_JOBS"] == "64"  # (256 - 2) / 3 = 84 > 64 cores
    assert env["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["PYTORCH_BUILD_VERSION"] == "2.9.1+rocmkit.sm90.sm80"
    assert recipe.title == "torch 2.9.1 for 9.0;8.0 (CUDA)"


def test_given_archs_and_jobs_override(tmp_path: Path) -> None:
    target = target_from_args(["gfx1031", "gfx1030", "gfx1031"], None)
    assert target.archs == ("gfx1031", "gfx1030")
    release = load_build_matrix().release(None)
    host = HostFacts(cores=8, memory_bytes=8 * GIB)
    recipe = make_recipe(release, target, host, options(tmp_path, jobs=3, triton=False, install=False))
    env = {s.name: s for s in recipe.steps}["torch-wheel"].env
    assert env["PYTORCH_ROCM_ARCH"] == "gfx1031;gfx1030"
    assert env["MAX_JOBS"] == "3"
    names = [s.name for s in recipe.steps]
    # torchvision still needs torch installed to build; no doctor when not installing.
    assert "triton-source" not in names and "doctor" not in names and "torch-install" in names
    assert "triton" not in {s.name: s for s in recipe.steps}["torch-install"].argv
    assert any("rocmkit install --wheelhouse" in n for n in recipe.notes)


def test_plan_fingerprint_changes_with_the_plan(tmp_path: Path) -> None:
    release = load_build_matrix().release("2.7")
    host = HostFacts(cores=8, memory_bytes=64 * GIB)
    a = make_recipe(release, target_from_args(["gfx1031"], None), host, options(tmp_path))
    b = make_recipe(release, target_from_args(["gfx1030"], None), host, options(tmp_path))
    same = make_recipe(release, target_from_args(["gfx1031"], None), host, options(tmp_path))
    assert a.fingerprint() == same.fingerprint()
    assert a.fingerprint() != b.fingerprint()
    # The clone steps do not depend on the archs: their keys stay, so a resumed build keeps them.
    assert a.step_keys()[:5] == b.step_keys()[:5]
    assert a.step_keys()[5] != b.step_keys()[5]


@pytest.mark.parametrize(
    ("archs", "message"),
    [
        (["gfx1031", "8.6"], "mixes AMD and NVIDIA"),
        (["gfx10x"], "not a gfx arch"),
        (["turing"], "neither a gfx arch nor a CUDA compute capability"),
    ],
)
def test_bad_archs_are_usage_errors(archs: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        target_from_args(archs, None)


def test_cuda_arch_spellings() -> None:
    assert target_from_args(["sm_86", "8.6", "sm_90a"], None).archs == ("8.6", "9.0a")


def test_machine_without_gpu_needs_arch() -> None:
    with pytest.raises(UsageError, match="no visible AMD or NVIDIA GPU") as err:
        target_from_machine(Machine())
    assert err.value.fix is not None and "--arch" in err.value.fix


def test_build_memory_respects_a_container_limit() -> None:
    files = {"/sys/fs/cgroup/memory.max": "17179869184\n"}
    assert build_memory(512 * GIB, files.get) == 16 * GIB
    assert build_memory(512 * GIB, {"/sys/fs/cgroup/memory.max": "max\n"}.get) == 512 * GIB
    v1 = {"/sys/fs/cgroup/memory/memory.limit_in_bytes": str(9223372036854771712)}
    assert build_memory(64 * GIB, v1.get) == 64 * GIB  # v1's "no limit" is a huge number
    assert build_memory(None, files.get) == 16 * GIB
    no_files: dict[str, str] = {}
    assert build_memory(None, no_files.get) is None
    # 16 GiB in a container: (16 - 2) / 4 = 3 ROCm jobs, not 128.
    assert max_jobs(128, build_memory(512 * GIB, files.get), "rocm")[0] == 3
