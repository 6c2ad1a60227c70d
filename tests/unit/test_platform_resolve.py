"""resolve on aarch64 and WSL2: exact plans on the captures, the refusals, and the data file."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from rocmkit.datafiles import data_files
from rocmkit.detect import load_machine
from rocmkit.errors import DataError, NoPlanError
from rocmkit.machine import Gpu, Host, Machine, Platform
from rocmkit.matrix.platforms import parse_platforms
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, resolve
from rocmkit.util.paths import matrices_dir
from tests.conftest import CAPTURES

R9700 = "r9700-gfx1201-wsl2-ubuntu24.04-rocm7.2.1-dxg-detection-unset"
STRIX = "strixhalo-gfx1151-wsl2-ubuntu24.04-rocm7.2.1-librocdxg"
GH200 = "gh200-aarch64-nvidia-smi-580.105.08"
WSL_STEP = (
    "WSL2: install replaces the wheel's bundled libhsa-runtime64.so with /opt/rocm's WSL runtime, as AMD's WSL "
    "guide does (journaled, and restored if the install fails)"
)


def _plan(machine: Machine, **kw: str | bool) -> Plan:
    return resolve(machine, Constraints(python="3.12", **kw))  # type: ignore[arg-type]


def test_gh200_gets_the_newest_cuda_build_published_for_aarch64() -> None:
    plan = _plan(load_machine(CAPTURES / GH200))
    assert plan.platform == "linux-aarch64"
    assert plan.backend.tag == "cu132" and plan.torch_version == "2.15.0+cu132"
    assert plan.requirements == (
        "torch==2.15.0+cu132",
        "torchvision==0.29.2+cu132",
        "torchaudio==2.11.1+cu132",
        "triton~=3.9.0",
    )
    assert plan.index_urls == ("https://download.pytorch.org/whl/cu132",)
    assert plan.env == {} and plan.warnings == ()
    assert (
        plan.reasons[0]
        == "aarch64 host: only builds published for linux-aarch64 are considered (matrices/platforms.toml)"
    )


def test_aarch64_cuda_index_without_aarch64_wheels_is_never_planned() -> None:
    gh = load_machine(CAPTURES / GH200)
    assert _plan(gh, torch="2.8").backend.tag == "cu129"  # 2.8's only aarch64 CUDA build
    with pytest.raises(NoPlanError):
        _plan(gh, cuda="12.8", torch="2.8")  # cu128 exists for 2.8 on x86_64 only
    # No aarch64 CUDA list is recorded for 2.6: x86_64 with the same GPU and driver gets a CUDA
    # build of it, aarch64 none.
    x86 = dataclasses.replace(gh, host=dataclasses.replace(gh.host, arch="x86_64"))
    assert _plan(x86, torch="2.6").backend.kind == "cuda" and _plan(x86, torch="2.6").platform is None
    with pytest.raises(NoPlanError):
        _plan(gh, torch="2.6")


def _aarch64(gpus: tuple[Gpu, ...]) -> Machine:
    return Machine(gpus=gpus, host=Host(arch="aarch64", kernel="6.8.0-1027-nvidia-64k"))


def test_aarch64_with_an_amd_gpu_is_refused_naming_why() -> None:
    m = _aarch64((Gpu(vendor="amd", index=0, arch="gfx942", name="AMD Instinct MI300X"),))
    with pytest.raises(NoPlanError) as err:
        _plan(m)
    assert "aarch64" in err.value.message and "no ROCm build" in err.value.message
    assert "--backend cpu" in (err.value.fix or "")
    with pytest.raises(NoPlanError):
        _plan(Machine(host=Host(arch="aarch64")), rocm="7.2")
    # --cpu is a plan: CPU aarch64 wheels, from the cpu index.
    cpu = _plan(m, cpu=True)
    assert cpu.backend.tag == "cpu" and cpu.platform == "linux-aarch64"
    assert cpu.index_urls[0] == "https://download.pytorch.org/whl/cpu"
    assert any("PyPI's aarch64 torch is a cu130 build from 2.11" in r for r in cpu.reasons)


def test_aarch64_cpu_plans_skip_releases_without_aarch64_wheels() -> None:
    old = Constraints(python="3.11", torch="2.0", cpu=True)
    assert resolve(Machine(host=Host(arch="x86_64")), old).torch_version == "2.0.1+cpu"
    with pytest.raises(NoPlanError):  # 2.0 has no CPU aarch64 wheels on the cpu index (from 2.1)
        resolve(Machine(host=Host(arch="aarch64")), old)
    arm = resolve(Machine(host=Host(arch="aarch64")), dataclasses.replace(old, torch="2.1"))
    assert arm.torch_version == "2.1.2+cpu" and arm.platform == "linux-aarch64"


def test_wsl_radeon_plan_is_rocm72_with_dxg_detection() -> None:
    plan = _plan(load_machine(CAPTURES / R9700))
    assert plan.platform == "wsl2-x86_64"
    assert plan.backend.tag == "rocm7.2" and plan.torch_version == "2.15.0+rocm7.2"
    assert plan.requirements == (
        "torch==2.15.0+rocm7.2",
        "torchvision==0.29.2+rocm7.2",
        "torchaudio==2.11.1+rocm7.2",
    )
    assert plan.index_urls == ("https://download.pytorch.org/whl/rocm7.2",)
    assert plan.env == {"HSA_ENABLE_DXG_DETECTION": "1"}
    assert plan.target_archs == ("gfx1201",)
    assert WSL_STEP in plan.reasons
    assert (
        "WSL2: the Windows driver's version was not read; ROCm 7.2 needs AMD Software: Adrenalin Edition 26.2.2 "
        "or newer (set ROCMKIT_WSL_DRIVER to check it)"
    ) in plan.warnings
    # No amdgpu on WSL2: the kernel-driver window is not judged from the WSL kernel.
    assert not any("kernel driver" in w or "amdgpu-dkms" in w for w in plan.warnings)
    # The plan reads back with its platform and the WSL variable (planschema allows it).
    assert Plan.from_dict(plan.to_dict()) == plan


def test_wsl_strix_halo_plan_and_driver_checks() -> None:
    m = load_machine(CAPTURES / STRIX)
    plan = _plan(m)
    assert (plan.backend.tag, plan.target_archs, plan.env) == (
        "rocm7.2",
        ("gfx1151",),
        {"HSA_ENABLE_DXG_DETECTION": "1"},
    )
    assert not any("Windows driver" in w or "older than" in w for w in plan.warnings)  # 26.3.1 >= 26.2.2
    old = dataclasses.replace(m, platform=dataclasses.replace(m.platform, windows_driver="25.3.1"))
    assert any(w.startswith("WSL2: Adrenalin 25.3.1 is older than 26.2.2") for w in _plan(old).warnings)
    # A GPU AMD does not list for WSL2 is warned about; another installed ROCm line too.
    odd = dataclasses.replace(
        m,
        gpus=(dataclasses.replace(m.gpus[0], arch="gfx1030", name="AMD Radeon RX 6800"),),
        rocm=dataclasses.replace(m.rocm, version="6.4.1"),
    )
    odd_plan = _plan(odd)
    assert any("is not among the GPUs AMD supports on WSL2" in w for w in odd_plan.warnings)
    assert any("AMD supports ROCm on WSL2 with 7.2.x and librocdxg only" in w for w in odd_plan.warnings)
    # torch uses /opt/rocm's runtime on WSL2: the installed line's wheels, not 7.2's.
    assert (odd_plan.backend.rocm or "").startswith("6.4") and "HSA_ENABLE_DXG_DETECTION" not in odd_plan.env


def test_cpu_and_cuda_plans_on_wsl_carry_no_rocm_step() -> None:
    plan = _plan(load_machine(CAPTURES / STRIX), cpu=True)
    assert plan.platform == "wsl2-x86_64" and plan.env == {} and WSL_STEP not in plan.reasons


def test_plain_linux_plans_are_unchanged() -> None:
    plan = _plan(load_machine(CAPTURES / "synthetic-h100x2-nvidia-550"))
    assert plan.platform is None and "platform" in plan.to_dict()


def test_platform_data_is_registered_and_checked(tmp_path: Path) -> None:
    assert any("platforms.toml" in f.names for f in data_files())
    data = parse_platforms(matrices_dir() / "platforms.toml")
    assert data.cuda_aarch64("2.13.0") == ("cu126", "cu130", "cu132") and data.cuda_aarch64("2.6.0") is None
    assert data.cuda_aarch64("2.15.0") == ("cu126", "cu130", "cu132", "cu134")
    assert data.wsl_gpu("gfx1151") is not None and data.wsl_gpu("gfx1030") is None
    bad = tmp_path / "platforms.toml"
    text = (matrices_dir() / "platforms.toml").read_text()
    for broken in (
        text.replace('cuda = ["cu128"]', 'cuda = ["rocm6.4"]'),
        text.replace('sources = ["ti_21480431"]', 'sources = ["nowhere"]'),
        text.replace('adrenalin_min = "26.2.2"', 'adrenalin_min = "latest"'),
        text.replace('gfx = "gfx1200"', 'gfx = "navi44"'),
    ):
        bad.write_text(broken)
        with pytest.raises(DataError):
            parse_platforms(bad)
    shutil.rmtree(tmp_path)


def test_wsl_record_defaults_off_wsl() -> None:
    assert Platform().wsl is False and _aarch64(()).platform == Platform()


def test_jax_on_gh200_takes_a_cuda_plugin_release_with_aarch64_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocmkit.resolve import platform

    gh = load_machine(CAPTURES / GH200)
    plan = _plan(gh, framework="jax")
    assert plan.platform == "linux-aarch64" and plan.backend.tag == "cuda13"
    assert plan.requirements == (
        "jax==0.12.1", "jaxlib==0.12.1", "jax-cuda13-plugin[with-cuda]==0.12.1", "jax-cuda13-pjrt==0.12.1",
    )  # fmt: skip
    data = parse_platforms(matrices_dir() / "platforms.toml")
    assert data.jax_aarch64("cuda12", "0.9.0") and data.jax_aarch64("cuda13", "0.7.2")
    assert not data.jax_aarch64("cuda12", "0.4.25") and not data.jax_aarch64("rocm7", "0.12.0")
    # A release whose aarch64 wheels are missing is passed over for the newest one that has them.
    text = (matrices_dir() / "platforms.toml").read_text().replace(
        'first = "0.7.2"\nmissing = []', 'first = "0.7.2"\nmissing = ["0.12.1"]'
    )
    (tmp_path / "platforms.toml").write_text(text)
    monkeypatch.setattr(platform, "load_platforms", lambda: parse_platforms(tmp_path / "platforms.toml"))
    assert _plan(gh, framework="jax").jax_version == "0.12.0.1"  # the release before 0.12.1
    # x86_64 is not held to the aarch64 list.
    x86 = dataclasses.replace(gh, host=dataclasses.replace(gh.host, arch="x86_64"))
    assert _plan(x86, framework="jax").jax_version == "0.12.1"


def test_jax_rocm_on_aarch64_is_refused_and_on_wsl_warned() -> None:
    m = _aarch64((Gpu(vendor="amd", index=0, arch="gfx942", name="AMD Instinct MI300X"),))
    with pytest.raises(NoPlanError, match="jax ROCm plugins have x86_64 wheels only"):
        _plan(m, framework="jax")
    plan = _plan(load_machine(CAPTURES / STRIX), framework="jax")
    assert plan.platform == "wsl2-x86_64" and plan.env.get("HSA_ENABLE_DXG_DETECTION") == "1"
    assert any("does not enable or validate JAX" in w for w in plan.warnings)
    assert WSL_STEP not in plan.reasons  # the runtime step is torch's


def test_wsl_legacy_runtime_capture_plans_its_own_rocm_line() -> None:
    # ROCm/ROCm#4198: an RX 7900 GRE on AMD's older WSL runtime (ROCm 6.3.0, no librocdxg).
    m = load_machine(CAPTURES / "rx7900gre-gfx1100-wsl2-ubuntu24.04-rocm6.3.0-legacy-runtime")
    assert m.platform.wsl and m.platform.librocdxg == () and [g.arch for g in m.gpus] == ["gfx1100"]
    plan = _plan(m)
    assert plan.platform == "wsl2-x86_64" and plan.backend.tag == "rocm6.3" and plan.target_archs == ("gfx1100",)
    assert plan.env == {}  # the older runtime needs no DXG variable
    assert any("AMD supports ROCm on WSL2 with 7.2.x and librocdxg only" in w for w in plan.warnings)
    assert WSL_STEP in plan.reasons


def test_wsl_without_rocm_plans_the_supported_line_and_says_to_install_it() -> None:
    from rocmkit.machine import RocmInfo

    m = dataclasses.replace(load_machine(CAPTURES / STRIX), rocm=RocmInfo())
    plan = _plan(m)
    assert plan.backend.tag == "rocm7.2" and plan.env == {"HSA_ENABLE_DXG_DETECTION": "1"}
    assert any(w.startswith("WSL2: no ROCm is installed, but AMD supports ROCm on WSL2 with 7.2.x") for w in plan.warnings)


def test_wsl_with_amds_own_channel_says_where_librocdxg_goes() -> None:
    plan = _plan(load_machine(CAPTURES / STRIX), channel="amd")
    assert plan.platform == "wsl2-x86_64" and plan.channel == "amd"
    assert any("Build with TheRock Wheels" in w for w in plan.warnings)
    assert WSL_STEP not in plan.reasons  # the step is for PyTorch's ROCm wheels with /opt/rocm's runtime
