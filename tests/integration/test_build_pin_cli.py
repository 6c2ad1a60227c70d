"""`python -m rocmkit.source_build.pin` against local git repositories, and `rocmkit build` plans."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import cli
from rocmkit.proc.runner import run

pytestmark = pytest.mark.integration

PIN_FILE = ".ci/docker/ci_commit_pins/triton.txt"


def git(*args: str, cwd: Path) -> str:
    result = run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, timeout=60)
    assert result.ok, result.describe()
    return result.stdout.strip()


@pytest.fixture
def triton_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with two commits; torch pins the first, the branch tip is the second."""
    repo = tmp_path / "triton-repo"
    repo.mkdir()
    git("init", "--quiet", cwd=repo)
    (repo / "VERSION").write_text("pinned\n")
    git("add", ".", cwd=repo)
    git("commit", "--quiet", "-m", "pinned", cwd=repo)
    pinned = git("rev-parse", "HEAD", cwd=repo)
    (repo / "VERSION").write_text("newer\n")
    git("commit", "--quiet", "-am", "newer", cwd=repo)
    return repo, pinned, git("rev-parse", "HEAD", cwd=repo)


def torch_checkout(tmp_path: Path, pin: str) -> Path:
    torch = tmp_path / "pytorch"
    (torch / PIN_FILE).parent.mkdir(parents=True)
    (torch / PIN_FILE).write_text(pin + "\n")
    return torch


def pin_cmd(torch: Path, repo: Path, dest: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "rocmkit.source_build.pin", "--torch-src", str(torch), "--pin-file", PIN_FILE,
        "--repo", repo.as_uri(), "--dest", str(dest), *extra,
    ]  # fmt: skip


def test_pin_checks_out_exactly_the_pinned_commit(tmp_path: Path, triton_repo: tuple[Path, str, str]) -> None:
    repo, pinned, tip = triton_repo
    torch = torch_checkout(tmp_path, pinned)
    dest = tmp_path / "src" / "triton"
    dest.mkdir(parents=True)
    (dest / "half-fetched").write_text("left over from an interrupted run")
    result = run(pin_cmd(torch, repo, dest, "--expect", pinned[:8]), timeout=120)
    assert result.ok, result.stdout + result.stderr
    assert f"torch pins Triton {pinned}" in result.stdout
    assert git("rev-parse", "HEAD", cwd=dest) == pinned != tip
    assert (dest / "VERSION").read_text() == "pinned\n"
    assert not (dest / "half-fetched").exists()


def test_pin_disagreeing_with_build_toml_stops(tmp_path: Path, triton_repo: tuple[Path, str, str]) -> None:
    repo, pinned, _ = triton_repo
    torch = torch_checkout(tmp_path, pinned)
    result = run(pin_cmd(torch, repo, tmp_path / "t", "--expect", "deadbeef"), timeout=120)
    assert result.returncode == 5
    assert (
        f"build.toml says the Triton commit is deadbeef, but {PIN_FILE} in the torch checkout says {pinned}"
        in result.stderr
    )
    missing = run(pin_cmd(tmp_path / "nowhere", repo, tmp_path / "t"), timeout=120)
    assert missing.returncode == 5 and "torch checkout has no Triton pin file" in missing.stderr


def test_cli_dry_run_json_and_script(tmp_path: Path) -> None:
    runner = CliRunner()
    args = [
        "build",
        "--arch",
        "gfx1031",
        "--arch",
        "gfx1030",
        "--torch",
        "2.7",
        "--build-dir",
        str(tmp_path / "b"),
    ]
    res = runner.invoke(cli, [*args, "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["schema"] == "rocmkit.build-plan/1"
    assert plan["facts"]["torch_tag"] == "v2.7.1"
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == "gfx1031;gfx1030"
    assert [s["name"] for s in plan["steps"]][:3] == ["torch-source", "torch-build-deps", "triton-source"]
    assert {p["name"] for p in plan["preflight"]} >= {"disk", "memory", "git", "hipcc", "Python headers"}
    assert not (tmp_path / "b").exists()  # a plan creates nothing

    res = runner.invoke(cli, [*args, "--script"])
    assert res.exit_code == 0 and res.stdout.startswith("#!/usr/bin/env bash")
    syntax = run(["bash", "-n"], input_text=res.stdout, timeout=30)
    assert syntax.ok, syntax.stderr

    res = runner.invoke(cli, [*args, "--dry-run"])
    assert res.exit_code == 0
    assert "Build plan: torch 2.7.1 for gfx1031;gfx1030 (ROCm)" in res.stdout
    assert "tools/amd_build/build_amd.py" in res.stdout


def test_cli_real_run_stops_at_preflight_without_rocm(tmp_path: Path) -> None:
    if Path("/opt/rocm/bin/hipcc").exists():
        pytest.skip("this host has ROCm: preflight would pass and a real torch build start")
    result = run(
        [sys.executable, "-m", "rocmkit", "build", "--arch", "gfx1031", "--build-dir", str(tmp_path / "b")],
        timeout=60,
    )
    assert result.returncode == 7
    assert "[FAIL] hipcc" in result.stderr
    assert "error: preflight:" in result.stderr and "--skip-preflight" in result.stderr


def test_cli_plans_for_a_captured_machine(tmp_path: Path, captures_dir: Path) -> None:
    capture = captures_dir / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"
    res = CliRunner().invoke(
        cli,
        ["build", "--capture", str(capture), "--torch", "2.7", "--build-dir", str(tmp_path / "b"), "--json"],
    )
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["facts"]["archs"] == ["gfx1031"]
    assert any("gfx90c" in n and "integrated, left out" in n for n in plan["notes"])
    # resolve's answer for this GPU is part of the plan: the wheel needs the override, this build does not.
    assert any("HSA_OVERRIDE_GFX_VERSION" in n and "natively" in n for n in plan["notes"])
