"""What the plan says about published wheels, from resolve's answer."""

from __future__ import annotations

import pytest

import rocmkit.resolve
from rocmkit.errors import NoPlanError
from rocmkit.machine import Machine
from rocmkit.plan import Plan
from rocmkit.source_build.coverage import machine_for, wheel_coverage
from rocmkit.source_build.targets import target_from_args


def fake_resolve(plan: Plan | None, seen: list[Machine]) -> object:
    def resolve(machine: Machine, constraints: object) -> Plan:
        seen.append(machine)
        if plan is None:
            raise NoPlanError("no ROCm wheel for gfx1036")
        return plan

    return resolve


@pytest.mark.parametrize(
    ("archs", "plan", "expected"),
    [
        (
            ["gfx90a"],
            Plan(backend="rocm6.2", torch_version="2.5.1+rocm6.2", target_archs=("gfx90a",)),
            "the published wheel 2.5.1+rocm6.2 already runs natively on gfx90a",
        ),
        (
            ["gfx1031"],
            Plan(
                backend="rocm6.2",
                torch_version="2.5.1+rocm6.2",
                target_archs=("gfx1030",),
                env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
            ),
            "runs gfx1031 only through HSA_OVERRIDE_GFX_VERSION=10.3.0; this build runs natively without it",
        ),
        (["gfx1036"], None, "no published wheel fits (no ROCm wheel for gfx1036): a source build is the way"),
        (
            ["gfx90a", "gfx1036"],
            Plan(backend="rocm6.2", torch_version="2.5.1+rocm6.2", target_archs=("gfx90a",)),
            "no published wheel has code for gfx1036",
        ),
    ],
)
def test_coverage_sentences(
    monkeypatch: pytest.MonkeyPatch, archs: list[str], plan: Plan | None, expected: str
) -> None:
    seen: list[Machine] = []
    monkeypatch.setattr(rocmkit.resolve, "resolve", fake_resolve(plan, seen))
    target = target_from_args(archs, None)
    sentence = wheel_coverage(target, None, "2.5")
    assert sentence is not None and expected in sentence
    assert [g.arch for g in seen[0].gpus] == archs  # --arch becomes a machine with those GPUs


def test_cuda_targets_are_not_checked() -> None:
    assert wheel_coverage(target_from_args(["9.0"], None), None, None) is None


def test_machine_for_arch_list() -> None:
    m = machine_for(target_from_args(["gfx1031", "gfx1030"], None))
    assert [(g.index, g.arch, g.vendor) for g in m.gpus] == [(0, "gfx1031", "amd"), (1, "gfx1030", "amd")]
    assert m.backend_kind == "rocm"


def test_an_arch_the_matrix_does_not_know_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Machine] = []
    monkeypatch.setattr(rocmkit.resolve, "resolve", fake_resolve(None, seen))
    sentence = wheel_coverage(target_from_args(["gfx90a", "gfx1301"], None), None, None)
    assert sentence is not None and sentence.startswith("gfx1301 is not in matrices/gfx.toml")
    assert not seen  # a typo is reported before resolve is asked
