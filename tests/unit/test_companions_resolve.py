"""`--with NAME` resolved into plans for real captures of each backend: the build that fits, its
reason, warnings and variables, or a refusal (exit 6) naming why nothing fits. No processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.companions.data import PYPI_SIMPLE, load_companions
from rocmkit.companions.resolve import resolve_with
from rocmkit.detect import load_machine
from rocmkit.errors import DataError, NoPlanError
from rocmkit.machine import Gpu, Machine
from rocmkit.plan import Backend, Plan
from rocmkit.resolve import Constraints, resolve
from rocmkit.resolve.render import requirements_text, summary_text

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
DATA = load_companions()


def plan_for(capture: str | None, **constraints: object) -> tuple[Plan, Machine]:
    machine = load_machine(CAPTURES / capture) if capture else Machine()
    return resolve(machine, Constraints(python="3.11", **constraints)), machine  # type: ignore[arg-type]


def test_mi300x_on_rocm71_gets_the_paired_xformers_wheel_and_a_ck_flash_attn() -> None:
    plan, machine = plan_for("mi300x8-rocm-smi-stas00", torch="2.10", rocm="7.1")
    assert plan.target_archs == ("gfx942",)
    out = resolve_with(plan, machine, ("xformers", "flash-attn", "bitsandbytes"), DATA)
    xf, fa, bnb = out.with_packages
    assert (xf.requirement, xf.how, xf.index_url) == ("xformers==0.0.35", "wheel", plan.index_urls[0])
    assert xf.pins_torch and not bnb.pins_torch
    assert (fa.how, fa.build_env["GPU_ARCHS"]) == ("source", "gfx942")
    assert fa.build_requires and "psutil" in fa.build_requires
    assert (bnb.requirement, bnb.index_url) == ("bitsandbytes==0.50.2", PYPI_SIMPLE)
    # PyPI joins the indexes, after PyTorch's (torch's +rocm pins only exist there).
    assert out.index_urls == (*plan.index_urls, PYPI_SIMPLE)
    assert any("xformers==0.0.35: a prebuilt wheel from PyTorch's rocm7.1 index, built for torch 2.10.0" in r for r in out.reasons)
    assert "FLASH_ATTENTION_TRITON_AMD_ENABLE" not in out.env
    text = summary_text(out)
    assert "With:\n  xformers==0.0.35  (prebuilt wheel)" in text and "build with GPU_ARCHS=gfx942 MAX_JOBS=" in text
    reqs = requirements_text(out)
    assert "xformers==0.0.35\n" in reqs and "pip install --no-build-isolation flash-attn==2.8.3.post2" in reqs


def test_rdna3_builds_flash_attn_with_the_triton_backend_and_says_why() -> None:
    plan, machine = plan_for("synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4", rocm="7.2")
    assert plan.target_archs == ("gfx1100",)
    out = resolve_with(plan, machine, ("flash-attn",), DATA)
    (fa,) = out.with_packages
    assert fa.build_env["FLASH_ATTENTION_TRITON_AMD_ENABLE"] == "TRUE"
    assert out.env["FLASH_ATTENTION_TRITON_AMD_ENABLE"] == "TRUE"  # read at import, so activate exports it
    why = next(r for r in out.reasons if r.startswith("flash-attn==2.8.3.post2:"))
    assert "no prebuilt ROCm wheel fits gfx1100; built from source with the triton-amd backend" in why
    assert "ck does not fit: it covers gfx90a, gfx942, gfx950, not gfx1100" in why
    assert any("archs not confirmed by a source" in w for w in out.warnings)
    # The plan with its --with packages survives its JSON form (install --plan).
    assert Plan.from_dict(out.to_dict()) == out


def test_xformers_for_another_torch_is_refused_with_the_pairing_that_would_fit() -> None:
    plan, machine = plan_for("mi300x8-rocm-smi-stas00", torch="2.13", rocm="7.2")
    with pytest.raises(NoPlanError) as err:
        resolve_with(plan, machine, ("xformers",), DATA.__class__(
            companions=DATA.companions,
            builds=tuple(b for b in DATA.builds if b.kind == "wheel"),
            sources=DATA.sources,
        ))
    assert err.value.exit_code == 6
    assert "--with xformers: no build fits torch 2.13.0+rocm7.2 (rocm7.2) on gfx942" in err.value.message
    assert "PyTorch's index serves it for rocm7.1, not rocm7.2" in err.value.message
    assert err.value.fix and "--torch 2.10 --backend rocm7.1" in err.value.fix


def test_cpu_has_bitsandbytes_but_no_xformers_or_flash_attn() -> None:
    plan, machine = plan_for(None, cpu=True)
    out = resolve_with(plan, machine, ("bitsandbytes", "transformers>=4"), DATA)
    assert [(p.requirement, p.how) for p in out.with_packages] == [
        ("bitsandbytes==0.50.2", "wheel"),
        ("transformers>=4", "index"),
    ]
    for name in ("xformers", "flash-attn"):
        with pytest.raises(NoPlanError, match=f"--with {name}: .*no cpu build of it"):
            resolve_with(plan, machine, (name,), DATA)


def test_cuda_capture_gets_the_cuda_builds() -> None:
    plan, machine = plan_for("synthetic-h100x2-nvidia-550", torch="2.10", cuda="12.8")
    out = resolve_with(plan, machine, ("xformers", "bitsandbytes", "flash-attn"), DATA)
    xf, bnb, fa = out.with_packages
    assert (xf.requirement, xf.index_url) == ("xformers==0.0.35", plan.index_urls[0])
    assert bnb.how == "wheel" and fa.how == "source" and "GPU_ARCHS" not in fa.build_env


def test_bitsandbytes_on_a_rocm_minor_it_lacks_warns_which_library_loads() -> None:
    machine = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx90a"),))
    plan = Plan(backend=Backend.parse("rocm7.3"), torch_version="2.14.0+rocm7.3", target_archs=("gfx90a",))
    out = resolve_with(plan, machine, ("bitsandbytes",), DATA)
    assert any("has no ROCm 7.3 library; it loads its ROCm 7.2 one" in w for w in out.warnings)


def test_a_plan_cannot_smuggle_build_variables() -> None:
    plan, machine = plan_for("mi300x8-rocm-smi-stas00", torch="2.10", rocm="7.1")
    data = resolve_with(plan, machine, ("flash-attn",), DATA).to_dict()
    data["with_packages"][0]["build_env"]["LD_PRELOAD"] = "/tmp/x.so"
    with pytest.raises(DataError, match="LD_PRELOAD"):
        Plan.from_dict(data)
    assert Plan.from_dict(data, allow_env=frozenset({"LD_PRELOAD"})).with_packages[0].build_env["LD_PRELOAD"]


CAPTURE = str(CAPTURES / "mi300x8-rocm-smi-stas00")


def test_resolve_with_on_the_command_line() -> None:
    from tests.support.cli import rocmkit

    ok = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--torch", "2.10", "--rocm", "7.1", "--with", "xformers")
    assert ok.code == 0, ok.stderr
    assert "With:\n  xformers==0.0.35  (prebuilt wheel)" in ok.stdout
    assert "rocmkit install --venv V --with xformers==0.0.35" in ok.stdout
    refused = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--backend", "cpu", "--with", "flash-attn")
    assert refused.code == 6
    assert "--with flash-attn: no build fits torch" in refused.one_line_error()
    bad = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--with", "xformers,>=1")
    assert bad.code == 4 and "is not a package requirement" in bad.one_line_error()
    both = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--json", "--format", "uv-project")
    assert both.code == 4 and "ask for two outputs" in both.one_line_error()
    uv = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--torch", "2.10", "--rocm", "7.1", "--format", "uv-project")
    assert uv.code == 0 and 'name = "pytorch-rocm7-1"' in uv.stdout and "explicit = true" in uv.stdout


H100 = str(CAPTURES / "h100x8-nvidia-smi-535.183.01")


def test_xformers_trades_torch_for_its_prebuilt_wheel_and_builds_only_when_asked() -> None:
    """One resolution (issue 36): xformers' native code is built for one torch release, so the
    plan is the newest torch it publishes a wheel for on this machine's backend (MI300X: ROCm;
    H100, driver 535: the CUDA index that driver runs), said as a trade; a source build only
    with --build xformers, and none where no source build is recorded (CUDA)."""
    import json

    from tests.support.cli import rocmkit

    rocm = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--with", "xformers", "--json")
    assert rocm.code == 0, rocm.stderr
    plan = json.loads(rocm.stdout)
    assert (plan["torch_version"], plan["backend"]) == ("2.10.0+rocm7.1", "rocm7.1")
    assert [(p["requirement"], p["how"]) for p in plan["with_packages"]] == [("xformers==0.0.35", "wheel")]
    assert plan["reasons"][0] == (
        "torch 2.10.0, not 2.15.0: the newest release xformers publishes a ROCm wheel for (xformers 0.0.35 "
        "on rocm7.1); --build xformers builds it from source against torch 2.15.0 instead (hours)"
    )
    cuda = rocmkit("resolve", "--capture", H100, "--offline", "--with", "xformers", "--json")
    assert cuda.code == 0, cuda.stderr
    plan = json.loads(cuda.stdout)
    # cu130 needs driver 580; the newest index of xformers' three that driver 535 runs is cu128.
    assert (plan["torch_version"], plan["with_packages"][0]["how"]) == ("2.10.0+cu128", "wheel")
    assert plan["reasons"][0].startswith("torch 2.10.0, not 2.15.0: the newest release xformers publishes a CUDA wheel")
    asked = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--with", "xformers", "--build", "xformers", "--json")
    assert asked.code == 0, asked.stderr
    plan = json.loads(asked.stdout)
    assert plan["torch_version"] == "2.15.0+rocm7.2" and plan["with_packages"][0]["how"] == "source"
    alone = rocmkit("resolve", "--capture", CAPTURE, "--offline", "--build", "xformers")
    assert alone.code == 4 and "--build xformers: it is not among the --with packages" in alone.one_line_error()
    # The user named the torch: it is kept, and a --with library fits it or is refused.
    named = rocmkit("resolve", "--capture", H100, "--offline", "--torch", "2.15", "--with", "xformers")
    assert named.code == 6 and "--with xformers: no build fits torch 2.15.0" in named.one_line_error()
