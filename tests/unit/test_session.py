"""The session: one machine, one matrix, one index base and one plan per command, on captures."""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pytest

from rocmkit.detect import load_machine
from rocmkit.errors import NoPlanError, UsageError
from rocmkit.resolve import Constraints, resolve
from rocmkit.session import Session
from tests.conftest import REPO
from tests.support.cli import rocmkit

MI210 = "mi210x2-gfx90a-rocm6.3.3"
RX6800M = "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("name", [MI210, RX6800M, "synthetic-h100x2-nvidia-550"])
def test_machine_and_plan_of_a_capture_are_resolves(captures_dir: Path, name: str) -> None:
    capture = captures_dir / name
    session = Session(capture=capture, offline=True)
    machine = session.machine()
    assert machine is session.machine()  # detected once
    assert machine == load_machine(capture)
    assert session.detected_at is None  # a capture is not this machine: nothing to replay
    assert session.matrix() is session.matrix()
    plan = session.plan(Constraints())
    assert plan is session.plan(Constraints())
    assert plan == resolve(machine, Constraints(), matrix=session.matrix())


def test_index_base_is_read_once_from_the_option_or_the_environment(captures_dir: Path) -> None:
    env = {"ROCMKIT_INDEX_BASE": "http://mirror.example/whl"}
    from_env = Session(capture=captures_dir / MI210, offline=True, environ=env)
    assert from_env.index_base == "http://mirror.example/whl"
    plan = from_env.plan(Constraints())
    assert plan.index_urls[0].startswith("http://mirror.example/whl/")
    assert any("from ROCMKIT_INDEX_BASE" in r for r in plan.reasons)
    # The option wins, and says so without naming the variable.
    given = Session(capture=captures_dir / MI210, offline=True, environ=env, index_base="http://other/whl")
    plan = given.plan(Constraints())
    assert plan.index_urls[0].startswith("http://other/whl/")
    assert not any("ROCMKIT_INDEX_BASE" in r for r in plan.reasons)
    # Nothing else reads the variable: a session without it plans for download.pytorch.org.
    plain = Session(capture=captures_dir / MI210, offline=True, environ={})
    assert plain.plan(Constraints()).index_urls[0].startswith("https://download.pytorch.org/whl/")


def test_a_bad_index_base_names_where_it_came_from() -> None:
    with pytest.raises(UsageError, match="ROCMKIT_INDEX_BASE 'mirror' is not a URL"):
        Session(environ={"ROCMKIT_INDEX_BASE": "mirror"})
    with pytest.raises(UsageError, match="--index-base 'mirror' is not a URL"):
        Session(index_base="mirror", environ={})


def test_offline_comes_from_the_option_or_the_environment() -> None:
    assert Session(environ={"ROCMKIT_OFFLINE": "1"}).offline
    assert Session(offline=True, environ={}).offline
    assert not Session(environ={}).offline


def test_target_python_and_constraints(captures_dir: Path) -> None:
    session = Session(capture=captures_dir / MI210, offline=True, python="3.12")
    assert session.plan(Constraints()).python == "3.12"
    # A constraint's own Python wins over the session's.
    assert session.plan(Constraints(python="3.11")).python == "3.11"
    with pytest.raises(NoPlanError):
        session.plan(Constraints(rocm="9.9"))


def test_online_plan_is_held_to_the_index(captures_dir: Path, tmp_path: Path) -> None:
    # Not offline: the live check runs, here against a closed port (it says so, and the
    # plan rests on the data); its answer is cached in the session's cache folder.
    base = f"http://127.0.0.1:{_closed_port()}/whl"
    session = Session(capture=captures_dir / MI210, index_base=base, environ={}, cache_dir=tmp_path)
    plan = session.plan(Constraints())
    assert any(r.startswith("index check: ") and "did not answer" in r for r in plan.reasons)
    assert list((tmp_path / "indexes").glob("*.json"))
    offline = Session(capture=captures_dir / MI210, index_base=base, offline=True, environ={})
    assert plan.torch_version == offline.plan(Constraints()).torch_version


def test_doctor_reports_the_plan_resolve_prints(captures_dir: Path) -> None:
    capture = str(captures_dir / RX6800M)
    resolved = rocmkit("resolve", "--capture", capture, "--json")
    assert resolved.code == 0, resolved.stderr
    report = rocmkit("doctor", "--capture", capture, "--level", "0", "--json")
    assert json.loads(report.stdout)["plan"] == json.loads(resolved.stdout)


def test_doctor_reports_why_there_is_no_plan(captures_dir: Path, tmp_path: Path) -> None:
    # No release for this Python: the doctor still checks, and says why the plan is missing.
    shutil.copytree(REPO / "matrices", tmp_path, dirs_exist_ok=True)
    torch = (tmp_path / "torch.toml").read_text()
    torch = re.sub(r'(?m)^python_min = ".*"', 'python_min = "3.40"', torch)
    (tmp_path / "torch.toml").write_text(re.sub(r'(?m)^python_max = ".*"', 'python_max = "3.41"', torch))
    report = rocmkit(
        "doctor", "--capture", str(captures_dir / MI210), "--level", "0", "--json",
        env={"ROCMKIT_MATRICES_DIR": str(tmp_path)},
    )  # fmt: skip
    data = json.loads(report.stdout)
    assert data["plan"] is None
    assert "has no wheels for Python" in data["plan_error"]
    assert "no plan for this machine: " + data["plan_error"] in report.stderr


def test_a_report_of_a_capture_records_the_captured_node_not_this_python(
    captures_dir: Path, tmp_path: Path
) -> None:
    capture = captures_dir / MI210
    report = rocmkit("doctor", "--capture", str(capture), "--level", "0", "--json")
    versions = json.loads(report.stdout)["versions"]
    assert versions["python"] == load_machine(capture).host.python
    assert versions["torch"] is None and versions["triton"] is None and versions["python_executable"] is None
    # So the fleet table shows no torch for it, not this machine's 2.13.0+cpu.
    (tmp_path / "node.json").write_text(report.stdout)
    table = rocmkit("fleet", "summarize", str(tmp_path), "--json")
    (node,) = json.loads(table.stdout)["nodes"]
    assert "+cpu" not in json.dumps(node)
