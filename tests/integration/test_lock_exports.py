"""The plan as a PEP 751 pylock.toml and as a uv project's [tool.uv] tables, and uv accepting
both: `uv pip install --dry-run -r pylock.toml` and `uv lock`, against indexes on 127.0.0.1."""

from __future__ import annotations

import os
import re
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
    return ["--capture", str(CAPTURE), "--torch", "2.5", "--backend", "rocm6.2", "--index-base", srv.url + "/whl"]


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


# Install's modes as verbs (`rocmkit lock`, `rocmkit wheelhouse`, `rocmkit export ...`): each
# writes what the old flag writes, through the same request and carrying out, and the old
# spelling still works for one release while saying the new one.
NOTE = "(the old spelling works for one more release)"
MINI_PROJECT = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">={py}"
dependencies = ["torch"]
"""


def test_lock_writes_what_install_lock_wrote_and_the_old_spelling_says_the_new(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = tmp_path / "new.lock", tmp_path / "old.lock"
    code, _, err = run_main(capsys, "lock", str(new), *plan_args(server), "--quiet")
    assert code == 0, err
    assert NOTE not in err
    code, _, err_old = run_main(capsys, "install", "--lock", str(old), *plan_args(server), "--quiet")
    assert code == 0, err_old
    assert f"rocmkit: note: `rocmkit install --lock {old}` is now `rocmkit lock {old}` {NOTE}" in err_old
    text = new.read_text()
    assert f"torch=={TORCH} \\\n    --hash=sha256:" in text and "# rocmkit-plan: " in text

    def pins(lock: str) -> list[str]:  # the embedded plan says when its index was read
        return [line for line in lock.splitlines() if not line.startswith("# rocmkit-plan")]

    assert pins(text) == pins(old.read_text())


def test_wheelhouse_fills_the_folder_install_download_only_filled(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    code, _, err = run_main(capsys, "wheelhouse", str(new), *plan_args(server), "--quiet")
    assert code == 0, err
    code, _, err_old = run_main(
        capsys, "install", "--download-only", "--wheelhouse", str(old), *plan_args(server), "--quiet"
    )
    assert code == 0, err_old
    assert f"`rocmkit install --download-only --wheelhouse {old}` is now `rocmkit wheelhouse {old}`" in err_old
    wheels = sorted(p.name for p in new.glob("*.whl"))
    assert any(w.startswith("torch-2.5.1+rocm6.2-") for w in wheels)
    assert wheels == sorted(p.name for p in old.glob("*.whl"))


@pytest.mark.parametrize("fmt", ["pylock", "requirements", "uv-project"])
def test_export_prints_what_resolve_format_printed(
    fmt: str, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*plan_args(server), "--python", PY]
    code, out, err = run_main(capsys, "export", fmt, *args)
    assert code == 0, err
    assert NOTE not in err
    code, out_old, err_old = run_main(capsys, "resolve", *args, "--format", fmt)
    assert code == 0, err_old
    assert f"`rocmkit resolve --format {fmt}` is now `rocmkit export {fmt}`" in err_old
    # uv's header names the temporary folder it resolved in.
    same = re.compile(r"rocmkit-pylock-[^/]+")
    assert same.sub("", out) == same.sub("", out_old) and TORCH in out


def test_export_uv_project_writes_the_pyproject_as_install_project_did(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    for folder in (new, old):
        folder.mkdir()
        (folder / "pyproject.toml").write_text(MINI_PROJECT.format(py=PY))
    code, _, err = run_main(capsys, "export", "uv-project", "--project", str(new), "--dry-run", *plan_args(server))
    assert code == 0, err
    assert "+[tool.uv.sources]" in err and (new / "pyproject.toml").read_text() == MINI_PROJECT.format(py=PY)
    code, _, err = run_main(capsys, "export", "uv-project", "--project", str(new), *plan_args(server))
    assert code == 0, err
    code, _, err_old = run_main(capsys, "install", "--project", str(old), *plan_args(server), "--quiet")
    assert code == 0, err_old
    assert f"`rocmkit install --project {old}` is now `rocmkit export uv-project --project {old}`" in err_old
    assert "[tool.uv.sources]" in (new / "pyproject.toml").read_text()
    assert (new / "pyproject.toml").read_text() == (old / "pyproject.toml").read_text()


def test_export_options_that_do_not_apply_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(MINI_PROJECT.format(py=PY))
    code, _, err = run_main(capsys, "export", "uv-project", "--project", str(tmp_path), "--python", PY, "--cpu")
    assert code == 4 and err.startswith("error: --python does not apply to --project") and "fix: drop --python" in err
    code, _, err = run_main(capsys, "export", "uv-project", "--dry-run", "--cpu", "--offline")
    assert code == 4 and err.startswith("error: --dry-run goes with --project DIR")
    code, _, err = run_main(capsys, "export", "pylock", "--closure", "--cpu")
    assert code == 4 and "--closure" in err  # the pylock is the closure: no such option
