"""What the plan says about published wheels: resolve's answer on the real matrices, through the
session's door for a machine made of ``--arch`` targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.resolve import Constraints
from rocmkit.session import Session
from rocmkit.source_build.coverage import wheel_coverage
from rocmkit.source_build.targets import target_from_args


def _session() -> Session:
    return Session(offline=True, environ={})


@pytest.mark.parametrize(
    ("archs", "torch", "expected"),
    [
        (["gfx90a"], "2.5", "the published wheel 2.5.1+rocm6.2 already runs natively on gfx90a"),
        (
            ["gfx1031"],
            "2.5",
            "runs gfx1031 only through HSA_OVERRIDE_GFX_VERSION=10.3.0; this build runs natively without it",
        ),
        (["gfx90a", "gfx1036"], "2.5", "no published wheel has code for gfx1036"),
        (["gfx803"], "2.5", "no published wheel has code for gfx803: a source build is the way"),
        (["gfx90a"], "1.0", "no published wheel fits (torch 1.0 is not in the matrix): a source build is the way"),
    ],
)
def test_coverage_sentences(archs: list[str], torch: str, expected: str) -> None:
    target = target_from_args(archs, None)
    sentence = wheel_coverage(target, _session().for_archs(target.archs), torch)
    assert sentence is not None and expected in sentence


def test_cuda_targets_are_not_checked() -> None:
    assert wheel_coverage(target_from_args(["9.0"], None), _session(), None) is None


def test_the_arch_door_makes_a_machine_of_the_targets(tmp_path: Path) -> None:
    parent = Session(
        offline=True, environ={}, python="3.11", index_base="https://mirror.example/whl", cache_dir=tmp_path
    )
    made = parent.for_archs(["gfx1031", "gfx1030"])
    m = made.machine()
    assert [(g.index, g.arch, g.vendor, g.integrated) for g in m.gpus] == [
        (0, "gfx1031", "amd", False),
        (1, "gfx1030", "amd", False),
    ]
    assert m.backend_kind == "rocm" and m.source == "--arch"
    # The same data, index base and Python as the session it came from.
    plan = made.plan(Constraints(torch="2.5"))
    assert plan.python == "3.11" and plan.index_urls[0].startswith("https://mirror.example/whl")
    assert made.matrix() is parent.matrix()
    # A made-up machine's plan is never cached as if it were this machine's.
    assert not list(tmp_path.rglob("*plan*"))


def test_an_arch_the_matrix_does_not_know_is_named() -> None:
    target = target_from_args(["gfx90a", "gfx1301"], None)
    sentence = wheel_coverage(target, _session().for_archs(target.archs), None)
    assert sentence is not None and sentence.startswith("gfx1301 is not in matrices/gfx.toml")
