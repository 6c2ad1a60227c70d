"""``matrix refresh`` says what changed in words, and the weekly workflow runs it and opens a
pull request with those words and the sources read. The build script reader on the recorded
pytorch/pytorch file."""

from __future__ import annotations

import copy
import importlib
import shutil
from pathlib import Path

import pytest

from rocmkit.errors import DataError
from rocmkit.matrix.changes import describe
from rocmkit.matrix.fields import read_toml
from rocmkit.matrix.upstream import pytorch
from tests.support.cli import rocmkit

yaml = importlib.import_module("yaml")  # PyYAML (the test extra) ships no type stubs
REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "data" / "upstream"
BUILD_SH = next((RECORDING / "pytorch").glob("*_027375bf*")) / pytorch.BUILD_SH_PATH


def test_changes_are_said_in_words() -> None:
    new = read_toml(REPO / "matrices" / "torch.toml")
    old = copy.deepcopy(new)
    old["release"] = [r for r in old["release"] if r["version"] != "2.15.0"]
    r2140 = next(r for r in old["release"] if r["version"] == "2.14.0")
    r2140["variants"].append({"index": "cu134", "unconfirmed": ["*"]})
    cpu = next(v for v in r2140["variants"] if v["index"] == "cpu")
    cpu.pop("unconfirmed", None)  # was confirmed; the new data doubts it
    idx = next(r for r in old["rocm_index"] if r["name"] == "rocm7.14")
    idx["archs"] = [a for a in idx["archs"] if a != "gfx1103"] + ["gfx906"]
    chans = read_toml(REPO / "matrices" / "channels.toml")
    old_chans = copy.deepcopy(chans)
    nightly = next(c for c in old_chans["channel"] if c["name"] == "nightly")
    nightly["torch_min"] = "2.14.0.dev0"
    lines = describe(old, new, old_chans, chans)
    assert (
        "torch 2.15.0 added: rocm7.2 (not yet confirmed), rocm7.14 (not yet confirmed), cu126 (not yet "
        "confirmed), cu130 (not yet confirmed), cu132, cu134 (not yet confirmed), cpu (not yet confirmed)"
    ) in lines
    assert "torch 2.14.0: variants removed: cu134; no longer confirmed: cpu" in lines
    assert "ROCm index rocm7.14 archs: +gfx1103, -gfx906" in lines
    assert "channel nightly torch_min: 2.14.0.dev0 -> 2.15.0.dev0" in lines
    assert describe(new, new, chans, chans) == []


def test_refresh_prints_the_changes_before_the_diff(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(REPO / "matrices", folder)
    text = (folder / "torch.toml").read_text()
    start = text.index('[[release]]\nversion = "2.15.0"')
    (folder / "torch.toml").write_text(text[:start].rstrip() + "\n")
    res = rocmkit("matrix", "refresh", "--write", "--dry-run", "--dir", str(folder), "--from", str(RECORDING))
    assert res.code == 0, res.stderr
    assert "changed: torch 2.15.0 added: rocm7.2 (not yet confirmed)" in res.stderr
    assert res.stdout.startswith("--- a/torch.toml")


def test_the_weekly_workflow_refreshes_and_opens_a_pull_request() -> None:
    flow = yaml.safe_load((REPO / ".github" / "workflows" / "refresh.yml").read_text())
    assert flow[True]["schedule"][0]["cron"].split()[-1] == "1"  # weekly (PyYAML reads `on` as True)
    steps = flow["jobs"]["refresh"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "rocmkit matrix refresh --write --dir matrices" in runs and "--pytorch ../pytorch" in runs
    assert "rocmkit matrix check --dir matrices --sources" in runs
    assert "grep '^changed: ' refresh.log" in runs and "## Sources read" in runs
    pr = next(s for s in steps if str(s.get("uses", "")).startswith("peter-evans/create-pull-request"))
    assert pr["with"]["body-path"] == "pr-body.md"


def test_the_build_script_reader_on_the_recorded_file() -> None:
    text = BUILD_SH.read_text(encoding="utf-8")
    archs = pytorch.rocm_archs(text, "7.14")
    assert len(archs) == 13 and "gfx1103" in archs and not {"gfx900", "gfx906"} & set(archs)
    assert pytorch.rocm_archs(text, "7.2")[:2] == ("gfx900", "gfx906")  # the legacy images
    assert pytorch.names_version(text, "7.14")
    # 7.2 is built by the catch-all branch (its nested patch fixup is not a version branch).
    assert not pytorch.names_version(text, "7.2") and not pytorch.names_version(text, "7.1")
    with pytest.raises(DataError, match="no `manylinux2_28-builder:rocm"):
        pytorch.rocm_archs("case ${image} in\nesac\n", "7.14")
