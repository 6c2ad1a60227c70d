"""The plan as a PEP 751 pylock.toml and as a uv project's [tool.uv] tables, and uv accepting
both: `uv pip install --dry-run -r pylock.toml` and `uv lock`, against indexes on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.util.safeload import loads_toml
from tests.support.cli import keep_user_config_out, run_main
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

UV = str(Path(sys.executable).parent / "uv")
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
CAPTURE = Path(__file__).resolve().parents[1] / "data/captures/mi250x-gfx90a-rocm6.2.1"
TORCH = "2.5.1+rocm6.2"


@pytest.fixture(autouse=True)
def _quiet_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keep_user_config_out(tmp_path / "home", monkeypatch)
    monkeypatch.delenv("ROCMKIT_OFFLINE", raising=False)


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    rocm = root / "whl/rocm6.2"
    make_torch_set(rocm, TORCH, triton="pytorch-triton-rocm==3.1.0", hip="6.2.41133", extra_requires=["filelock"])
    make_wheel(rocm, "filelock", "3.16.1")
    for name, version in (("torchvision", "0.20.1+rocm6.2"), ("torchaudio", "2.5.1+rocm6.2")):
        make_wheel(rocm, name, version, tag=f"cp{PY.replace('.', '')}-cp{PY.replace('.', '')}-manylinux_2_28_x86_64",
                   requires=[f"torch=={TORCH}"])
    # "PyPI": what a project takes on other platforms, and what PyTorch's index does not carry.
    make_torch_set(root / "pypi", "2.5.1", tag="py3-none-any")
    make_wheel(root / "pypi", "torchvision", "0.20.1", requires=["torch==2.5.1"])
    make_wheel(root / "pypi", "filelock", "3.16.1")
    return root


@pytest.fixture
def server(index_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        monkeypatch.setenv("PIP_INDEX_URL", srv.index_url("pypi"))
        yield srv


rk = run_main


def plan_args(srv: IndexServer) -> list[str]:
    return ["--capture", str(CAPTURE), "--torch", "2.5", "--rocm", "6.2", "--index-base", srv.url + "/whl"]


def test_pylock_is_pep751_with_urls_and_hashes_and_uv_installs_it(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = rk(capsys, "resolve", *plan_args(server), "--python", PY, "--format", "pylock")
    assert code == 0, err
    assert out.startswith("# rocmkit.plan/1: backend rocm6.2, torch 2.5.1+rocm6.2")
    lock = loads_toml(out, 'pylock.toml')
    assert lock["lock-version"] == "1.0"
    packages = {p["name"]: p for p in lock["packages"]}
    # The whole closure, from the plan's index, each wheel with its URL and sha256.
    assert {"torch", "torchvision", "torchaudio", "pytorch-triton-rocm", "filelock"} <= set(packages)
    torch = packages["torch"]
    assert torch["version"] == TORCH and torch["index"].rstrip("/") == server.index_url("whl/rocm6.2").rstrip("/")
    assert packages["filelock"]["index"].rstrip("/") == server.index_url("whl/rocm6.2").rstrip("/")
    (wheel,) = torch["wheels"]
    assert wheel["url"].startswith(server.url + "/whl/") and len(wheel["hashes"]["sha256"]) == 64
    path = tmp_path / "pylock.toml"
    path.write_text(out)
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True, timeout=60)
    dry = subprocess.run(
        [UV, "pip", "install", "--dry-run", "--python", str(venv / "bin/python"), "-r", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    assert dry.returncode == 0, dry.stderr
    assert f"+ torch=={TORCH}" in dry.stderr + dry.stdout


def test_offline_pylock_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = rk(capsys, "resolve", "--offline", "--cpu", "--format", "pylock")
    assert code == 4 and "needs the package index" in err and "Traceback" not in err


PROJECT = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">={py}"
# the model code needs these
dependencies = ["torch", "torchvision"]

[tool.uv]
environments = ["sys_platform == 'linux'", "sys_platform == 'darwin'"]

[[tool.uv.index]]
name = "mine"   # my default index
url = "{pypi}"
default = true
"""


def test_uv_project_tables_go_into_pyproject_and_uv_locks_them(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = rk(capsys, "resolve", *plan_args(server), "--python", PY, "--offline", "--format", "uv-project")
    assert code == 0, err
    assert 'explicit = true' in out and "torch = [{ index = \"pytorch-rocm6-2\", marker = \"sys_platform == 'linux'\" }]" in out

    project = tmp_path / "demo"
    project.mkdir()
    original = PROJECT.format(py=PY, pypi=server.index_url("pypi"))
    (project / "pyproject.toml").write_text(original)
    args = ["install", "--project", str(project), *plan_args(server), "--quiet"]
    code, _, err = rk(capsys, *args, "--dry-run")
    assert code == 0, err
    assert "+[tool.uv.sources]" in err and '+name = "pytorch-rocm6-2"' in err
    assert (project / "pyproject.toml").read_text() == original  # a dry run changes nothing

    code, _, err = rk(capsys, *args)
    assert code == 0, err
    text = (project / "pyproject.toml").read_text()
    # The user's lines are kept as written, comments included; torch's Triton joins the
    # dependencies (uv applies sources to direct dependencies only).
    assert '# the model code needs these\ndependencies = ["torch", "torchvision", ' in text
    assert 'name = "mine"   # my default index' in text
    data = loads_toml(text, 'pyproject.toml')
    assert data["project"]["dependencies"][2] == "pytorch-triton-rocm==3.1.0 ; sys_platform == 'linux'"
    assert {i["name"] for i in data["tool"]["uv"]["index"]} == {"mine", "pytorch-rocm6-2"}
    # Running it again changes nothing.
    code, _, err = rk(capsys, *args)
    assert code == 0 and "already holds the plan" in err

    # UV_NO_CONFIG would make uv ignore the project's own [tool.uv] (its default index among them).
    env = {k: v for k, v in os.environ.items() if k != "UV_NO_CONFIG"}
    locked = subprocess.run(
        [UV, "lock", "--project", str(project), "--no-progress"],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert locked.returncode == 0, locked.stderr
    uv_lock = loads_toml((project / "uv.lock").read_text(), "uv.lock", max_bytes=8 << 20)
    torches = {p["version"]: p["source"]["registry"].rstrip("/") for p in uv_lock["package"] if p["name"] == "torch"}
    # Linux takes the ROCm build from the plan's index; macOS the plain one from the default index.
    assert torches[TORCH] == server.index_url("whl/rocm6.2").rstrip("/")
    assert torches["2.5.1"] == server.index_url("pypi").rstrip("/")
