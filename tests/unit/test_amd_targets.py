"""AMD's detection contract (rocm-bootstrap's variables and target names) on real captures, and
matrices/amd_targets.toml against AMD's own recorded targets.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine, parse_overrides
from rocmkit.detect.amd_names import amd_names, hierarchy_lines
from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, Machine
from rocmkit.matrix.amd_targets import load_amd_targets
from rocmkit.sources import CaptureSource
from rocmkit.util.envvars import relevant_raw
from tests.conftest import CAPTURES, DATA

RECORDED = DATA / "upstream" / "rocm-bootstrap" / "0.3.0"
TWO_ARCH = CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"


def detect(capture: Path, **env: str) -> Machine:
    return detect_machine(CaptureSource(capture), environ=env)


def _bundles(tree: ast.Module) -> dict[str, dict[str, object]]:
    """The TargetBundle(...) constants of AMD's targets.py: key, level, name, generic, members."""
    out: dict[str, dict[str, object]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "TargetBundle":
            kw = {k.arg: k.value for k in node.keywords}
            level = kw["level"]
            if not isinstance(level, ast.Name) or level.id not in ("_SF", "_F"):
                continue
            members = kw["members"]
            assert isinstance(members, ast.Tuple)
            out[ast.literal_eval(kw["key"])] = {
                "level": level.id,
                "name": ast.literal_eval(kw["display_name"]),
                "generic": ast.literal_eval(kw["llvm_generic"]),
                "members": [str(getattr(e, "id", "")).lower().replace("_strict", "-strict") for e in members.elts],
            }
    return out


def test_table_is_amds_targets_py() -> None:
    bundles = _bundles(ast.parse((RECORDED / "targets.py").read_text()))
    table = load_amd_targets()
    families = {k: v for k, v in bundles.items() if v["level"] == "_F"}
    subs = {k: v for k, v in bundles.items() if v["level"] == "_SF"}
    assert set(table.families) == set(families)
    for key, fam in table.families.items():
        assert (fam.name, fam.generic) == (families[key]["name"], families[key]["generic"])
    for key, sub in subs.items():
        level = table.sub_families[key]
        assert (level.name, level.generic) == (sub["name"], sub["generic"])
        members = sub["members"]
        assert isinstance(members, list)
        assert [t for t, c in table.targets.items() if c.sub_family.key == key] == members
    # AMD's aliases of the older spelling still resolve (targets.py _BUNDLE_KEY_ALIASES).
    assert table.sub_families["gfx11_0"].key == "gfx110x"


def test_hierarchy_as_rocm_bootstrap_prints_it() -> None:
    # rocm-bootstrap's README example: "gfx1201 gfx12_0 gfx12" and "gfx1100 gfx110x gfx11".
    machine = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx1201"), Gpu(vendor="amd", index=1, arch="gfx1100")))
    table = load_amd_targets()
    assert [table.lookup(g.arch or "").chain() for g in machine.gpus] == [
        "gfx1201 gfx12_0 gfx12",
        "gfx1100 gfx110x gfx11",
    ]
    assert table.lookup("gfx90a:sramecc+:xnack-").family.key == "gfx9"
    lines = hierarchy_lines(detect(TWO_ARCH))
    assert lines == ["GPU 0: gfx1031 gfx10_3 gfx10 (RDNA2)", "GPU 1: gfx90c gfx9_0 gfx9 (Vega)"]


def test_force_gfx_arch_replaces_each_target_keeping_the_rest() -> None:
    machine = detect(TWO_ARCH, ROCM_BOOTSTRAP_FORCE_GFX_ARCH=" gfx1100, ,gfx1101 ")
    amd = machine.amd_gpus
    assert [g.arch for g in amd] == ["gfx1100", "gfx1101"]
    assert amd[0].name == "AMD Radeon RX 6800M" and "override" in amd[0].sources
    assert machine.overrides == {"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": " gfx1100, ,gfx1101 "}
    rows = amd_names(machine)
    assert rows[1]["sub_family"] == "gfx110x" and rows[1]["family"] == "gfx11"


def test_force_gfx_arch_with_another_count_replaces_the_list_as_amd_does() -> None:
    machine = detect(TWO_ARCH, ROCM_BOOTSTRAP_FORCE_GFX_ARCH="gfx942")
    assert [g.arch for g in machine.amd_gpus] == ["gfx942"]


def test_disable_detection_drops_amd_gpus_only() -> None:
    capture = CAPTURES / "mi210x2-gfx90a-rocm6.3.3"
    before = detect(capture, ROCMKIT_CUDA_ARCH="9.0")  # and an NVIDIA GPU beside them
    assert len(before.amd_gpus) == 2 and before.nvidia_gpus
    after = detect(capture, ROCMKIT_CUDA_ARCH="9.0", ROCM_BOOTSTRAP_DISABLE_DETECTION="1")
    assert not after.amd_gpus and after.nvidia_gpus == before.nvidia_gpus
    # rocm-bootstrap tests for exactly "1"; anything else leaves detection on.
    assert detect(capture, ROCM_BOOTSTRAP_DISABLE_DETECTION="true").amd_gpus
    # DISABLE is read before FORCE.
    both = detect(TWO_ARCH, ROCM_BOOTSTRAP_DISABLE_DETECTION="1", ROCM_BOOTSTRAP_FORCE_GFX_ARCH="gfx942")
    assert not both.amd_gpus


def test_rocmkit_variables_win_and_say_so() -> None:
    machine = detect(TWO_ARCH, ROCMKIT_GFX="gfx1030", ROCM_BOOTSTRAP_FORCE_GFX_ARCH="gfx942,gfx942")
    assert [g.arch for g in machine.amd_gpus] == ["gfx1030", "gfx1030"]
    assert any(
        p.source == "overrides" and "ROCMKIT_GFX=gfx1030 wins over ROCM_BOOTSTRAP_FORCE_GFX_ARCH" in p.message
        for p in machine.problems
    )
    same = detect(TWO_ARCH, ROCMKIT_GFX="gfx942", ROCM_BOOTSTRAP_FORCE_GFX_ARCH="gfx942")
    assert not any(p.source == "overrides" for p in same.problems)
    assert not detect(TWO_ARCH, ROCMKIT_NO_GPU="1", ROCM_BOOTSTRAP_FORCE_GFX_ARCH="gfx942").gpus


def test_unknown_forced_target_is_one_clear_error() -> None:
    with pytest.raises(UsageError) as info:
        parse_overrides({"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": "gfx942,gfx9999"})
    assert "'gfx9999' is not a target AMD's rocm-bootstrap knows" in info.value.message
    assert "unset ROCM_BOOTSTRAP_FORCE_GFX_ARCH" in (info.value.fix or "")
    # AMD's names beyond rocmkit's own arch table are accepted.
    assert parse_overrides({"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": "gfx1250-strict"}).bootstrap_gfx == ("gfx1250-strict",)


def test_bootstrap_variables_key_the_detection_cache() -> None:
    env = {"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": "gfx942", "ROCM_BOOTSTRAP_DISABLE_DETECTION": "1", "OTHER": "x"}
    assert set(relevant_raw(env)) == {"ROCM_BOOTSTRAP_FORCE_GFX_ARCH", "ROCM_BOOTSTRAP_DISABLE_DETECTION"}


def test_detect_json_carries_amds_names(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from rocmkit.cli import main
    from rocmkit.machine import Machine as M

    with pytest.raises(SystemExit) as info:
        main(["detect", "--capture", str(TWO_ARCH), "--json"])
        raise SystemExit(0)
    assert not info.value.code
    data = json.loads(capsys.readouterr().out)
    assert [(r["target"], r["sub_family"], r["family"]) for r in data["amd_targets"]] == [
        ("gfx1031", "gfx10_3", "gfx10"),
        ("gfx90c", "gfx9_0", "gfx9"),
    ]
    assert M.from_dict(data).amd_gpus[0].arch == "gfx1031"  # the extra key does not break the record


def test_no_amd_gpu_names_nothing_without_reading_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # `detect --json` on an NVIDIA or CPU host: AMD's table is not parsed at all (start-up time).
    import rocmkit.matrix.amd_targets as table

    def refuse(directory: Path | None = None) -> object:
        raise AssertionError("AMD's table was read for a machine without an AMD GPU")

    monkeypatch.setattr(table, "load_amd_targets", refuse)
    assert amd_names(Machine(gpus=(Gpu(vendor="nvidia", index=0, arch="sm_90"),))) == []
    assert amd_names(Machine()) == []
    with pytest.raises(AssertionError):
        amd_names(Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx1100"),)))
