"""Lock files and the guard: pure file formats, no processes."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from rocmkit.errors import DataError
from rocmkit.install import guard
from rocmkit.install.base import Locked, Sources
from rocmkit.install.lock import parse, render
from rocmkit.plan import Backend, Plan

PLAN = Plan(
    backend=Backend.parse("rocm6.2"),
    torch_version="2.5.1+rocm6.2",
    triton="pytorch-triton-rocm==3.1.0",
    requirements=("torch==2.5.1+rocm6.2", "torchvision==0.20.1+rocm6.2", "numpy<2"),
    index_urls=("https://download.pytorch.org/whl/rocm6.2",),
    env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
)
H1, H2 = "a" * 64, "b" * 64


def test_lock_round_trip_keeps_pins_hashes_sources_and_plan(tmp_path: Path) -> None:
    entries = [
        Locked(name="torch", version="2.5.1+rocm6.2", hashes=(H1, H2)),
        Locked(name="pytorch-triton-rocm", version="3.1.0", hashes=(H2,)),
    ]
    path = tmp_path / "torch.lock"
    path.write_text(
        render(entries, Sources(index_urls=(PLAN.index_urls[0], "https://pypi.org/simple")), PLAN)
    )
    text = path.read_text()
    assert f"torch==2.5.1+rocm6.2 \\\n    --hash=sha256:{H1} \\\n    --hash=sha256:{H2}\n" in text
    parsed = parse(path)
    assert [(e.name, e.version, e.hashes) for e in parsed.entries] == [
        ("pytorch-triton-rocm", "3.1.0", (H2,)),
        ("torch", "2.5.1+rocm6.2", (H1, H2)),
    ]
    assert parsed.sources.index_urls == (PLAN.index_urls[0], "https://pypi.org/simple")
    assert parsed.plan == PLAN
    assert "--index-url" not in parsed.requirements_text()


def test_lock_without_a_hash_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no sha256 hash for torch"):
        render([Locked(name="torch", version="2.5.1", hashes=())], Sources(), None)
    path = tmp_path / "bad.lock"
    path.write_text(f"torch==2.5.1 --hash=sha256:{H1}\nnumpy>=1\n")
    with pytest.raises(DataError, match=r"entry 2: 'numpy>=1' is not `name==version --hash"):
        parse(path)
    path.write_text("# nothing\n")
    with pytest.raises(DataError, match="locks no package"):
        parse(path)
    with pytest.raises(DataError, match="cannot read lock file"):
        parse(tmp_path / "missing.lock")


def test_guard_pins_the_torch_family_and_triton_only() -> None:
    assert guard.pins_for(PLAN) == [
        "torch==2.5.1+rocm6.2",
        "torchvision==0.20.1+rocm6.2",
        "pytorch-triton-rocm==3.1.0",
    ]
    cpu = Plan(backend=Backend.parse("cpu"), requirements=("numpy==2.0",))
    assert guard.pins_for(cpu) == []


def test_guard_keeps_the_users_pip_conf_and_one_activate_block(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    activate = tmp_path / "bin/activate"
    activate.write_text('deactivate () {\n    unset VIRTUAL_ENV\n}\nexport VIRTUAL_ENV="/v"\n')
    (tmp_path / "pip.conf").write_text("[global]\ntimeout = 60\n")
    guard.write_guard(tmp_path, PLAN)
    files = guard.write_guard(tmp_path, PLAN)  # rewriting replaces, never duplicates
    conf = configparser.ConfigParser()
    conf.read(files.pip_conf)
    assert conf.get("global", "timeout") == "60"
    assert conf.get("install", "constraint") == str(files.constraints)
    text = activate.read_text()
    assert text.count(guard.BEGIN) == 1 and text.count(guard.END) == 1
    import shlex

    assert f"export UV_CONSTRAINT={shlex.quote(str(files.constraints))}" in text
    assert "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n" in text
    assert "        unset HSA_OVERRIDE_GFX_VERSION\n" in text
    assert text.startswith("deactivate () {\n    unset VIRTUAL_ENV\n}")
    assert files.constraints.read_text().splitlines()[-3:] == guard.pins_for(PLAN)


def test_remove_guard_lifts_only_what_rocmkit_wrote(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    activate = tmp_path / "bin/activate"
    original = 'deactivate () {\n    unset VIRTUAL_ENV\n}\nexport VIRTUAL_ENV="/v"\n'
    activate.write_text(original)
    (tmp_path / "pip.conf").write_text("[global]\ntimeout = 60\n")
    files = guard.write_guard(tmp_path, PLAN)
    assert guard.remove_guard(tmp_path) is True
    assert not files.constraints.exists()
    conf = configparser.ConfigParser()
    conf.read(files.pip_conf)
    assert conf.sections() == ["global"] and conf.get("global", "timeout") == "60"
    assert activate.read_text() == original
    assert guard.remove_guard(tmp_path) is False
    # A pip.conf holding nothing but the guard goes entirely.
    (tmp_path / "pip.conf").unlink()
    guard.write_guard(tmp_path, PLAN)
    guard.remove_guard(tmp_path)
    assert not (tmp_path / "pip.conf").exists()
