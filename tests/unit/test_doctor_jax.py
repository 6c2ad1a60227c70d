"""The jax doctor checks' pure parts, and which checks `doctor --framework` runs (no jax imported here)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from rocmkit.doctor.checks import jaxchecks
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.request import DoctorRequest
from rocmkit.doctor.result import Status
from rocmkit.doctor.run import for_frameworks, framework_of, frameworks_for, select
from rocmkit.errors import UsageError
from rocmkit.machine import Machine
from rocmkit.pyenv import this_python

GOOD = {"jax": "0.10.2", "jaxlib": "0.10.2", "jax-rocm7-plugin": "0.10.2", "jax-rocm7-pjrt": "0.10.2"}


def test_one_release_for_jax_jaxlib_plugin_and_pjrt() -> None:
    assert jaxchecks.version_problems(GOOD) == []
    # A post-release of the plugin carries ROCm-only fixes: still the same release.
    assert jaxchecks.version_problems({**GOOD, "jax-rocm7-plugin": "0.10.2.post1", "jax-rocm7-pjrt": "0.10.2.post1"}) == []
    assert jaxchecks.version_problems({**GOOD, "jaxlib": "0.10.1"}) == ["jax is 0.10.2 but jaxlib is 0.10.1",
                                                                       "jax-rocm7-plugin is 0.10.2 but jaxlib is 0.10.1"]
    assert jaxchecks.version_problems({**GOOD, "jax-rocm7-pjrt": "0.10.1"}) == [
        "jax-rocm7-plugin is 0.10.2 but jax-rocm7-pjrt is 0.10.1"
    ]
    missing = dict(GOOD)
    del missing["jax-rocm7-pjrt"]
    assert jaxchecks.version_problems(missing) == ["jax-rocm7-plugin 0.10.2 is installed without jax-rocm7-pjrt"]


def test_plugin_major_against_the_rocm_it_loads() -> None:
    assert jaxchecks.rocm_major_problem(GOOD, "7.2.1") is None
    assert "built for ROCm 7.x, but it will load the node's ROCm 6.3.3" in (
        jaxchecks.rocm_major_problem(GOOD, "6.3.3") or ""
    )
    # AMD's route: the pip ROCm in the venv is the one loaded, whatever the node has.
    assert jaxchecks.rocm_major_problem({**GOOD, "rocm": "7.11.0"}, "6.3.3") is None
    assert jaxchecks.rocm_major_problem({"jax": "0.10.2"}, "6.3.3") is None  # no plugin, nothing to say


@pytest.mark.parametrize(
    ("text", "fix", "said"),
    [
        ("unable to find ld.lld in PATH", "lld", "JAX_ROCM_PLUGIN_INTERNAL_LLD_PATH"),
        ("cannot find ROCm device bitcode", "device-libs", "HIP_DEVICE_LIB_PATH"),
        ("libamdhip64.so.7: cannot open shared object file", "system-libraries", "provide libamdhip64.so.7"),
        ("Unable to initialize backend 'rocm'", "platforms", "JAX_PLATFORMS=rocm"),
        ("failed to instantiate command buffer", "command-buffer", "--xla_gpu_enable_command_buffer="),
    ],
)
def test_each_failure_gets_the_remedy_from_the_data(text: str, fix: str, said: str) -> None:
    name, remedy = jaxchecks.pick_fix(text, "rocm")
    assert name == fix and said in remedy
    assert "{rocm_path}" not in remedy


def test_expected_platform() -> None:
    assert [jaxchecks.expected_platform(b) for b in ("rocm", "cuda", "cpu")] == ["rocm", "cuda", "cpu"]


def test_psum_on_one_device_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(numpy=None, local_devices=lambda: [object()])
    monkeypatch.setattr(jaxchecks, "_import_jax", lambda platform: fake)
    out = jaxchecks.jax_psum(CheckContext(machine=Machine()))
    assert not isinstance(out, list)
    assert out.status is Status.SKIP and "needs two or more" in out.message and out.name == "jax.psum"


def test_jax_import_without_jax_is_a_finding_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jaxchecks, "installed_jax", lambda dists=None: {})
    out = jaxchecks.jax_import(CheckContext(machine=Machine()))
    assert not isinstance(out, list)
    assert out.status is Status.FAIL and "rocmkit install --framework jax" in (out.remedy or "")


def test_a_rocm_node_without_a_rocm_plugin_fails_before_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jaxchecks, "installed_jax", lambda dists=None: {"jax": "0.10.2", "jaxlib": "0.10.2"})

    def no_import(platform: str) -> Any:
        raise AssertionError("jax must not be imported")

    monkeypatch.setattr(jaxchecks, "_import_jax", no_import)
    out = jaxchecks.jax_import(CheckContext(machine=Machine(), backend="rocm"))
    assert not isinstance(out, list)
    assert out.status is Status.FAIL and "jax would run on the CPU" in out.message


def test_frameworks_pick_the_checks() -> None:
    checks = load_checks()
    level2 = select(checks, level=2)
    names = {c.name for c in for_frameworks(level2, ("jax",))}
    assert {"jax.import", "jax.devices", "jax.jit", "jax.matmul"} <= names
    assert not any(n.startswith(("torch.", "triton.", "attention.", "models.", "compile.")) for n in names)
    assert "env.shm" in names  # the environment checks are everyone's
    torch_only = {c.name for c in for_frameworks(level2, ("torch",))}
    assert not any(n.startswith("jax.") for n in torch_only) and "torch.import" in torch_only
    # --only names checks itself, whatever the frameworks.
    assert {c.name for c in for_frameworks(select(checks, only=("jax.jit",)), ("torch",), ("jax.jit",))} == {"jax.jit"}
    assert framework_of(checks["env.shm"]) is None and framework_of(checks["jax.psum"]) == "jax"


def test_default_frameworks_are_what_the_python_has() -> None:
    py = this_python()
    assert frameworks_for(replace(py, modules={"jax": True}), ()) == ("jax",)
    assert frameworks_for(replace(py, modules={"torch": True, "jax": True}), ()) == ("torch", "jax")
    assert frameworks_for(replace(py, modules={}), ()) == ("torch",)  # neither: torch's absence is the finding
    assert frameworks_for(py, ("jax",)) == ("jax",)


def test_doctor_request_framework() -> None:
    assert DoctorRequest(framework="torch,jax").frameworks == ("torch", "jax")
    with pytest.raises(UsageError):
        DoctorRequest(framework="tensorflow")


def test_jax_matmul_is_held_to_the_gemm_floor_of_the_gpu() -> None:
    from rocmkit.doctor.result import CheckResult, Figure
    from rocmkit.doctor.sku import apply_floors, load_skus

    sku = load_skus().find("MI300X")
    floor = sku.get("gemm_bf16_tflops")
    assert floor is not None
    slow = CheckResult(name="jax.matmul", level=2, status=Status.PASS, message="4096x4096 on rocm",
                       figures=(Figure(name="matmul.bf16", value=floor / 2, unit="TFLOP/s"),))
    (judged,) = apply_floors([slow], sku, backend="rocm")
    assert judged.status is Status.WARN
    assert judged.figures[0].floor == floor and judged.figures[0].below_floor
    fast = replace(slow, figures=(Figure(name="matmul.bf16", value=floor * 1.1, unit="TFLOP/s"),))
    assert apply_floors([fast], sku, backend="rocm")[0].status is Status.PASS
    # On the CPU no GPU floor applies.
    assert apply_floors([slow], sku, backend="cpu")[0].status is Status.PASS
