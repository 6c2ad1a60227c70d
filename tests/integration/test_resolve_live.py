"""resolve/install hold the plan to what a real index on 127.0.0.1 serves now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rocmkit.machine import Machine
from rocmkit.matrix import load_matrix
from rocmkit.resolve import Constraints, live, resolve
from tests.support.pkgindex import PLATFORM_TAG, PY_TAG, IndexServer, make_wheel

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _torch(folder: Path, *versions: str, tag: str = PLATFORM_TAG) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for version in versions:
        make_wheel(folder, "torch", version, tag=tag)


def _cpu_plan(
    base: str, cache: Path, fallbacks: list[tuple[str, bool]] | None = None
) -> tuple[str, list[str], list[str]]:
    machine = Machine()
    cons = Constraints(cpu=True, python=PY, index_base=base)
    m = load_matrix()
    plan = live.check_plan(
        resolve(machine, cons, matrix=m),
        machine,
        cons,
        m,
        fallbacks=fallbacks or [],
        read=live.observer(timeout=2.0, cache=cache),
    )
    return plan.torch_version or "", list(plan.reasons), list(plan.warnings)


def test_a_newer_build_on_the_index_is_named(tmp_path: Path) -> None:
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu", "2.16.0+cpu")
    with IndexServer(tmp_path / "idx") as server:
        version, reasons, warnings = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert version == "2.13.0+cpu"
    assert any(f"{server.url}/whl/cpu serves torch 2.13.0+cpu for Python {PY}" in r for r in reasons)
    assert (
        "torch 2.16.0 is on the index but not in rocmkit's data: run `rocmkit matrix refresh --write`"
        in warnings
    )


def test_a_build_the_index_lacks_is_not_planned(tmp_path: Path) -> None:
    # Neither the newest build upstream listed (2.15.0) nor the data's newest confirmed CPU
    # build (2.13.0) is there; 2.12.1 is.
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.12.1+cpu", "2.11.0+cpu")
    with IndexServer(tmp_path / "idx") as server:
        version, reasons, _ = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert version == "2.12.1+cpu"
    assert any(
        "do(es) not serve torch 2.15.0+cpu" in r and "planned 2.12.1+cpu instead" in r for r in reasons
    )


def test_a_build_for_another_python_does_not_count(tmp_path: Path) -> None:
    other = "cp310" if PY_TAG != "cp310" else "cp312"
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu", tag=f"{other}-{other}-manylinux_2_28_x86_64")
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.12.0+cpu")
    with IndexServer(tmp_path / "idx") as server:
        version, _, _ = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert version == "2.12.0+cpu"


def test_the_index_confirms_a_build_the_data_doubts(tmp_path: Path) -> None:
    # torch.toml knows 2.14.0+cpu only from a build list (unconfirmed: not a default);
    # an index that serves it settles the doubt.
    release = load_matrix().torch_release("2.14.0")
    cpu = release.variant("cpu") if release else None
    assert cpu is not None and "*" in cpu.unconfirmed
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu", "2.14.0+cpu")
    with IndexServer(tmp_path / "idx") as server:
        version, _, _ = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert version == "2.14.0+cpu"


def test_down_index_falls_back_to_what_the_users_sources_hold(tmp_path: Path) -> None:
    # The shape of this build machine: the PyTorch index does not answer; a find-links
    # folder holds a CPU 2.12.1 and PyPI holds (CUDA) torch without a local version.
    links = tmp_path / "wheels"
    _torch(links, "2.12.1+cpu")
    _torch(tmp_path / "pypi" / "simple" / "torch", "2.14.1", "2.13.0")
    with IndexServer(tmp_path / "pypi") as pypi:
        dead = IndexServer(tmp_path / "nothing")
        dead.start()
        base = dead.url
        dead.stop_serving()
        version, reasons, _ = _cpu_plan(
            f"{base}/whl", tmp_path / "cache", [(str(links), False), (f"{pypi.url}/simple", True)]
        )
    # Never PyPI's CUDA build where CPU was meant, never a version no source holds.
    assert version == "2.12.1+cpu"
    assert any("planned 2.12.1+cpu instead" in r for r in reasons)


def test_nothing_answers_means_the_packaged_data(tmp_path: Path) -> None:
    dead = IndexServer(tmp_path)
    dead.start()
    base = dead.url
    dead.stop_serving()
    version, reasons, _ = _cpu_plan(f"{base}/whl", tmp_path / "cache")
    # The packaged data's plan: the newest release upstream built, not yet seen on an index.
    assert version == "2.15.0+cpu"
    assert any("rests on rocmkit's packaged data" in r for r in reasons)
    assert any("torch 2.15.0+cpu is not yet seen on an index" in r for r in reasons)


def test_answers_are_cached_with_their_etag(tmp_path: Path) -> None:
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu")
    cache = tmp_path / "cache"
    with IndexServer(tmp_path / "idx") as server:
        page = "/whl/cpu/torch/"
        _cpu_plan(f"{server.url}/whl", cache)
        assert server.requests.count(page) == 1
        _cpu_plan(f"{server.url}/whl", cache)  # fresh: no request
        assert server.requests.count(page) == 1
        (entry,) = cache.glob("*.json")
        data = json.loads(entry.read_text())
        assert data["etag"] and ["2.13.0+cpu", PY] in data["builds"]
        data["fetched"] -= live.TTL_S + 1
        entry.write_text(json.dumps(data))
        _, reasons, _ = _cpu_plan(f"{server.url}/whl", cache)  # stale: revalidated, 304
        assert server.requests.count(page) == 2
        assert any("not modified since last read" in r for r in reasons)


def test_resolve_cli_says_what_it_saw(tmp_path: Path) -> None:
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu", "2.16.0+cpu")
    env = {k: v for k, v in os.environ.items() if k != "ROCMKIT_OFFLINE"}
    env["ROCMKIT_CACHE_DIR"] = str(tmp_path / "cache")
    with IndexServer(tmp_path / "idx") as server:
        argv = [sys.executable, "-m", "rocmkit", "resolve", "--cpu", "--index-base", f"{server.url}/whl"]
        live_run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
        asked = len(server.requests)
        offline = subprocess.run(
            [*argv, "--offline"], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        before = len(server.requests) - asked
    assert live_run.returncode == 0, live_run.stderr
    assert "torch 2.16.0 is on the index but not in rocmkit's data" in live_run.stdout + live_run.stderr
    assert offline.returncode == 0 and "2.16.0" not in offline.stdout + offline.stderr
    assert server.requests[:1] == ["/whl/cpu/torch/"]  # the live run read the torch page first
    assert before == 0  # the --offline run asked nothing


def test_an_index_that_lists_builds_for_other_pythons_only_is_refused(tmp_path: Path) -> None:
    """The index answered: the plan may not name a build it did not list for this Python."""
    import pytest

    from rocmkit.errors import NoPlanError

    other = "cp310" if PY_TAG != "cp310" else "cp312"
    _torch(tmp_path / "idx" / "whl" / "cpu", "2.13.0+cpu", tag=f"{other}-{other}-manylinux_2_28_x86_64")
    with IndexServer(tmp_path / "idx") as server, pytest.raises(NoPlanError) as refused:
        _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert f"no +cpu build is listed for Python {PY}" in refused.value.message
    assert "--index-base" in (refused.value.fix or "")
