"""The offline policy on the real captures: the newest release upstream built for the machine,
even when only its build lists name it (with the newest confirmed build on the same index as
the fallback); ``--strict-data`` plans confirmed builds only; every refusal says the real cause.
And the data behind it: rocm7.14's arch list from pytorch's build script, 2.14 without cu134,
the ROCm 5.x builds of 2.1-2.3 from test-infra's go-live revisions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocmkit.detect import load_machine
from rocmkit.errors import DataError, NoPlanError
from rocmkit.matrix import load_matrix
from rocmkit.matrix.load import parse_matrix
from rocmkit.matrix.sourcecheck import check_sources
from rocmkit.matrix.sourceread import Sources
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, resolve
from tests.conftest import CAPTURES

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "data" / "upstream"

# capture -> (constraints, planned build, its fallback (None: confirmed), the build --strict-data plans)
TABLE = {
    "mi300x8-rocm-smi-stas00": ({}, "2.15.0+rocm7.2", "2.14.0+rocm7.2", "2.14.0+rocm7.2"),
    "mi100-gfx908-igpu-gfx1036-rocm5.7": ({}, "2.15.0+rocm7.2", "2.14.0+rocm7.2", "2.14.0+rocm7.2"),
    "synthetic-h100x2-nvidia-550": ({}, "2.15.0+cu126", "2.13.0+cu126", "2.13.0+cu126"),
    # Driver 580: PyPI's own 2.15.0 is the cu132 build, so it is confirmed; no fallback needed.
    "synthetic-nvidia-driver-only-580": ({}, "2.15.0+cu132", None, "2.15.0+cu132"),
    "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded": ({}, "2.15.0+cpu", "2.13.0+cpu", "2.13.0+cpu"),
    # --backend names the index: its builds are planned even under --strict-data.
    "mi210x2-gfx90a-rocm6.3.3": ({"rocm": "7.2"}, "2.15.0+rocm7.2", "2.14.0+rocm7.2", "2.15.0+rocm7.2"),
}


def plan_for(name: str, **kw: object) -> Plan:
    kw.setdefault("python", "3.11")
    return resolve(load_machine(CAPTURES / name), Constraints(**kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_the_newest_release_upstream_built_with_its_fallback(name: str) -> None:
    kw, planned, fallback, strict = TABLE[name]
    plan = plan_for(name, **kw)
    assert plan.torch_version == planned
    if fallback is None:
        assert plan.fallback == ()
        assert not any("not yet seen on an index" in r for r in plan.reasons)
    else:
        assert plan.fallback[0] == f"torch=={fallback}"
        assert any(f"torch {planned} is not yet seen on an index" in r for r in plan.reasons)
        assert any(f"fallback: torch {fallback}, the newest confirmed build on the same index" in r
                   for r in plan.reasons)
        assert any(f"relies on an unconfirmed fact: torch {planned} exists" in w for w in plan.warnings)
        # The same index: install never changes source to fall back.
        assert fallback.split("+")[1] == planned.split("+")[1]
    assert plan_for(name, strict_data=True, **kw).torch_version == strict


def test_a_plan_with_a_fallback_round_trips_through_json() -> None:
    plan = plan_for("mi300x8-rocm-smi-stas00")
    again = Plan.from_dict(plan.to_dict())
    assert again.fallback == plan.fallback and again.fallback[0] == "torch==2.14.0+rocm7.2"


def test_cpu_reasons_name_the_newest_release_truly() -> None:
    name = "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded"
    plan = plan_for(name, cpu=True)
    assert plan.torch_version == "2.15.0+cpu"
    assert not any("2.13.0 is the newest" in r for r in plan.reasons)
    strict = plan_for(name, cpu=True, strict_data=True)
    assert strict.torch_version == "2.13.0+cpu"
    assert any(
        "torch 2.13.0 is the newest release whose CPU build is confirmed" in r
        and "2.15.0, 2.14.1, 2.14.0" in r
        and "--strict-data" in r
        for r in strict.reasons
    )


def test_cpu_with_torch_2_15_warns_as_the_rocm_path_does() -> None:
    plan = plan_for("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded", cpu=True, torch="2.15")
    assert plan.torch_version == "2.15.0+cpu"
    assert any("relies on an unconfirmed fact: torch 2.15.0+cpu exists" in w for w in plan.warnings)
    # No confirmed 2.15 CPU build shares the index: said, not hidden.
    assert any("no confirmed build within --torch 2.15 shares its index" in w for w in plan.warnings)


def test_torch_2_15_on_gfx942_plans_and_strict_data_says_why_not() -> None:
    name = "mi300x8-rocm-smi-stas00"
    plan = plan_for(name, torch="2.15")
    # The index with confirmed builds (and a fallback) wins within the release.
    assert plan.torch_version == "2.15.0+rocm7.2"
    assert plan_for(name, torch="2.15", rocm="7.2").torch_version == "2.15.0+rocm7.2"
    with pytest.raises(NoPlanError) as info:
        plan_for(name, torch="2.15", strict_data=True)
    assert "has no ROCm wheels" not in info.value.message
    assert "2.15.0+rocm7.2, 2.15.0+rocm7.14) are not yet confirmed" in info.value.message
    assert "--strict-data" in info.value.message and "--backend rocmX.Y" in (info.value.fix or "")


def test_rocm_7_14_carries_gfx1103_natively_and_not_gfx906() -> None:
    plan = plan_for("780m-gfx1103-rocm5.7", rocm="7.14")
    assert plan.backend.tag == "rocm7.14" and plan.target_archs == ("gfx1103",)
    assert "HSA_OVERRIDE_GFX_VERSION" not in plan.env
    assert not any("archs compiled into rocm7.14" in w for w in plan.warnings)  # now sourced
    with pytest.raises(NoPlanError, match="gfx906"):
        plan_for("mi50x4-gfx906-rocky8-rocm5.7-grep", rocm="7.14")


def test_the_audited_facts() -> None:
    m = load_matrix()
    idx = m.rocm_indexes["rocm7.14"]
    assert len(idx.archs) == 13 and {"gfx900", "gfx906"}.isdisjoint(idx.archs) and "gfx1103" in idx.archs
    assert idx.is_confirmed("archs") and any(s.startswith("pt_") for s in idx.sources)
    for version in ("2.14.0", "2.14.1"):
        rel = m.torch_release(version)
        assert rel is not None
        assert [v.index for v in rel.of_kind("cuda")] == ["cu126", "cu130", "cu132"]
    for version, rocm in (("2.1.0", {"rocm5.5", "rocm5.6"}), ("2.2.0", {"rocm5.6", "rocm5.7"}),
                          ("2.2.2", {"rocm5.6", "rocm5.7"}), ("2.3.1", {"rocm5.7", "rocm6.0"})):
        rel = m.torch_release(version)
        assert rel is not None and {v.index for v in rel.of_kind("rocm")} == rocm
        assert all(v.is_confirmed() for v in rel.of_kind("rocm"))


def test_compatible_release_triton_of_the_pypi_cuda_builds() -> None:
    plan = plan_for("synthetic-nvidia-driver-only-580")
    assert plan.torch_version == "2.15.0+cu132"
    assert "triton~=3.9.0" in plan.requirements
    assert plan.triton is None  # a range, not a pin: verify and the guard read torch's own
    assert any("requires triton~=3.9.0 (Requires-Dist)" in r for r in plan.reasons)
    m = load_matrix()
    for version, index, triton in (("2.14.0", "cu130", "triton~=3.8.0"), ("2.13.0", "cu130", "triton==3.7.1")):
        rel = m.torch_release(version)
        variant = rel.variant(index) if rel else None
        assert variant is not None and variant.triton == triton and variant.is_confirmed("triton")


def test_a_compatible_release_pin_is_for_cuda_builds_only(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(REPO / "matrices", folder)
    text = (folder / "torch.toml").read_text()
    text = text.replace('triton = "triton-rocm==3.7.1"', 'triton = "triton-rocm~=3.7.1"', 1)
    (folder / "torch.toml").write_text(text)
    with pytest.raises(DataError, match=r"must pin one version with '=='"):
        parse_matrix(folder)


def test_check_sources_catches_a_wrong_compatible_release_pin(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(REPO / "matrices", folder)
    text = (folder / "torch.toml").read_text()
    (folder / "torch.toml").write_text(text.replace('triton = "triton~=3.9.0"', 'triton = "triton~=3.8.0"', 1))
    report = check_sources(parse_matrix(folder), Sources(RECORDING, offline=True))
    assert report.not_stated == [
        "torch.toml release 2.15.0 variant cu132: triton triton~=3.8.0, but PyPI's wheel requires triton~=3.9.0"
    ]


def test_the_summary_shows_the_fallback() -> None:
    from rocmkit.resolve.render import summary_text

    text = summary_text(plan_for("mi300x8-rocm-smi-stas00"))
    assert "Fallback (installed instead if the index answers without the planned build):\n" in text
    assert "  torch==2.14.0+rocm7.2\n" in text
    assert "Fallback" not in summary_text(plan_for("mi300x8-rocm-smi-stas00", strict_data=True))
