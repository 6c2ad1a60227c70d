"""Required pins vs companions: the Plan field, resolve filling it, and the index fallback
leaving out companions (and only companions) that no reachable source holds. No processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocmkit.errors import NetworkError
from rocmkit.install.base import Sources
from rocmkit.install.flow import add_later_command
from rocmkit.install.indexcheck import UserPipConfig, decide_sources, read_pip_config
from rocmkit.machine import Gpu, Machine
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import PyEnv
from rocmkit.resolve import Constraints, resolve

TAG = "cp311-cp311-manylinux_2_28_x86_64"
REQS = ("torch==2.13.0+cpu", "torchvision==0.28.0+cpu")
COMPANIONS = ("torchvision==0.28.0+cpu",)


def test_plan_companions_round_trip_and_default_for_old_plans() -> None:
    plan = Plan(backend=Backend.parse("cpu"), requirements=REQS, companions=COMPANIONS, index_urls=("http://i/cpu",))
    assert plan.required == ("torch==2.13.0+cpu",)
    data = plan.to_dict()
    assert tuple(data["companions"]) == COMPANIONS
    assert Plan.from_dict(data) == plan
    # A plan file written before the field existed: everything is required.
    del data["companions"]
    old = Plan.from_dict(data)
    assert old.companions == () and old.required == REQS and old.requirements == REQS
    # requirements keeps meaning the full list (what pip_command installs).
    assert "torchvision==0.28.0+cpu" in plan.pip_command()


def test_resolve_marks_torchvision_and_torchaudio_as_companions_never_torch_or_triton() -> None:
    cpu = resolve(Machine(), Constraints(python="3.11", cpu=True))
    assert cpu.companions and all(c in cpu.requirements for c in cpu.companions)
    # torchvision/torchaudio, and on the CPU the interpreter's Triton and the numpy it imports
    assert {c.split("==")[0] for c in cpu.companions} <= {"torchvision", "torchaudio", "triton", "numpy"}
    assert any(r.startswith("torch==") for r in cpu.required)
    rocm = resolve(
        Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx942"),)),
        Constraints(python="3.11", torch="2.9"),
    )
    assert rocm.triton is not None and rocm.triton in rocm.required
    assert set(rocm.companions) == {
        r for r in rocm.requirements if r.startswith(("torchvision", "torchaudio"))
    }
    assert len(rocm.companions) == 2
    assert rocm.required == ("torch==2.9.1+rocm6.4", "pytorch-triton-rocm==3.5.1")
    nightly = resolve(Machine(), Constraints(python="3.11", cpu=True, channel="nightly"))
    assert nightly.companions == ("torchvision", "torchaudio")


def _setup(tmp_path: Path) -> tuple[Sources, Path, UserPipConfig]:
    dead = Sources(index_urls=(f"file://{tmp_path}/nowhere/whl/cpu",))
    house = tmp_path / "house"
    house.mkdir()
    config = read_pip_config(
        {"HOME": str(tmp_path), "PIP_FIND_LINKS": str(house), "PIP_INDEX_URL": f"file://{tmp_path}/none"}
    )
    return dead, house, config


def test_fallback_without_a_companion_leaves_it_out_but_never_a_required_pin(tmp_path: Path) -> None:
    dead, house, config = _setup(tmp_path)
    (house / f"torchvision-0.28.0+cpu-{TAG}.whl").write_bytes(b"")
    # torch (required) is nowhere: today's exit-9 error, naming torch and not the companion.
    with pytest.raises(NetworkError, match=r"do not hold torch==2\.13\.0\+cpu$") as err:
        decide_sources(dead, REQS, python="3.11", user=config, companions=COMPANIONS, fallback=True)
    assert err.value.exit_code == 9
    (house / f"torchvision-0.28.0+cpu-{TAG}.whl").unlink()
    (house / f"torch-2.13.0+cpu-{TAG}.whl").write_bytes(b"")
    decision = decide_sources(dead, REQS, python="3.11", user=config, companions=COMPANIONS, fallback=True)
    assert decision.left_out == COMPANIONS
    assert decision.sources == Sources(find_links=(str(house),), no_index=True)
    # Without the split (an old plan) the companion is required: exit 9 as before.
    with pytest.raises(NetworkError, match=r"do not hold torchvision==0\.28\.0\+cpu"):
        decide_sources(dead, REQS, python="3.11", user=config, fallback=True)
    # A companion built for another Python does not count.
    (house / "torchvision-0.28.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    decision = decide_sources(dead, REQS, python="3.11", user=config, companions=COMPANIONS, fallback=True)
    assert decision.left_out == COMPANIONS
    (house / f"torchvision-0.28.0+cpu-{TAG}.whl").write_bytes(b"")
    decision = decide_sources(dead, REQS, python="3.11", user=config, companions=COMPANIONS, fallback=True)
    assert decision.left_out == ()
    assert "which holds torch==2.13.0+cpu, torchvision==0.28.0+cpu" in decision.messages[0]


def test_unpinned_companions_count_when_any_version_is_there(tmp_path: Path) -> None:
    dead, house, config = _setup(tmp_path)
    reqs = ("torch==2.14.0.dev1+cpu", "torchvision", "torchaudio")
    (house / f"torch-2.14.0.dev1+cpu-{TAG}.whl").write_bytes(b"")
    (house / f"torchvision-0.29.0.dev1+cpu-{TAG}.whl").write_bytes(b"")
    decision = decide_sources(
        dead,
        reqs,
        python="3.11",
        user=config,
        companions=("torchvision", "torchaudio"),
        fallback=True,
    )
    assert decision.left_out == ("torchaudio",)


def test_add_later_command_uses_the_planned_index_and_the_guard(tmp_path: Path) -> None:
    plan = Plan(
        backend=Backend.parse("cpu"),
        requirements=REQS,
        companions=COMPANIONS,
        index_urls=("https://download.pytorch.org/whl/cpu",),
    )

    def target(has_pip: bool) -> PyEnv:
        lib = tmp_path / "v/lib/python3.11/site-packages"
        return PyEnv(
            executable=tmp_path / "v/bin/python",
            prefix=tmp_path / "v",
            venv=tmp_path / "v",
            version="3.11.7",
            purelib=lib,
            platlib=lib,
            stdlib=tmp_path / "lib", include=tmp_path / "lib",
            has_pip=has_pip,
        )

    with_pip = target(True)
    assert add_later_command(COMPANIONS[0], plan, with_pip, "pip") == (
        f"{tmp_path}/v/bin/python -m pip install torchvision==0.28.0+cpu "
        "--index-url https://download.pytorch.org/whl/cpu"
    )
    no_pip = target(False)
    assert add_later_command(COMPANIONS[0], plan, no_pip, "pip").startswith(
        f"{sys.executable} -m pip --python {tmp_path}/v/bin/python install torchvision==0.28.0+cpu"
    )
    cmd = add_later_command(COMPANIONS[0], plan, no_pip, "uv")
    assert f"pip install --python {tmp_path}/v/bin/python torchvision==0.28.0+cpu" in cmd
    # uv reads no per-venv configuration: the guard's constraints are named.
    assert cmd.endswith(f"--constraint {tmp_path}/v/rocmkit-constraints.txt")
