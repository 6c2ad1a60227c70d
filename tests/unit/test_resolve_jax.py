"""``resolve --framework jax | torch-xla | torch,jax`` on the real captures (and crafted machines)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rocmkit.detect import load_machine
from rocmkit.errors import NoPlanError, UsageError
from rocmkit.machine import Gpu, Machine, RocmInfo
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, resolve
from tests.conftest import CAPTURES
from tests.support.cli import rocmkit

JAX = "jax==0.10.2"
ROCM7 = ("jax==0.10.2", "jaxlib==0.10.2", "jax-rocm7-plugin==0.10.2", "jax-rocm7-pjrt==0.10.2")
# AMD's route: ROCm's libraries, then the plugin and PJRT from AMD's index, then jax and jaxlib.
AMD7 = ("jax-rocm7-plugin==0.10.2", "jax-rocm7-pjrt==0.10.2", "jax==0.10.2", "jaxlib==0.10.2")

# capture -> (backend, requirements, index URLs, target archs, unsupported GPU archs)
TABLE: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # ROCm 6.3 on the node: no plugin is built for ROCm 6, so AMD's index brings ROCm 7's libraries.
    "mi210x2-gfx90a-rocm6.3.3": (
        "rocm7", ("rocm[libraries,device-gfx90a]", *AMD7),
        ("https://rocm.nightlies.amd.com/whl-multi-arch/", "https://pypi.org/simple"), ("gfx90a",), (),
    ),
    "mi300x8-rocm-smi-stas00": (
        "rocm7", ("rocm[libraries,device-gfx942]", *AMD7),
        ("https://rocm.nightlies.amd.com/whl-multi-arch/", "https://pypi.org/simple"), ("gfx942",), (),
    ),
    # A discrete MI100 and an iGPU: the device extra is the discrete GPU's.
    "mi100-gfx908-igpu-gfx1036-rocm5.7": (
        "rocm7", ("rocm[libraries,device-gfx908]", *AMD7),
        ("https://rocm.nightlies.amd.com/whl-multi-arch/", "https://pypi.org/simple"), ("gfx1036", "gfx908"), (),
    ),
    # NVIDIA driver 535 (a real nvidia-smi): CUDA 12 (>= 525), not CUDA 13 (>= 580).
    "h100x8-nvidia-smi-535.183.01": (
        "cuda12", ("jax==0.10.2", "jaxlib==0.10.2", "jax-cuda12-plugin[with-cuda]==0.10.2", "jax-cuda12-pjrt==0.10.2"),
        ("https://pypi.org/simple",), (), (),
    ),
    "synthetic-nvidia-driver-only-580": (
        "cuda13", ("jax==0.10.2", "jaxlib==0.10.2", "jax-cuda13-plugin[with-cuda]==0.10.2", "jax-cuda13-pjrt==0.10.2"),
        ("https://pypi.org/simple",), (), (),
    ),
    # No usable GPU (the ROCk driver is not loaded; a GTX 1050 Ti with no driver): plain jax.
    "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded": (
        "cpu", ("jax==0.10.2", "jaxlib==0.10.2"), ("https://pypi.org/simple",), (), (),
    ),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_capture_plans(name: str) -> None:
    backend, reqs, urls, targets, unsupported = TABLE[name]
    plan = resolve(load_machine(CAPTURES / name), Constraints(python="3.11", framework="jax"))
    assert (plan.framework, plan.jax_version, plan.backend.tag) == ("jax", "0.10.2", backend)
    assert plan.requirements == reqs
    assert plan.index_urls == urls
    assert plan.target_archs == targets
    assert len(plan.unsupported_gpus) == len(unsupported)


def _amd(arch: str, rocm: str | None, *, integrated: bool = False) -> Machine:
    return Machine(gpus=(Gpu(vendor="amd", index=0, arch=arch, integrated=integrated),), rocm=RocmInfo(version=rocm))


def test_rocm7_on_the_node_takes_pypi_with_one_version_for_all() -> None:
    plan = resolve(_amd("gfx942", "7.2.1"), Constraints(python="3.11", framework="jax"))
    assert plan.requirements == ROCM7 and plan.index_urls == ("https://pypi.org/simple",)
    assert any("jax[rocm7-local]==0.10.2" in r for r in plan.reasons)


def test_an_arch_the_plugin_lacks_is_a_warning_naming_it() -> None:
    plan = resolve(_amd("gfx803", "7.2.1"), Constraints(python="3.11", framework="jax"))
    assert plan.requirements == ROCM7
    assert any("gfx803" in w and "jax-rocm7-plugin" in w for w in plan.warnings)
    assert plan.unsupported_gpus and "gfx803" in plan.unsupported_gpus[0]


def test_rocm10_needs_a_jaxlib_that_knows_its_module() -> None:
    with pytest.raises(NoPlanError) as info:
        resolve(_amd("gfx942", "10.1.0"), Constraints(python="3.11", framework="jax"))
    assert "jaxlib >= 0.11.1" in info.value.message and "3.12" in (info.value.fix or "")
    plan = resolve(_amd("gfx942", "10.1.0"), Constraints(python="3.12", framework="jax"))
    # jax 0.12.1 is the newest jax, but no ROCm plugin was built for it: 0.12.0.
    assert plan.requirements == ("jax==0.12.0", "jaxlib==0.12.0", "jax-rocm10-plugin==0.12.0", "jax-rocm10-pjrt==0.12.0")


def test_post_releases_and_jax_constraint() -> None:
    plan = resolve(_amd("gfx90a", "7.0.2"), Constraints(python="3.11", framework="jax", jax="0.9.1"))
    assert plan.requirements == ("jax==0.9.1", "jaxlib==0.9.1", "jax-rocm7-plugin==0.9.1.post6", "jax-rocm7-pjrt==0.9.1.post6")


def test_torch_xla_refuses_a_gpu_and_offers_the_cpu_wheel() -> None:
    for name in ("mi300x8-rocm-smi-stas00", "h100x8-nvidia-smi-535.183.01"):
        with pytest.raises(NoPlanError) as info:
            resolve(load_machine(CAPTURES / name), Constraints(python="3.11", framework="torch-xla"))
        assert "no ROCm build" in info.value.message and "--framework jax" in (info.value.fix or "")
    plan = resolve(Machine(), Constraints(python="3.11", framework="torch-xla"))
    assert plan.requirements == ("torch==2.9.0+cpu", "torch-xla==2.9.0")
    assert plan.index_urls[-1] == "https://pypi.org/simple"
    with pytest.raises(NoPlanError):
        resolve(Machine(), Constraints(python="3.14", framework="torch-xla"))


def test_torch_and_jax_in_one_plan_keep_both_pins() -> None:
    plan = resolve(load_machine(CAPTURES / "synthetic-h100x2-nvidia-550"), Constraints(python="3.11", framework="torch,jax"))
    assert plan.framework == "torch+jax" and plan.jax_version == "0.10.2"
    assert plan.requirements[0].startswith("torch==") and "jax-cuda12-pjrt==0.10.2" in plan.requirements
    assert plan.index_urls[0].startswith("https://download.pytorch.org/whl/cu")
    assert "https://pypi.org/simple" in plan.index_urls
    # A plan file round-trips with its framework.
    again = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again == plan


@pytest.mark.parametrize(
    "kw", [{"framework": "tensorflow"}, {"framework": "torch-xla,jax"}, {"jax": "0.10"}, {"framework": "jax", "jax": "x"},
           {"framework": "jax", "torch": "2.5"}],
)
def test_bad_framework_options_are_usage_errors(kw: dict[str, str]) -> None:
    with pytest.raises(UsageError):
        Constraints(**kw).validated()  # type: ignore[arg-type]


def test_cli_formats() -> None:
    capture = str(CAPTURES / "mi300x8-rocm-smi-stas00")
    r = rocmkit("resolve", "--framework", "jax", "--capture", capture, "--python", "3.11", "--format", "requirements")
    assert r.code == 0, r.stderr
    out = r.stdout
    assert "--index-url https://rocm.nightlies.amd.com/whl-multi-arch/" in out
    assert "jax-rocm7-pjrt==0.10.2" in out
    r = rocmkit("resolve", "--framework", "jax", "--capture", capture, "--python", "3.11", "--json")
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["framework"] == "jax" and data["jax_version"] == "0.10.2"
    r = rocmkit("resolve", "--framework", "torch-xla", "--capture", capture, "--offline")
    assert r.code == 6 and r.stdout == ""
    line = r.one_line_error()
    assert "PyTorch/XLA has no ROCm build" in line and "--framework jax" in line
    r = rocmkit("resolve", "--framework", "tensorflow", "--capture", capture)
    assert r.code == 4 and "--framework" in r.one_line_error()


def test_plan_without_framework_is_torch() -> None:
    plan = replace(resolve(Machine(), Constraints(python="3.11")))
    assert plan.framework == "torch" and plan.jax_version is None
