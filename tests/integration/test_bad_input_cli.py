"""Bad input as real processes (issue 39, point 7): each is one line on stderr with the fix, an
exit code of its own, and no traceback; an empty value is never taken for an absent option."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def _rocmkit(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMKIT_", "VIRTUAL_ENV"))}
    env.update(ROCMKIT_CACHE_DIR=str(tmp / "cache"), ROCMKIT_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *args], capture_output=True, text=True, env=env, cwd=REPO,
        timeout=300, check=False,
    )  # fmt: skip


def _one_line(res: subprocess.CompletedProcess[str], code: int, said: str) -> None:
    assert res.returncode == code, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    errors = [i for i, ln in enumerate(lines) if ln.startswith("error:")]
    # One error line, then its fix lines.
    assert len(errors) == 1 and said in lines[errors[0]], res.stderr[-2000:]
    assert lines[errors[0] + 1 :] and all(ln.startswith("fix: ") for ln in lines[errors[0] + 1 :]), res.stderr[-2000:]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'[project]\nname = "x\xff"\n', "is not UTF-8 text"),
        (b'[project]\nname = "x"\n' + b"#" * (2 << 20) + b"\n", "over rocmkit's limit"),
        (b"[project\n", "is not valid TOML"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests deeper than"),
    ],
    ids=["not-utf8", "huge", "not-toml", "deep"],
)
def test_install_project_on_a_bad_pyproject(tmp_path: Path, content: bytes, said: str) -> None:
    (tmp_path / "pyproject.toml").write_bytes(content)
    res = _rocmkit("install", "--project", str(tmp_path), "--dry-run", "--cpu", tmp=tmp_path)
    _one_line(res, 5, said)


def test_install_into_a_venv_whose_pip_conf_is_not_ini(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (venv / "pip.conf").write_text("index-url = https://no-section.example/simple\n")
    res = _rocmkit("install", "--venv", str(venv), "--cpu", "--dry-run", tmp=tmp_path)
    _one_line(res, 5, f"{venv / 'pip.conf'} is not a pip configuration (an INI file)")


@pytest.mark.parametrize(
    "args",
    [
        ("docker", "render", "--rocm", ""),
        ("matrix", "show", "--gfx", ""),
        ("resolve", "--cpu", "--index-base", ""),
        ("resolve", "--cpu", "--index-base= "),
    ],
    ids=["docker-rocm", "matrix-gfx", "resolve-index-base", "resolve-index-base-space"],
)
def test_an_empty_value_is_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    res = _rocmkit(*args, tmp=tmp_path)
    _one_line(res, 4, "is empty (given as")
    assert res.stdout == ""  # no CPU image, no table, no plan from the default index
