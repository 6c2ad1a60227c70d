"""AMD's own channels (--channel amd, amd-rc, amd-nightly; therock = amd-nightly) on real captures
and on AMD's documented version formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from rocmkit.cli import main
from rocmkit.detect import detect_machine, load_machine
from rocmkit.errors import NoPlanError, UsageError
from rocmkit.machine import Gpu, Machine
from rocmkit.matrix import load_matrix
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, resolve
from rocmkit.resolve.amd import rocm_spec, torch_spec
from rocmkit.sources import CaptureSource
from tests.conftest import CAPTURES


def go(machine: Machine, channel: str, **kw: str) -> Plan:
    return resolve(machine, Constraints(channel=channel, python=kw.pop("python", "3.12"), **kw))  # type: ignore[arg-type]


def test_two_arch_capture_gets_one_device_extra_per_arch() -> None:
    # MI100 (gfx908) beside a Raphael iGPU (gfx1036): AMD has a device package for each.
    machine = load_machine(CAPTURES / "mi100-gfx908-igpu-gfx1036-rocm5.7")
    plan = go(machine, "amd")
    assert plan.channel == "amd" and plan.backend.tag == "amd-stable-gfx1036-gfx908"
    assert plan.requirements[:2] == (
        "torch[device-gfx1036,device-gfx908]",
        "torchvision[device-gfx1036,device-gfx908]",
    )
    assert plan.index_urls == ("https://repo.amd.com/rocm/whl-next/",)
    assert plan.env == {} and plan.target_archs == ("gfx1036", "gfx908")
    # The stable index URL is confirmed (TheRock's versioning.md host, its whl-next manifest's stable
    # stream); which ROCm the stream publishes now is not, and the plan says so.
    assert not any("the amd channel's index" in w for w in plan.warnings)
    assert any("relies on an unconfirmed fact: amd publishes ROCm 7.14" in w for w in plan.warnings)
    for req in plan.requirements:
        Requirement(req)  # every line is a valid PEP 508 requirement


def test_igpu_without_a_device_package_is_hidden() -> None:
    # RX 6800M (gfx1031) with a Cezanne iGPU (gfx90c): the stable stream has no device-gfx90c
    # package (TheRock's whl-next manifest: dev and nightly only), so it is hidden.
    machine = load_machine(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    plan = go(machine, "amd")
    assert plan.requirements[0] == "torch[device-gfx1031]"
    assert plan.env == {"HIP_VISIBLE_DEVICES": "0"}
    assert plan.unsupported_gpus and "gfx90c" in plan.unsupported_gpus[0]
    assert "HSA_OVERRIDE_GFX_VERSION" not in plan.env  # gfx1031 has its own device package
    # The nightly whl-next index has one for each; its older multi-arch index (RELEASES.md) has none
    # for gfx90c, so a release before the whl-next layout hides the iGPU again.
    nightly = go(machine, "amd-nightly")
    assert nightly.requirements[0] == "torch[device-gfx1031,device-gfx90c]" and nightly.env == {}
    legacy = go(machine, "amd-nightly", rocm="7.13")
    assert legacy.index_urls == ("https://rocm.nightlies.amd.com/whl-multi-arch/",)
    assert legacy.requirements[0] == "torch[device-gfx1031]" and legacy.env == {"HIP_VISIBLE_DEVICES": "0"}


def test_rocm_pin_per_stream_and_index_per_layout() -> None:
    machine = load_machine(CAPTURES / "mi210x2-gfx90a-rocm6.3.3")
    stable = go(machine, "amd", rocm="7.14", torch="2.13")
    assert stable.requirements[0] == "torch[device-gfx90a]==2.13.*"
    assert "rocm[libraries,device-gfx90a]==7.14.*" in stable.requirements
    assert stable.index_urls == ("https://repo.amd.com/rocm/whl-next/",)
    rc = go(machine, "amd-rc", rocm="7.14")
    assert "rocm[libraries,device-gfx90a]>=7.14.0rc0,<7.15" in rc.requirements
    assert rc.index_urls == ("https://rc.repo.amd.com/rocm/whl-next/",)
    assert any("release candidates" in w for w in rc.warnings)
    # Before the whl/whl-next layout: AMD's multi-arch index of that stream.
    old = go(machine, "amd-nightly", rocm="7.13")
    assert old.index_urls == ("https://rocm.nightlies.amd.com/whl-multi-arch/",)
    assert "rocm[libraries,device-gfx90a]>=7.13.0a0,<7.14" in old.requirements
    assert any("predates the whl-next layout" in r for r in old.reasons)
    assert go(machine, "amd-rc", rocm="7.12").index_urls == ("https://rocm.prereleases.amd.com/whl-multi-arch/",)


@pytest.mark.parametrize(
    ("stream", "rocm", "inside", "outside"),
    [
        # AMD's version forms (TheRock docs/packaging/versioning.md): X.Y.Z, X.Y.ZrcN, X.Y.ZaYYYYMMDD.
        ("stable", "7.14", ["7.14.0", "7.14.2"], ["7.13.0", "7.15.0", "7.14.0rc2"]),
        ("stable", "7.14.1", ["7.14.1"], ["7.14.0", "7.14.2"]),
        ("rc", "7.14", ["7.14.0rc0", "7.14.0rc2", "7.14.1rc1"], ["7.13.0rc3", "7.15.0rc1", "7.15.0"]),
        ("nightly", "7.15", ["7.15.0a20260712"], ["7.14.0a20260615", "7.16.0a20260801"]),
        ("nightly", "10.0", ["10.0.0a20260811"], ["7.15.0a20260712", "10.1.0a20260811"]),
    ],
)
def test_rocm_spec_selects_amds_version_forms(stream: str, rocm: str, inside: list[str], outside: list[str]) -> None:
    spec = SpecifierSet(rocm_spec(stream, rocm), prereleases=stream != "stable")
    assert all(spec.contains(v) for v in inside), (spec, inside)
    assert not any(spec.contains(v) for v in outside), (spec, outside)


def test_torch_spec_matches_amds_local_versions() -> None:
    assert SpecifierSet(torch_spec("2.13")).contains("2.13.0+rocm7.14.0")
    assert SpecifierSet(torch_spec("2.13.1")).contains("2.13.1+rocm7.14.0rc2")
    assert not SpecifierSet(torch_spec("2.13")).contains("2.14.0+rocm7.14.0")


def test_no_gpu_uses_the_all_arch_index() -> None:
    plan = go(Machine(), "amd-nightly")
    assert plan.index_urls == ("https://nightly.repo.amd.com/rocm/whl/",)
    assert plan.requirements == ("torch", "torchvision", "torchaudio")
    legacy = go(Machine(), "amd-nightly", rocm="7.13")
    assert legacy.requirements[0] == "torch[device-all]"


def test_refusals_name_the_fix() -> None:
    with pytest.raises(NoPlanError, match=r"Python 3\.10 to 3\.14"):
        go(load_machine(CAPTURES / "mi210x2-gfx90a-rocm6.3.3"), "amd", python="3.9")
    with pytest.raises(NoPlanError) as info:
        go(Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx803"),)), "amd-rc")
    assert "ROCM_BOOTSTRAP_FORCE_GFX_ARCH" in (info.value.fix or "")
    with pytest.raises(NoPlanError, match="ROCm builds only"):
        resolve(Machine(), Constraints(channel="amd", cpu=True))
    with pytest.raises(UsageError):
        Constraints(channel="amd-beta").validated()


def test_forced_targets_pick_the_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    # AMD's variable, one target per GPU, on a two-GPU capture.
    source = CaptureSource(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    machine = detect_machine(source, environ={"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": "gfx942,gfx1100"})
    plan = go(machine, "amd")
    assert plan.requirements[0] == "torch[device-gfx1100,device-gfx942]"


def test_cli_therock_alias(capsys: pytest.CaptureFixture[str]) -> None:
    capture = str(CAPTURES / "780m-gfx1103-rocm5.7")
    with pytest.raises(SystemExit) as info:
        main(["resolve", "--capture", capture, "--channel", "therock", "--python", "3.12", "--json", "--offline"])
        raise SystemExit(0)
    assert not info.value.code
    plan = json.loads(capsys.readouterr().out)
    assert plan["channel"] == "amd-nightly" and plan["requirements"][0] == "torch[device-gfx1103]"
    assert plan["uv_command"].startswith("uv pip install")


def test_channel_rows_are_consistent() -> None:
    m = load_matrix()
    assert m.channels["therock"] is m.channels["amd-nightly"]
    for name in ("amd", "amd-rc", "amd-nightly"):
        chan = m.channels[name]
        assert chan.kind == "amd" and chan.url.endswith("/whl-next/") and (chan.all_arch_url or "").endswith("/whl/")
        assert (chan.legacy_url or "").endswith("/whl-multi-arch/")
        assert chan.index_for("7.13") == chan.legacy_url and chan.index_for("10.0") == chan.url
    assert [m.channels[n].stream for n in ("amd", "amd-rc", "amd-nightly")] == ["stable", "rc", "nightly"]


def test_amd_extras_match_therock_releases() -> None:
    # amd-nightly's older multi-arch index: RELEASES.md's device-extras table; each AMD channel's own
    # (whl-next) index: the device packages TheRock's ownership manifest serves on its stream.
    from rocmkit.matrix.upstream import therock
    from tests.conftest import DATA

    rel = next((DATA / "upstream" / "therock").glob("*/RELEASES.md"))
    m = load_matrix()
    assert set(therock.device_extras(Path(rel).read_text())) == set(m.channels["amd-nightly"].legacy_archs)
    manifest = next((DATA / "upstream" / "therock").glob("*/" + therock.WHL_NEXT_PATH))
    devices = therock.whl_next_devices(manifest.read_text())
    for name in ("amd", "amd-rc", "amd-nightly"):
        chan = m.channels[name]
        assert set(chan.archs) == set(devices[chan.stream or ""]) and chan.is_confirmed("archs")
    assert {"gfx900", "gfx906"} <= set(m.channels["amd-nightly"].archs) - set(m.channels["amd"].archs)


def test_amd_urls_are_the_ones_amds_build_scripts_publish_to() -> None:
    # TheRock's publishing code (recorded at 89553ce3): the whl-next URL of each release stream,
    # and the older multi-arch index of each.
    import ast

    from tests.conftest import DATA

    rock = next((DATA / "upstream" / "therock").glob("*_89553ce3*"))
    buckets = ast.parse((rock / "build_tools" / "_therock_utils" / "s3_buckets.py").read_text())
    streams: dict[str, str] = {}
    template = ""
    for node in ast.walk(buckets):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_RELEASE_STREAM_BY_TYPE":
            streams = ast.literal_eval(node.value)
        if isinstance(node, ast.JoinedStr) and "repo.amd.com/rocm/whl-next/" in ast.unparse(node):
            template = ast.unparse(node)
    assert template == "f'https://{stream}.repo.amd.com/rocm/whl-next/'"
    publish = ast.parse((rock / "build_tools" / "github_actions" / "publish_pytorch_to_release_bucket.py").read_text())
    legacy = next(
        ast.literal_eval(n.value)
        for n in ast.walk(publish)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "LEGACY_MULTI_ARCH_INDEX_URLS"
    )
    m = load_matrix()
    for channel, release_type in (("amd-rc", "prerelease"), ("amd-nightly", "nightly")):
        chan = m.channels[channel]
        assert chan.url == f"https://{streams[release_type]}.repo.amd.com/rocm/whl-next/"
        assert chan.legacy_url == legacy[release_type]
    # The stable stream: the multi-arch release channel RELEASES.md names (its own TODO comment).
    assert (m.channels["amd"].legacy_url or "-") in (rock / "RELEASES.md").read_text()
    rfc = (rock / "docs" / "rfcs" / "RFC0012-Repo-Structure.md").read_text()
    assert "<stream>.repo.amd.com/rocm/whl/" in rfc and "<stream>.repo.amd.com/rocm/whl-next/" in rfc


def test_amd_plans_round_trip_through_the_plan_schema() -> None:
    machine = Machine(gpus=tuple(Gpu(vendor="amd", index=i, arch=a) for i, a in enumerate(("gfx942", "gfx1100"))))
    plan = go(machine, "amd-rc", rocm="7.14")
    assert Plan.from_dict(plan.to_dict()) == plan
    # Many targets: the backend stays a short name, target_archs keeps them all.
    many = ("gfx1010", "gfx1030", "gfx1100", "gfx1101", "gfx1151", "gfx1201", "gfx908", "gfx90a", "gfx942")
    plan = go(Machine(gpus=tuple(Gpu(vendor="amd", index=i, arch=a) for i, a in enumerate(many))), "amd-nightly")
    assert plan.backend.tag == "amd-nightly-9-targets" and len(plan.target_archs) == 9
    assert Plan.from_dict(plan.to_dict()) == plan


def test_driver_window_on_amd_channels() -> None:
    # The mi250x capture runs ROCm 6.0's amdgpu-dkms (6.3.6: user space 5.6-6.2, AMD's matrix):
    # AMD's stable stream publishes ROCm 7.14, outside it, so the plan warns with the fix.
    machine = load_machine(CAPTURES / "mi250x-gfx90a-rocm6.2.1")
    plan = go(machine, "amd")
    assert any(
        "amdgpu-dkms 6.3.6 (ROCm 6.0's) supports ROCm user space 5.6 to 6.2, but the wheel bundles ROCm 7.14" in w
        for w in plan.warnings
    )
    assert any("amd publishes ROCm 7.14" in w for w in plan.warnings)  # an unconfirmed fact, said so
    plan = go(machine, "amd-nightly", rocm="10.0")
    assert any("bundles ROCm 10.0" in w for w in plan.warnings)
