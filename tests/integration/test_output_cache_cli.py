"""`rocmkit detect` and `rocmkit resolve --offline` reruns, as real processes: the replayed
output is byte-identical to a fresh run's, a changed input is never answered from the cache,
`--fresh` reads nothing, and a run that asks the index or replays a capture stores nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CAPTURES, REPO
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("ROCMKIT_")}
    out["ROCMKIT_CACHE_DIR"] = str(tmp_path / "cache")
    return out


def _run(args: list[str], env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *flags, "-m", "rocmkit", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _entries(env: dict[str, str]) -> list[Path]:
    folder = Path(env["ROCMKIT_CACHE_DIR"]) / "output"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _tamper(entry: Path) -> None:
    """Make the stored answer recognisable: whoever prints it was replayed from the cache."""
    data = json.loads(entry.read_text())
    data["chunks"] = [[False, "TAMPERED\n"]]
    entry.write_text(json.dumps(data))


def _needs_a_boot_id() -> None:
    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("no boot id here: nothing is cached")


@pytest.mark.parametrize(
    "args", [["detect", "--json"], ["resolve", "--json", "--offline"], ["resolve", "--offline", "--format", "requirements"]]
)
def test_cached_and_fresh_output_are_byte_identical(args: list[str], env: dict[str, str]) -> None:
    _needs_a_boot_id()
    cold = _run(args, env)  # detects, resolves, stores
    (entry,) = _entries(env)
    replayed = _run(args, env)
    fresh = _run([*args, "--fresh"], env)
    # The detection cache alone (no output entry): the machine read back from JSON.
    entry.unlink()
    from_detection = _run(args, env)
    for other in (replayed, fresh, from_detection):
        assert other.stdout == cold.stdout
        assert other.stderr == cold.stderr


def test_a_replay_imports_neither_click_nor_the_probes(env: dict[str, str]) -> None:
    _needs_a_boot_id()
    first = _run(["detect", "--json"], env)
    again = _run(["detect", "--json"], env, "-X", "importtime")
    imported = {line.split("|")[-1].strip() for line in again.stderr.splitlines() if "|" in line}
    assert "rocmkit.cache.output_cache" in imported
    assert not imported & {"click", "rocmkit.detect", "rocmkit.probes", "torch"}
    assert again.stdout == first.stdout


def test_fresh_reads_no_entry_and_refreshes_it(env: dict[str, str]) -> None:
    _needs_a_boot_id()
    cold = _run(["detect", "--json"], env)
    (entry,) = _entries(env)
    _tamper(entry)
    assert _run(["detect", "--json"], env).stdout == "TAMPERED\n"  # proof of the replay
    assert _run(["detect", "--json", "--fresh"], env).stdout == cold.stdout
    assert _entries(env) == [entry]
    assert _run(["detect", "--json"], env).stdout == cold.stdout  # --fresh stored it again


def test_a_variable_detection_reads_is_part_of_the_key(env: dict[str, str]) -> None:
    _needs_a_boot_id()
    _run(["detect", "--json"], env)
    (entry,) = _entries(env)
    _tamper(entry)
    changed = _run(["detect", "--json"], {**env, "HIP_VISIBLE_DEVICES": "0"})
    assert changed.stdout != "TAMPERED\n"
    assert json.loads(changed.stdout)["env"]["HIP_VISIBLE_DEVICES"] == "0"
    assert len(_entries(env)) == 2


def test_a_changed_matrix_file_is_never_answered_from_the_cache(env: dict[str, str], tmp_path: Path) -> None:
    _needs_a_boot_id()
    data = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", data)
    env = {**env, "ROCMKIT_MATRICES_DIR": str(data)}
    args = ["resolve", "--json", "--offline"]
    cold = _run(args, env)
    (entry,) = _entries(env)
    _tamper(entry)
    assert _run(args, env).stdout == "TAMPERED\n"
    torch_toml = data / "torch.toml"
    torch_toml.write_text(torch_toml.read_text() + "\n# a comment changes the checksum, not the plan\n")
    assert _run(args, env).stdout == cold.stdout
    assert len(_entries(env)) == 2


def test_online_resolve_and_captures_store_nothing(env: dict[str, str]) -> None:
    _needs_a_boot_id()
    # An index that does not answer: what it serves now is never replayed.
    _run(["resolve", "--json", "--index-base", "file:///nonexistent/whl"], env)
    cap = str(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    _run(["detect", "--json", "--capture", cap], env)
    _run(["resolve", "--json", "--offline", "--capture", cap, "--python", "3.11"], env)
    _run(["detect"], env)  # the table is drawn by rich: not replayed
    assert _entries(env) == []


def test_online_resolve_is_replayed_while_the_index_answer_is_fresh(env: dict[str, str], tmp_path: Path) -> None:
    """Warm and online: the index answer is fresh for minutes (the index cache would serve it
    without a request anyway), so the whole output is replayed; once it is stale, asked again."""
    _needs_a_boot_id()
    folder = tmp_path / "idx" / "whl" / "cpu"
    folder.mkdir(parents=True)
    make_wheel(folder, "torch", "2.13.0+cpu", tag=PLATFORM_TAG)
    args = ["resolve", "--json", "--cpu"]
    with IndexServer(tmp_path / "idx") as server:
        online = {**env, "ROCMKIT_INDEX_BASE": f"{server.url}/whl"}
        cold = _run(args, online)
        assert "serves torch 2.13.0+cpu" in cold.stdout
        asked = len(server.requests)
        (entry,) = _entries(online)
        assert json.loads(entry.read_text())["fresh_until"] > time.time()
        _tamper(entry)
        assert _run(args, online).stdout == "TAMPERED\n"  # replayed, and the index not asked
        assert len(server.requests) == asked
        data = json.loads(entry.read_text())
        data["fresh_until"] = time.time() - 1  # the index answer went stale
        entry.write_text(json.dumps(data))
        again = _run(args, online)  # resolved again (from the index cache's answer)
        assert json.loads(again.stdout)["torch_version"] == json.loads(cold.stdout)["torch_version"]
