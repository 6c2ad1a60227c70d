"""The CPU path on this machine, for real: live detection -> resolve -> CPU wheels -> index check.

There is no GPU here, so `rocmkit install --venv X` resolves PyTorch's CPU
wheels. The index is pointed at a closed 127.0.0.1 port (ROCMKIT_INDEX_BASE):
rocmkit must say which index failed and what to do, in seconds, and leave no
half-made venv behind; or, where the user's own pip configuration holds the
planned wheels (find-links), install from there and say so.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from rocmkit.detect import load_machine
from rocmkit.errors import MAX_LINE
from rocmkit.resolve import Constraints, resolve
from tests.support.cli import keep_user_config_out, last_error, run_main
from tests.support.pkgindex import IndexServer, closed_port, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def dead_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    keep_user_config_out(tmp_path / "home", monkeypatch)
    port = closed_port()
    # The user's own default index is dead too: nothing here may reach PyPI.
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    base = f"http://127.0.0.1:{port}/whl"
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", base)
    return base


def rk(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_main(capsys, "install", *args)


def test_cpu_plan_with_unreachable_index_says_which_and_what_to_do(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv))
    assert code == 9, err
    assert "rocmkit: plan cpu: torch==" in err
    assert f"error: package index {dead_base}/cpu did not answer (connection refused)" in err
    assert "--index-base" in err and "--wheelhouse" in err and "--fallback-index" in err
    _, fallback, *_ = last_error(err).splitlines()
    # The useful fix first, as a command to copy; no line a terminal cannot show whole.
    assert fallback.startswith(f"fix: rocmkit install --venv {venv} --fallback-index"), err
    # (The venv's path is the user's own: here pytest's, 60 characters longer than .venv.)
    assert all(len(line.replace(str(venv), ".venv")) <= MAX_LINE for line in last_error(err).splitlines()), err
    assert not venv.exists()  # made by this run, removed again


def test_download_only_on_a_dead_index_does_not_send_you_to_download_only(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--download-only is what "download on a connected node" means: its own error keeps the
    fixes that apply (your pip sources, a mirror), not that one."""
    house = tmp_path / "wh"
    code, _, err = rk(capsys, "--download-only", "--wheelhouse", str(house), "--cpu")
    assert code == 9, err
    error, *fixes = last_error(err).splitlines()
    assert error.startswith(f"error: package index {dead_base}/cpu did not answer")
    assert fixes[0] == f"fix: rocmkit install --download-only --wheelhouse {house} --cpu --fallback-index" + (
        "   # the same builds from your own pip sources, if they hold them"
    )
    assert not any("on a connected node" in f for f in fixes), err
    assert not house.exists() or not any(house.iterdir())


def test_cpu_plan_falls_back_to_the_users_find_links(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = resolve(load_machine(None), Constraints(python=PY, index_base=dead_base))
    assert plan.backend.tag == "cpu"
    assert plan.torch_version is not None
    # The user's wheelhouse (pip's find-links) holds exactly the planned CPU builds.
    house = tmp_path / "site-wheels"
    make_torch_set(house, plan.torch_version)
    for req in plan.requirements:
        name, _, version = req.partition("==")
        if name != "torch":
            make_wheel(house, name, version)
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))

    venv = tmp_path / "venv"
    code, out, err = rk(capsys, "--venv", str(venv), "--json", "--installer", "uv", "--fallback-index")
    assert code == 0, err
    assert (
        f"WARNING: --fallback-index: index {dead_base}/cpu did not answer (connection refused); using {house} (from $PIP_FIND_LINKS)"
        in err
    )
    assert f"verified: torch {plan.torch_version}" in err
    # It ends with the next command to run: the check that proves it.
    assert err.rstrip().endswith(f"rocmkit: next: rocmkit doctor --venv {venv} --level 2"), err
    outcome = json.loads(out)
    assert outcome["backend"] == "cpu"
    assert outcome["find_links"] == [str(house)]
    assert outcome["messages"] and "did not answer" in outcome["messages"][0]


def test_resolved_rocm_plan_for_a_capture_installs_and_dry_runs(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolve for a captured MI250X node (not this machine), against a local copy of the index.
    A plain --with package (accelerate) is not on torch's index: it comes from the user's default
    index, which rocmkit ranks after torch's (754a628); here a live local one stands for PyPI."""
    capture = Path(__file__).resolve().parents[1] / "data/captures/mi250x-gfx90a-rocm6.2.1"
    root = tmp_path / "index"
    with IndexServer(root) as srv:
        base = srv.url + "/whl"
        plan = resolve(
            load_machine(capture), Constraints(torch="2.5", rocm="6.2", python=PY, index_base=base)
        )
        assert plan.backend.tag == "rocm6.2" and plan.torch_version and plan.triton
        index = root / "whl" / plan.backend.tag
        make_torch_set(index, plan.torch_version, triton=plan.triton, hip="6.2.41133")
        for req in plan.requirements:
            name, _, version = req.partition("==")
            if name not in ("torch", plan.triton.partition("==")[0]):
                make_wheel(index, name, version)
        make_wheel(root / "pypi", "accelerate", "1.0.0", requires=["torch>=2.0"])
        monkeypatch.setenv("PIP_INDEX_URL", srv.index_url("pypi"))
        args = ["--capture", str(capture), "--torch", "2.5", "--rocm", "6.2", "--index-base", base]

        venv = tmp_path / "venv"
        code, out, err = rk(capsys, "--venv", str(venv), *args, "--with", "accelerate", "--dry-run", "--json")
        assert code == 0, err
        assert f"would create the virtual environment {venv}" in err
        assert "together with --with: accelerate" in err
        assert json.loads(out)["requirements"] == list(plan.requirements)
        assert not venv.exists()

        code, _, err = rk(capsys, "--venv", str(venv), *args)
        assert code == 0, err
        assert "verified: torch 2.5.1+rocm6.2, hip 6.2.41133, triton 3.1.0" in err
        installed = sorted(p.name for p in (venv / "lib").glob("python*/site-packages/*.dist-info"))

        code, _, err = rk(capsys, "--venv", str(venv), *args, "--with", "accelerate", "--dry-run")
        assert code == 0, err
        assert "+ accelerate==1.0.0" in err
        assert f"from {srv.url}/whl/rocm6.2, {srv.index_url('pypi')}" in err, err
        assert "/pypi/accelerate/" in srv.requests
        assert sorted(p.name for p in (venv / "lib").glob("python*/site-packages/*.dist-info")) == installed


def test_pep668_system_python_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    system = Path("/usr/bin/python3")
    markers = list(Path("/usr/lib").glob("python3*/EXTERNALLY-MANAGED"))
    if not system.exists() or not markers:
        pytest.skip("no externally managed system Python on this machine")
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"schema": "rocmkit.plan/1", "backend": "cpu", "requirements": ["torch==2.5.1"]})
    )
    code, _, err = rk(capsys, "--interpreter", str(system), "--plan", str(plan))
    assert code == 8
    assert "externally managed system Python (PEP 668 marker" in err
    assert "--allow system-packages" in err


def test_a_hung_index_fails_in_seconds_not_minutes(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as hung:  # accepts connections (kernel backlog), never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        url = f"http://127.0.0.1:{hung.getsockname()[1]}/whl/cpu"
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps(
                {
                    "schema": "rocmkit.plan/1",
                    "backend": "cpu",
                    "requirements": ["torch==2.5.1+cpu"],
                    "index_urls": [url],
                }
            )
        )
        code, _, err = rk(capsys, "--venv", str(tmp_path / "v"), "--plan", str(plan), "--probe-timeout", "1")
    assert code == 9, err
    # What makes it fast: the probe gave up at its 1 s timeout, before any installer or venv started.
    assert f"package index {url} did not answer (no answer within 1 s)" in err
    assert not (tmp_path / "v").exists()


def test_install_holds_the_plan_to_what_the_users_sources_hold(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shape of the build machines: the PyTorch index does not answer, the user's index
    (PyPI there) serves torch without a local version (CUDA builds), and a find-links folder
    holds an older CPU build. The plan names that CPU build, never PyPI's CUDA one nor a
    version no source holds, and pip's dry run and install agree."""
    monkeypatch.delenv("ROCMKIT_OFFLINE")
    house = tmp_path / "site-wheels"
    make_torch_set(house, "2.12.1+cpu")
    root = tmp_path / "pypi"
    for version in ("2.13.0", "2.14.1"):
        make_torch_set(root / "simple" / "torch", version, cuda="13.0")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    with IndexServer(root) as pypi:
        monkeypatch.setenv("PIP_INDEX_URL", f"{pypi.url}/simple")
        venv = tmp_path / "venv"
        code, _, err = rk(capsys, "--venv", str(venv), "--installer", "pip", "--fallback-index")
    assert code == 0, err
    assert f"do(es) not serve torch 2.15.0+cpu for Python {PY}: planned 2.12.1+cpu instead" in err
    assert "rocmkit: plan cpu: torch==2.12.1+cpu" in err
    assert "verified: torch 2.12.1+cpu" in err


def test_cuda_names_the_wheels_on_a_machine_without_a_gpu(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An image build (no GPU on the builder) names its CUDA wheels: --backend cu128, as resolve
    takes it (and the old --cuda 12.8, for one release)."""
    venv = tmp_path / "venv"
    for backend in (("--backend", "cu128"), ("--cuda", "12.8")):
        code, _, err = rk(capsys, "--venv", str(venv), *backend, "--torch", "2.11", "--dry-run")
        assert code == 0, err
        assert "rocmkit: plan cu128: torch==2.11.0+cu128" in err
        assert f"{dead_base}/cu128" in err
        assert not venv.exists()
    code, _, err = rk(capsys, "--venv", str(venv), "--backend", "cu128", "--cpu", "--dry-run")
    assert code == 4, err
    assert "error: two backends asked for: cu128 and cpu\nfix: give one --backend" in err
