"""Choosing the Python to check, without starting one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocmkit.errors import UsageError
from rocmkit.pyenv import PyEnv, select_python, this_python, venv_python


def test_default_is_this_python_even_with_its_own_venv_active() -> None:
    assert select_python(environ={}).own
    me = select_python(environ={"VIRTUAL_ENV": sys.prefix})
    assert me.own and me.executable == Path(sys.executable)


def test_this_python_reads_metadata_without_importing_torch() -> None:
    before = "torch" in sys.modules
    py = this_python()
    assert py.version.count(".") == 2
    assert set(py.modules) >= {"torch", "triton", "transformers"}
    assert ("torch" in sys.modules) == before


def test_bad_choices_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="same thing twice"):
        select_python(venv=tmp_path, python="/usr/bin/python3", environ={})
    with pytest.raises(UsageError, match="not a virtual environment"):
        venv_python(tmp_path)


def test_has() -> None:
    py = PyEnv(
        executable=Path("/x/bin/python"), version="3.11.0", prefix=Path("/x"), purelib=Path("/x/lib"),
        platlib=Path("/x/lib"), stdlib=Path("/usr/lib/python3.11"), include=Path("/usr/lib/python3.11"),
        modules={"torch": True, "triton": False}, own=False,
    )  # fmt: skip
    assert py.has("torch") and not py.has("triton") and not py.has("transformers")
