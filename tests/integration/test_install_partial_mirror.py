"""Required pins vs companions, for real: a dead planned index and (--fallback-index) a mirror
(a real index on 127.0.0.1, the user's own extra index) that holds torch but not torchvision; and
``--no-companions`` against a live index that holds both."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rocmkit.detect import load_machine
from rocmkit.resolve import Constraints, resolve
from tests.integration.test_install_cpu_path import PY, dead_base, rk
from tests.support.cli import last_error
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

__all__ = ["dead_base"]  # the fixture, shared with the CPU path tests


def _site(venv: Path) -> set[str]:
    return {p.name.split("-")[0].lower() for p in venv.glob("lib/python*/site-packages/*.dist-info")}


def test_mirror_without_torchvision_installs_torch_and_says_how_to_add_it(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = resolve(load_machine(None), Constraints(python=PY, index_base=dead_base))
    assert plan.backend.tag == "cpu" and plan.torch_version and plan.companions
    root = tmp_path / "index"
    make_torch_set(root / "mirror", plan.torch_version)  # torch only: no companion
    with IndexServer(root) as srv:
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", srv.index_url("mirror"))
        venv = tmp_path / "venv"
        code, out, err = rk(capsys, "--venv", str(venv), "--installer", "pip", "--json", "--fallback-index")
    assert code == 0, err
    assert (
        f"index {dead_base}/cpu did not answer (connection refused); using {srv.index_url('mirror')}" in err
    )
    assert f"verified: torch {plan.torch_version}" in err
    outcome = json.loads(out)
    assert outcome["left_out"] == list(plan.companions)
    assert outcome["requirements"] == list(plan.requirements)  # the plan, unchanged
    python = venv / "bin" / "python"
    for companion in plan.companions:
        # The venv rocmkit made has no pip: rocmkit's own pip drives it.
        add = f"{sys.executable} -m pip --python {python} install {companion} --index-url {dead_base}/cpu"
        # Said before the install, and the warning with its fix once, as the last word.
        assert f"rocmkit: {companion} is left out" in err and err.count(add) == 1
        assert f"rocmkit: WARNING: {companion} was not installed; add it later with: {add}" in err
        assert err.count(f"WARNING: {companion}") == 1
        assert companion.split("==")[0] not in _site(venv)
    assert "torch" in _site(venv)
    # The guard pins what was installed, not the companions left out (issue 29: a pin no reachable
    # source satisfies made every later install pulling torchvision unresolvable); it names them.
    text = (venv / "rocmkit-constraints.txt").read_text()
    pins = [line for line in text.splitlines() if not line.startswith("#")]
    pinned = [c for c in plan.companions if "==" in c]
    assert pinned and not any(c in pins for c in pinned)
    assert f"torch=={plan.torch_version}" in pins
    assert f"# Left out by this install, so not pinned: {', '.join(plan.companions)}." in text


def test_a_missing_required_pin_still_fails_with_exit_9(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = resolve(load_machine(None), Constraints(python=PY, index_base=dead_base))
    root = tmp_path / "index"
    for companion in plan.companions:  # the companions but no torch
        name, _, version = companion.partition("==")
        make_wheel(root / "mirror", name, version)
    with IndexServer(root) as srv:
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", srv.index_url("mirror"))
        venv = tmp_path / "venv"
        code, _, err = rk(capsys, "--venv", str(venv), "--fallback-index")
    assert code == 9, err
    assert f"do not hold torch=={plan.torch_version}" in last_error(err)
    assert not venv.exists()


def test_no_companions_installs_torch_only(
    tmp_path: Path, dead_base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "index"
    with IndexServer(root) as srv:
        base = srv.url + "/whl"
        plan = resolve(load_machine(None), Constraints(python=PY, index_base=base))
        assert plan.torch_version and plan.companions
        make_torch_set(root / "whl" / "cpu", plan.torch_version)
        for companion in plan.companions:
            name, _, version = companion.partition("==")
            make_wheel(root / "whl" / "cpu", name, version)
        venv = tmp_path / "venv"
        args = ["--venv", str(venv), "--index-base", base, "--installer", "uv", "--json"]
        code, out, err = rk(capsys, *args, "--no-companions")
    assert code == 0, err
    assert f"--skip companions: leaving out {', '.join(plan.companions)}" in err
    assert f"verified: torch {plan.torch_version}" in err
    assert json.loads(out)["left_out"] == list(plan.companions)
    assert "torch" in _site(venv)
    assert not {c.split("==")[0] for c in plan.companions} & _site(venv)
    # Not offered where it cannot apply.
    code, _, err = rk(capsys, "--venv", str(venv), "--no-companions", "--wheelhouse", str(tmp_path))
    assert code == 4 and "--skip companions does not apply" in err
