"""The red team's wrong answers that need a process to show (issue 27, point 10): the install
dry run plans for the checked Python (a probe), and resolve detects this machine first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.plan import Backend, Plan
from tests.support.cli import last_error, rocmkit

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("with_", "says"),
    [
        ("torch==1.0", "--with torch==1.0 contradicts the plan's torch==2.5.1+rocm6.2"),
        ("pytorch-triton-rocm==0.0.1", "contradicts the plan's pytorch-triton-rocm==3.1.0"),
        ("triton==0.0.1", "the plan's Triton is pytorch-triton-rocm==3.1.0, and triton would install a second"),
    ],
)
def test_install_with_a_companion_that_contradicts_the_plan(with_: str, says: str, tmp_path: Path) -> None:
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version="2.5.1+rocm6.2",
        triton="pytorch-triton-rocm==3.1.0",
        requirements=("torch==2.5.1+rocm6.2",),
        index_urls=("https://download.pytorch.org/whl/rocm6.2/",),
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    args = ("install", "--dry-run", "--plan", str(path), "--venv", str(tmp_path / "v"))
    res = rocmkit(*args, "--with", with_)
    assert res.code == 4, res.stderr
    assert says in last_error(res.stderr) and "Traceback" not in res.stderr
    fits = rocmkit(*args, "--with", "torch>=2.5")
    assert fits.code == 0, fits.stderr


def test_install_dry_run_for_a_python_not_on_this_machine(tmp_path: Path) -> None:
    res = rocmkit("install", "--dry-run", "--backend", "cpu", "--venv", str(tmp_path / "v"), "--python", "3.99")
    assert res.code == 4
    assert res.one_line_error().startswith("error: --python 3.99: no such Python on this machine")


def test_rocmkit_gfx_that_names_no_target_is_refused() -> None:
    res = rocmkit("resolve", "--offline", env={"ROCMKIT_GFX": ",,,"})
    assert res.code == 4
    assert "ROCMKIT_GFX=',,,' names no gfx target" in res.one_line_error()
