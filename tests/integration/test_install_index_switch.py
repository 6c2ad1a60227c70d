"""No silent index switch: when the planned index (an --index-base mirror) does not answer,
the install stops, naming the index and the fix. Only with --fallback-index is another index
from pip's own configuration used, and only when it serves the very same build (the local
version too), with a WARNING that names it. A plan naming no index is refused the same way."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.plan import Backend, Plan
from tests.integration.test_install_e2e import (
    _quiet_user_config,  # noqa: F401  (autouse: the developer's pip config stays out)
    build_index,
    pip_freeze_all,
    rk,
)
from tests.support.cli import last_error
from tests.support.pkgindex import IndexServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/whl/rocm6.2/"  # nothing listens there any more


def plan_on_dead_mirror(folder: Path) -> Path:
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version="2.5.1+rocm6.2",
        triton="pytorch-triton-rocm==3.1.0",
        requirements=("torch==2.5.1+rocm6.2",),
        index_urls=(dead_url(),),
    )
    path = folder / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


def pip_conf(folder: Path, monkeypatch: pytest.MonkeyPatch, index: str, extra: str = "") -> None:
    conf = folder / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {index}\n" + (f"extra-index-url = {extra}\n" if extra else ""))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))


def test_configured_index_with_another_build_is_never_used(
    tmp_path: Path, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # pip's configuration names an index serving torch, but the CUDA 2.6.0 build, not 2.5.1+rocm6.2;
    # and PIP_INDEX_URL / PIP_EXTRA_INDEX_URL name it again.
    pypi = server.index_url("pypi")
    pip_conf(tmp_path, monkeypatch, pypi, extra=pypi)
    monkeypatch.setenv("PIP_INDEX_URL", pypi)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", pypi)
    venv = tmp_path / "venv"
    plan = str(plan_on_dead_mirror(tmp_path))
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", plan, "--fallback-index")
    assert code == 9, err
    assert "do not hold torch==2.5.1+rocm6.2" in err
    assert not any("/pypi/torch-" in r for r in server.requests)  # no wheel was fetched from it
    assert not venv.exists()  # made by this run, removed again


def test_configured_index_with_the_same_build_is_used_and_named(
    tmp_path: Path, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    same = server.index_url("whl/rocm6.2")
    pip_conf(tmp_path, monkeypatch, same)
    venv = tmp_path / "venv"
    plan = str(plan_on_dead_mirror(tmp_path))
    # Not asked: the install stops, naming the dead index and the flag; nothing is fetched.
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", plan)
    assert code == 9, err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "did not answer" in errors[0]
    # The flag is the first fix (08dff0f: fixes on their own lines, exit 9 leads with it).
    first_fix = last_error(err).splitlines()[1]
    assert first_fix.startswith(f"fix: rocmkit install --venv {venv} --plan {plan} --fallback-index"), err
    assert not any(r.endswith(".whl") for r in server.requests) and not venv.exists()
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", plan, "--fallback-index")
    assert code == 0, err
    assert "WARNING: --fallback-index: index http://127.0.0.1:" in err
    assert f"using {same} (from " in err and "which holds torch==2.5.1+rocm6.2" in err
    assert "torch==2.5.1+rocm6.2" in pip_freeze_all(venv)


@pytest.mark.parametrize("index_urls", [None, []], ids=["null", "empty"])
def test_a_plan_naming_no_index_is_refused_unless_asked(
    tmp_path: Path,
    server: IndexServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index_urls: list[str] | None,
) -> None:
    same = server.index_url("whl/rocm6.2")
    pip_conf(tmp_path, monkeypatch, same)
    data = json.loads(plan_on_dead_mirror(tmp_path).read_text())
    data["index_urls"] = index_urls
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(data))
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(plan))
    assert code == 9, err
    assert "the plan names no package index" in err and "--fallback-index" in err
    assert not venv.exists()
    monkeypatch.setenv("ROCMKIT_FALLBACK_INDEX", "1")
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(plan))
    assert code == 0, err
    assert f"WARNING: --fallback-index: the plan names no package index; using {same} (from " in err
    assert "torch==2.5.1+rocm6.2" in pip_freeze_all(venv)
