"""A cache folder another user can write, as real processes: `rocmkit detect` never replays an
entry from it (the same entry is replayed from a private folder: the rule refused it, not the
entry), and `rocmkit doctor` fails env.cache_dir with the fix, compiling nothing into it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize("how", ["world-writable", "another user's"])
def test_an_entry_in_a_cache_others_can_write_is_never_replayed(tmp_path: Path, how: str) -> None:
    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("no boot id here: nothing is cached")
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("making a folder another user's needs root (chown)")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMKIT_")}
    env["ROCMKIT_CACHE_DIR"] = str(cache)
    first = _run(["detect", "--json"], env)
    assert first.returncode == 0, first.stderr[-2000:]
    (entry,) = (cache / "output").glob("*.json")
    assert (entry.stat().st_mode & 0o777, (cache / "output").stat().st_mode & 0o777) == (0o600, 0o700)
    data = json.loads(entry.read_text())
    data["chunks"] = [[False, "PLANTED\n"]]
    entry.write_text(json.dumps(data))
    assert _run(["detect", "--json"], env).stdout == "PLANTED\n"  # the control: replayed from ours
    listing = sorted((str(p), p.stat().st_mtime_ns) for p in cache.rglob("*"))
    if how == "world-writable":
        os.chmod(cache, 0o777)
    else:
        os.chown(cache, 65534, 65534)
    again = _run(["detect", "--json"], env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "PLANTED" not in again.stdout and json.loads(again.stdout)["schema"] == "rocmkit.machine/1"
    assert json.loads(entry.read_text())["chunks"] == [[False, "PLANTED\n"]]  # nor written over
    doctor = _run(["doctor", "--only", "env.cache_dir"], env)
    assert doctor.returncode == 1, doctor.stderr[-2000:]
    out = doctor.stdout + doctor.stderr
    assert "is not safe to load compiled kernels from" in out and "ROCMKIT_CACHE_DIR" in out
    # Nothing was read from it, and nothing written into it (no entry, no compiled kernel).
    assert sorted((str(p), p.stat().st_mtime_ns) for p in cache.rglob("*")) == listing
