"""The resolver on a table of machines (built directly) -> expected plans, checked against the matrix."""

from __future__ import annotations

import pytest
from packaging.version import Version

from rocmkit.errors import NoPlanError, UsageError
from rocmkit.machine import Gpu, Host, Machine, NvidiaInfo, RocmInfo
from rocmkit.matrix import load_matrix
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, resolve
from rocmkit.resolve.render import requirements_text, summary_text


def amd(
    *archs: str, integrated: tuple[bool, ...] = (), pci: tuple[str | None, ...] = (), **rocm: str
) -> Machine:
    gpus = tuple(
        Gpu(
            vendor="amd",
            index=i,
            arch=arch or None,
            pci_device_id=pci[i] if i < len(pci) else None,
            integrated=integrated[i] if i < len(integrated) else None,
            name=f"GPU-{arch}",
        )
        for i, arch in enumerate(archs)
    )
    return Machine(gpus=gpus, rocm=RocmInfo(**rocm))  # type: ignore[arg-type]


def nvidia(name: str, driver: str | None, cuda: str | None = None) -> Machine:
    return Machine(
        gpus=(Gpu(vendor="nvidia", index=0, name=name),),
        nvidia=NvidiaInfo(driver_version=driver, cuda_version=cuda),
    )


def go(machine: Machine, **kw: object) -> Plan:
    kw.setdefault("python", "3.11")
    return resolve(machine, Constraints(**kw))  # type: ignore[arg-type]


def check_against_matrix(plan: Plan) -> None:
    """Every pinned plan agrees with torch.toml: the variant exists and carries the target archs."""
    m = load_matrix()
    if not plan.torch_version:
        return
    version, _, index = plan.torch_version.partition("+")
    release = m.torch_release(version)
    assert release is not None and release.supports_python(plan.python or "")
    variant = release.variant(index)
    assert variant is not None and plan.backend.tag == index
    assert set(plan.target_archs) <= set(variant.archs)
    assert plan.requirements[0] == f"torch=={plan.torch_version}"
    assert plan.index_urls[0].endswith("/" + index)


def test_gfx1031_uses_gfx1030_wheels_with_the_override() -> None:
    plan = go(amd("gfx1031"), torch="2.7")
    check_against_matrix(plan)
    assert plan.torch_version == "2.7.1+rocm6.3"
    assert plan.env == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    assert plan.target_archs == ("gfx1030",)
    assert (
        "gfx1031 is not in torch 2.7.1+rocm6.3's arch list; gfx1030 is, and gfx1031 runs gfx1030 code "
        "with HSA_OVERRIDE_GFX_VERSION=10.3.0" in plan.reasons
    )
    assert "pytorch-triton-rocm==3.3.1" in plan.requirements and plan.triton == "pytorch-triton-rocm==3.3.1"


def test_mixed_gpus_hide_the_one_that_cannot_work() -> None:
    plan = go(amd("gfx1031", "gfx90c", integrated=(False, True)), torch="2.5")
    check_against_matrix(plan)
    assert plan.torch_version == "2.5.1+rocm6.2"
    assert plan.env == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HIP_VISIBLE_DEVICES": "0"}
    assert len(plan.unsupported_gpus) == 1 and "gfx90c" in plan.unsupported_gpus[0]
    assert any("GPU 1 (gfx90c" in w and "HIP_VISIBLE_DEVICES=0" in w for w in plan.warnings)


def test_one_override_serves_a_native_sibling_too() -> None:
    # RX 7900 XTX (gfx1100) + 780M iGPU (gfx1103): 11.0.0 makes the iGPU run gfx1100 code; the dGPU is gfx1100.
    plan = go(amd("gfx1100", "gfx1103", integrated=(False, True)), torch="2.7")
    assert plan.env == {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    assert plan.unsupported_gpus == ()


def test_override_never_breaks_a_discrete_gpu_of_another_arch() -> None:
    # MI100 (gfx908) + Raphael iGPU (gfx1036): overriding to 10.3.0 would misdescribe the MI100.
    plan = go(amd("gfx908", "gfx1036", integrated=(False, True)))
    check_against_matrix(plan)
    assert "HSA_OVERRIDE_GFX_VERSION" not in plan.env
    assert plan.env["HIP_VISIBLE_DEVICES"] == "0"
    assert plan.target_archs == ("gfx908",)


def test_native_wheel_preferred_over_override_in_the_same_release() -> None:
    # gfx1101 is native on rocm6.2.4/6.3 for 2.7; no override needed.
    plan = go(amd("gfx1101"), torch="2.7")
    assert plan.env == {} and plan.target_archs == ("gfx1101",)
    # torch 2.5's rocm6.2 wheels lack gfx1101: override to gfx1100.
    plan = go(amd("gfx1101"), torch="2.5", rocm="6.2")
    assert plan.env == {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"} and plan.target_archs == ("gfx1100",)


def test_strix_halo_gets_the_first_release_that_lists_gfx1151() -> None:
    plan = go(amd("gfx1151", integrated=(True,)))
    check_against_matrix(plan)
    assert plan.backend.tag == "rocm7.2" and plan.target_archs == ("gfx1151",)
    with pytest.raises(NoPlanError) as info:
        go(amd("gfx1151"), torch="2.8")
    assert "torch 2.8 has no ROCm wheels with device code for gfx1151" in info.value.message
    assert "--torch 2.11" in (info.value.fix or "") and "--channel amd-nightly" in (info.value.fix or "")


def test_therock_is_amd_nightly_with_device_extras() -> None:
    plan = go(amd("gfx1151", "gfx1100"), channel="therock")
    assert plan.channel == "amd-nightly" and plan.backend.tag == "amd-nightly-gfx1100-gfx1151"
    assert plan.requirements[0] == "torch[device-gfx1100,device-gfx1151]"
    assert plan.index_urls == ("https://nightly.repo.amd.com/rocm/whl-next/",)
    assert any("old name of amd-nightly" in r for r in plan.reasons)
    with pytest.raises(NoPlanError, match=r"Python 3\.10 to 3\.14"):
        go(amd("gfx1151"), channel="therock", python="3.15")


def test_arch_from_pci_id_when_detection_lacks_it() -> None:
    plan = go(amd("", pci=("0x7550",)))
    assert plan.target_archs == ("gfx1201",)
    assert any("PCI id 0x7550" in r for r in plan.reasons)


def test_unknown_arch_is_no_plan_with_fix() -> None:
    with pytest.raises(NoPlanError) as info:
        go(amd("gfx1152", integrated=(True,)))
    assert "--channel amd-nightly" in (info.value.fix or "")


def test_no_gpu_gives_cpu_wheels() -> None:
    plan = go(Machine())
    check_against_matrix(plan)
    assert plan.backend.tag == "cpu"
    # PyPI follows the PyTorch index for the interpreter's Triton, never before it.
    assert plan.index_urls == ("https://download.pytorch.org/whl/cpu", "https://pypi.org/simple")
    assert plan.requirements[0].endswith("+cpu")


def test_cpu_plan_offers_the_interpreter_triton_as_a_companion() -> None:
    plan = go(Machine(), torch="2.13")
    assert plan.requirements == (
        "torch==2.13.0+cpu",
        "torchvision==0.28.0+cpu",
        "torchaudio==2.11.0+cpu",
        "triton==3.8.0",
        "numpy",
    )
    assert plan.companions == ("torchvision==0.28.0+cpu", "torchaudio==2.11.0+cpu", "triton==3.8.0", "numpy")
    assert plan.triton is None  # torch itself pins none on the CPU
    assert any("TRITON_INTERPRET=1" in r for r in plan.reasons)
    # A release without a recorded interpreter Triton gets none, and no PyPI index.
    older = go(Machine(), torch="2.5")
    assert not any(r.startswith(("triton", "numpy")) for r in older.requirements)
    assert older.index_urls == ("https://download.pytorch.org/whl/cpu",)


def test_hidden_gpus_give_cpu_wheels() -> None:
    machine = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx1100", visible=False),))
    assert go(machine).backend.tag == "cpu"


def test_index_base_from_the_constraint_only(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = go(amd("gfx1030"), torch="2.5", index_base="http://127.0.0.1:8123/whl/")
    assert plan.index_urls == ("http://127.0.0.1:8123/whl/rocm6.2",)
    # ROCMKIT_INDEX_BASE is read once, by the session (tests/unit/test_session.py), not here.
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", "http://mirror.example/pt")
    assert go(Machine()).index_urls[0] == "https://download.pytorch.org/whl/cpu"


def test_rocm_constraint() -> None:
    assert go(amd("gfx90a"), rocm="6.2").torch_version == "2.5.1+rocm6.2"
    assert go(amd("gfx90a"), rocm="6.2.4").torch_version == "2.7.1+rocm6.2.4"
    # --backend rocmX.Y on a machine without AMD GPUs: a plan for another machine (an image build).
    plan = go(Machine(), rocm="6.4")
    assert plan.backend.tag == "rocm6.4" and plan.torch_version == "2.9.1+rocm6.4"
    with pytest.raises(NoPlanError, match=r"has no ROCm 9\.9 wheels"):
        go(amd("gfx90a"), rocm="9.9")


def test_unconfirmed_variant_only_when_asked() -> None:
    # 2.14.0+cu126 is only in the candidate's build lists (unconfirmed): within a release a
    # confirmed build wins, so it is chosen (with a warning) only when asked.
    h100 = nvidia("NVIDIA H100 80GB HBM3", "580.65.06")
    assert go(h100, torch="2.14.0").backend.tag == "cu130"  # PyPI's 2.14.0 is the cu130 build
    plan = go(h100, torch="2.14.0", cuda="12.6")
    assert plan.backend.tag == "cu126"
    assert any("unconfirmed" in w and "2.14.0+cu126" in w for w in plan.warnings)


def test_unconfirmed_triton_pin_is_left_to_torch_and_warned() -> None:
    plan = go(amd("gfx942"), torch="2.12.0", rocm="7.2")
    assert plan.triton is None
    assert not any("triton" in r for r in plan.requirements)
    assert any("Triton pin of torch 2.12.0+rocm7.2 is unconfirmed" in w for w in plan.warnings)
    assert go(amd("gfx942"), torch="2.13").triton == "triton-rocm==3.7.1"
    # A confirmed pin is pinned in the plan too.
    assert go(amd("gfx942"), torch="2.9.0").triton == "pytorch-triton-rocm==3.5.0"


def test_python_picks_an_older_release_or_fails_with_the_fix() -> None:
    plan = go(amd("gfx90a"), python="3.8")
    check_against_matrix(plan)
    assert plan.torch_version == "2.4.1+rocm6.1"
    assert any("not 3.8" in r for r in plan.reasons)
    with pytest.raises(NoPlanError) as info:
        go(amd("gfx90a"), python="3.7")
    assert "Python 3.7" in info.value.message and "3.8" in (info.value.fix or "")
    with pytest.raises(NoPlanError, match=r"torch 2\.0 has no wheels for Python 3\.12"):
        go(amd("gfx90a"), python="3.12", torch="2.0")


def test_kernel_driver_window() -> None:
    # ROCm 6.0's amdgpu-dkms supports user space 5.6-6.2 (AMD's support matrix): resolve
    # prefers the newest build inside it, and names the newer one it passed over.
    plan = go(amd("gfx90a", driver_version="6.3.6"))
    check_against_matrix(plan)
    rocm = plan.backend.rocm or ""
    assert rocm.startswith("6.") and Version(rocm) <= Version("6.2.4")
    assert any("was passed over: its ROCm 7.2 is outside the window of amdgpu-dkms 6.3.6" in r for r in plan.reasons)
    assert not any("kernel driver" in w for w in plan.warnings)
    # Asked for explicitly, the newer build is planned, with the warning and the fix.
    plan = go(amd("gfx90a", driver_version="6.3.6"), rocm="7.2")
    assert any(
        "amdgpu-dkms 6.3.6 (ROCm 6.0's) supports ROCm user space 5.6 to 6.2, but the wheel bundles ROCm 7.2" in w
        and "install ROCm 7.2's amdgpu-dkms (6.16.13)" in w
        for w in plan.warnings
    )
    plan = go(amd("gfx90a", driver_version="6.10.5"), rocm="6.3")
    assert any("amdgpu-dkms 6.10.5 (ROCm 6.3) works with ROCm 6.1 to 7.0" in r for r in plan.reasons)
    plan = go(amd("gfx90a", driver_version="6.7.9"))  # no DKMS release rocmkit lists, not a kernel
    assert any("not an amdgpu-dkms release" in r for r in plan.reasons)


def test_rocm7_driver_windows() -> None:
    # AMD GPU Driver 30.10 (ROCm 7.0, module 6.14.14) supports ROCm 6.2 to 10.0.
    plan = go(amd("gfx942", driver_version="6.14.14"))
    assert plan.backend.tag == "rocm7.2" and not any("kernel driver" in w for w in plan.warnings)
    assert any("amdgpu-dkms 6.14.14 (ROCm 7.0) works with ROCm 6.2 to 10.0" in r for r in plan.reasons)
    plan = go(amd("gfx942", driver_version="6.14.14"), rocm="6.1")
    assert any("supports ROCm user space 6.2 to 10.0, but the wheel bundles ROCm 6.1" in w for w in plan.warnings)


def test_upstream_kernel_driver_is_judged_by_the_kernel() -> None:
    # No amdgpu-dkms: the kernel's own amdgpu. Kernel 6.8 carries the driver line of ROCm 6.2's
    # DKMS (6.8.5), window 6.0-7.0; kernel 6.16 that of ROCm 7.2's (6.16.13), window 6.3-10.0.
    old = Machine(
        gpus=(Gpu(vendor="amd", index=0, arch="gfx1100"),),
        rocm=RocmInfo(driver_loaded=True),
        host=Host(kernel="6.8.0-45-generic"),
    )
    plan = go(old)
    assert any("the kernel's own amdgpu (kernel 6.8.0-45-generic) is judged by the kernel version" in r
               for r in plan.reasons)
    assert any("outside the window of the kernel's own amdgpu" in r for r in plan.reasons)
    assert Version(plan.backend.rocm or "0") <= Version("7.0")
    new = Machine(gpus=old.gpus, rocm=old.rocm, host=Host(kernel="6.17.1-arch1"))
    plan = go(new)
    assert plan.backend.tag == "rocm7.2"
    assert any("kernel 6.17.1-arch1" in r and "ROCm 7.2" in r for r in plan.reasons)
    # A driver version printed as the kernel's (amd-smi on Proxmox) is the same thing.
    pve = Machine(gpus=old.gpus, rocm=RocmInfo(driver_version="7.0.0-3-pve", driver_loaded=True))
    assert any("kernel 7.0.0-3-pve" in r for r in go(pve).reasons)


def test_old_userspace_is_fine() -> None:
    plan = go(amd("gfx1030", version="5.7.1"), torch="2.5")
    assert any("installed ROCm 5.7.1 is older than the wheel's 6.2; that is fine" in r for r in plan.reasons)


def test_nightly_channel() -> None:
    plan = go(amd("gfx1100"), channel="nightly")
    assert plan.channel == "nightly" and plan.index_urls == (
        "https://download.pytorch.org/whl/nightly/rocm7.14",
    )
    assert plan.requirements[0].startswith("torch>=") and plan.torch_version is None
    assert go(Machine(), channel="nightly").index_urls[0].endswith("/nightly/cpu")


@pytest.mark.parametrize(
    ("driver", "cuda", "expected", "strict"),
    [
        # CUDA minor-version compatibility: the newest release upstream built for the driver's
        # cu13x (driver >= 580) or cu12x (>= 525.60.13); 2.15's cu126 is known only from the
        # build lists (planned, with 2.13.0+cu126 as its fallback); --strict-data: confirmed only.
        ("580.65.06", None, "2.15.0+cu132", "2.15.0+cu132"),
        ("570.86.10", None, "2.15.0+cu126", "2.13.0+cu126"),
        ("550.54.15", None, "2.15.0+cu126", "2.13.0+cu126"),
        ("525.60.13", None, "2.15.0+cu126", "2.13.0+cu126"),
        ("520.61.05", None, "2.7.1+cu118", "2.7.1+cu118"),
        (None, "12.4", "2.15.0+cu126", "2.13.0+cu126"),  # only nvidia-smi's "CUDA Version"
    ],
)
def test_nvidia_newest_cuda_the_driver_supports(
    driver: str | None, cuda: str | None, expected: str, strict: str
) -> None:
    plan = go(nvidia("NVIDIA H100 80GB HBM3", driver, cuda))
    check_against_matrix(plan)
    assert plan.torch_version == expected
    if expected != strict:
        assert plan.fallback[0] == f"torch=={strict}"
    assert go(nvidia("NVIDIA H100 80GB HBM3", driver, cuda), strict_data=True).torch_version == strict


def test_nvidia_old_gpu_skips_cuda13() -> None:
    plan = go(nvidia("NVIDIA GeForce GTX 1050 Ti", "580.65.06"))
    assert plan.backend.tag != "cu130"
    assert any("cu130 needs compute capability >= 7.5" in r for r in plan.reasons)


def test_nvidia_driver_too_old() -> None:
    with pytest.raises(NoPlanError) as info:
        go(nvidia("Tesla T4", "418.67"))
    assert "update the NVIDIA driver" in (info.value.fix or "")


def test_cpu_flag_and_cuda_flag() -> None:
    assert go(amd("gfx1100"), cpu=True).backend.tag == "cpu"
    assert go(Machine(), cuda="12.6").backend.tag == "cu126"


@pytest.mark.parametrize(
    "kw",
    [
        {"channel": "beta"},
        {"torch": "two"},
        {"rocm": "6.2", "cuda": "12.4"},
        {"python": "3"},
        {"index_base": "mirror.example"},
    ],
)
def test_bad_constraints_are_usage_errors(kw: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        go(Machine(), **kw)


def test_unknown_torch_lists_what_exists() -> None:
    with pytest.raises(NoPlanError) as info:
        go(Machine(), torch="1.13")
    assert "2.5" in (info.value.fix or "")


def test_every_arch_with_wheels_resolves_consistently() -> None:
    """Property over gfx.toml: every arch that some wheel can run gets a plan that the matrix backs."""
    m = load_matrix()
    for arch in m.archs.values():
        runnable = any(
            arch.name in v.archs or (arch.override_arch and arch.override_arch in v.archs)
            for r in m.torch_releases
            for v in r.of_kind("rocm")
            if v.is_confirmed()
        )
        if not runnable:
            from rocmkit.resolve.core import no_rocm_torch_for

            if no_rocm_torch_for(amd(arch.name), m) is not None:
                # No ROCm torch anywhere (old GCN): CPU torch, with the warning that says why.
                cpu = go(amd(arch.name))
                assert cpu.backend.tag == "cpu" and any(arch.name in w for w in cpu.warnings)
                continue
            with pytest.raises(NoPlanError):
                go(amd(arch.name))
            continue
        plan = go(amd(arch.name))
        check_against_matrix(plan)
        if arch.name in plan.target_archs:
            assert "HSA_OVERRIDE_GFX_VERSION" not in plan.env
        else:
            assert plan.env["HSA_OVERRIDE_GFX_VERSION"] == arch.hsa_override


def test_outputs() -> None:
    plan = go(amd("gfx1031"), torch="2.5")
    data = plan.to_dict()
    assert data["schema"] == "rocmkit.plan/1" and data["backend"] == "rocm6.2"
    assert data["env"] == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    assert data["uv_command"].startswith("uv pip install torch==2.5.1+rocm6.2 ")
    assert Plan.from_dict(data) == plan
    req = requirements_text(plan).splitlines()
    assert "--index-url https://download.pytorch.org/whl/rocm6.2" in req
    assert (
        "torch==2.5.1+rocm6.2" in req
        and "# set before running: export HSA_OVERRIDE_GFX_VERSION=10.3.0" in req
    )
    text = summary_text(plan)
    assert "Install with pip:" in text and plan.pip_command() in text


def test_constraint_mismatch_messages_name_what_exists() -> None:
    with pytest.raises(NoPlanError) as info:
        go(nvidia("NVIDIA H100 80GB HBM3", "580.65.06"), cuda="12.4", torch="2.8")
    assert info.value.message == "torch 2.8 has no cu124 wheels for Python 3.11"
    assert info.value.fix == "choose --backend from: cu126, cu128, cu129"
    with pytest.raises(NoPlanError) as info:
        go(amd("gfx1100"), torch="2.5", rocm="6.4")
    assert info.value.fix == "choose --backend from: rocm6.1, rocm6.2"
    # Without --torch the subject is the matrix (once read "no release ... has no ...").
    with pytest.raises(NoPlanError) as info:
        go(nvidia("NVIDIA H100 80GB HBM3", "580.65.06"), cuda="99.9")
    assert info.value.message == "the matrix has no cu999 wheels for Python 3.11"
    with pytest.raises(NoPlanError) as info:
        go(amd("gfx1100"), rocm="1.0")
    assert info.value.message == "the matrix has no ROCm 1.0 wheels for Python 3.11"
    plan = go(amd("gfx1100"), channel="nightly", torch="2.5")
    assert any("--torch 2.5 is not applied to nightly" in w for w in plan.warnings)


def test_strix_halo_by_pci_id_only() -> None:
    plan = go(amd("", pci=("0x1586",)))
    assert plan.target_archs == ("gfx1151",) and plan.backend.tag == "rocm7.2"


def test_index_whose_bundled_library_lacks_the_arch_is_passed_over() -> None:
    # rocm7.2 wheels list gfx906 but their rocBLAS reportedly does not carry it (torch.toml incomplete_archs).
    plan = go(amd("gfx906"))
    check_against_matrix(plan)
    assert plan.backend.tag != "rocm7.2"
    assert any("2.15.0+rocm7.2 was passed over" in r and "gfx906" in r for r in plan.reasons)
    forced = go(amd("gfx906"), rocm="7.2")
    assert forced.backend.tag == "rocm7.2"
    assert any(
        "gfx906 code is in torch, but a library the wheel bundles reportedly lacks it" in w
        for w in forced.warnings
    )
    # Other archs on the same index are unaffected.
    assert go(amd("gfx942")).backend.tag == "rocm7.2"


def test_companions_come_from_the_data() -> None:
    # torchaudio had no 2.12-2.14 releases: 2.11.0 (no torch requirement on PyPI) serves them.
    assert "torchaudio==2.11.0+rocm7.2" in go(amd("gfx942"), torch="2.13").requirements
    assert "torchaudio==2.11.0+rocm7.2" in go(amd("gfx942"), torch="2.12.0", rocm="7.2").requirements
    # The patch release gets its own torchvision (0.27.1 requires torch==2.12.1 on PyPI).
    assert go(amd("gfx942"), torch="2.12").requirements == (
        "torch==2.12.1+rocm7.2",
        "torchvision==0.27.1+rocm7.2",
        "torchaudio==2.11.0+rocm7.2",
        "triton-rocm==3.7.1",
    )


def test_amd_and_nvidia_together_says_which_backend() -> None:
    machine = Machine(
        gpus=(Gpu(vendor="amd", index=0, arch="gfx1100"), Gpu(vendor="nvidia", index=1, name="NVIDIA L4")),
        nvidia=NvidiaInfo(driver_version="570.86.10"),
    )
    plan = go(machine)
    assert plan.backend.kind == "rocm" and plan.backend.pytorch_index
    assert any("also has NVIDIA GPUs" in w for w in plan.warnings)
    assert go(machine, cuda="12.8").backend.tag == "cu128"


def test_non_x86_host_is_warned() -> None:
    from rocmkit.machine import Host

    plan = go(Machine(host=Host(arch="ppc64le")))
    assert any("this host is ppc64le" in w for w in plan.warnings)
    # aarch64 is planned for (docs/platforms.md), not warned about.
    assert go(Machine(host=Host(arch="aarch64"))).platform == "linux-aarch64"
    assert not any("this host is" in w for w in go(Machine(host=Host(arch="x86_64"))).warnings)


def test_hip_visible_devices_counts_what_rocr_visible_devices_left() -> None:
    # Slurm gave this job GPUs 1 and 2 (ROCR_VISIBLE_DEVICES=1,2): HIP numbers them 0 and 1.
    gpus = (
        Gpu(vendor="amd", index=0, arch="gfx90a", visible=False),
        Gpu(vendor="amd", index=1, arch="gfx90a"),
        Gpu(vendor="amd", index=2, arch="gfx90c", integrated=True),
    )
    plan = go(Machine(gpus=gpus, env={"ROCR_VISIBLE_DEVICES": "1,2"}))
    assert plan.env["HIP_VISIBLE_DEVICES"] == "0"
    # Without ROCR_VISIBLE_DEVICES the numbers are the machine's own.
    plan = go(Machine(gpus=(*gpus[1:], Gpu(vendor="amd", index=3, arch="gfx90a"))))
    assert plan.env["HIP_VISIBLE_DEVICES"] == "0,2"


@pytest.mark.parametrize("kw", [{"torch": "2.7"}, {"channel": "nightly"}, {"framework": "jax"}])
def test_every_rocm_path_hides_a_gpu_it_cannot_run_the_same_way(kw: dict[str, str]) -> None:
    """PyTorch's stable and nightly ROCm wheels and the JAX ROCm plugin share one rule
    (resolve/gpus.py hide_unusable): the GPU hidden, the line said, a variable already set replaced."""
    from dataclasses import replace

    machine = replace(amd("gfx1100", "gfx803", version="7.0.2"), env={"HIP_VISIBLE_DEVICES": "1"})
    plan = go(machine, **kw)
    assert plan.env.get("HIP_VISIBLE_DEVICES") == "0"
    (line,) = plan.unsupported_gpus
    assert line.startswith("GPU 1 (gfx803") and line.endswith("; hidden with HIP_VISIBLE_DEVICES=0")
    assert any(w.startswith("GPU 1 (gfx803") and "HIP_VISIBLE_DEVICES=0 hides it" in w for w in plan.warnings)
    assert "HIP_VISIBLE_DEVICES=1 is set here; the plan replaces it" in plan.warnings
