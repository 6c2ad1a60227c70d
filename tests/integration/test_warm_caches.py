"""`rocmkit doctor --warm-caches`: fills the jobs' own compile caches and measures cold vs warm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_warm_caches_fills_the_configured_caches_and_the_warm_step_is_faster(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    inductor, triton = tmp_path / "jobs" / "inductor", tmp_path / "jobs" / "triton"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TRITON_"))},
        "PYTHONPATH": str(REPO),
        "ROCMKIT_CACHE_DIR": str(tmp_path / "rocmkit"),
        "TORCHINDUCTOR_CACHE_DIR": str(inductor),
        "TRITON_CACHE_DIR": str(triton),
        "MIOPEN_CUSTOM_CACHE_DIR": str(tmp_path / "jobs" / "miopen"),
        "MIOPEN_USER_DB_PATH": str(tmp_path / "jobs" / "miopen-db"),
    }

    def doctor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rocmkit", "doctor", "--backend", "cpu", "--json", *args],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=900, check=False,
        )

    def warm_start() -> dict[str, Any]:
        proc = doctor("--level", "2", "--only", "compile.cache_speed")
        (r,) = json.loads(proc.stdout)["results"]
        return dict(r)

    # Level 2 judges a warm start from the jobs' caches only once rocmkit filled them: before,
    # it compiles nothing and says how to fill them.
    before = warm_start()
    assert before["status"] == "skip", before["message"]
    assert before["message"].startswith("not judged: rocmkit has not compiled its step into the jobs' caches")
    assert "rocmkit doctor --warm-caches" in before["remedy"]
    assert not inductor.exists()  # nothing compiled, nothing written

    proc = doctor("--warm-caches", "--skip", "triton.codegen")
    report = json.loads(proc.stdout)
    by = {r["name"]: r for r in report["results"]}
    assert set(by) == {"env.caches", "compile.cache_speed"}, proc.stderr
    speed = by["compile.cache_speed"]
    assert speed["status"] == "pass", speed["message"]
    assert speed["details"]["filled"] and str(inductor) in speed["details"]["where"]
    # The compiled graph is now in the jobs' cache, where their next start finds it.
    assert any(p.is_file() for p in inductor.rglob("*"))
    # What makes the warm start fast, asserted instead of its time: it compiled nothing.
    cold, warm = speed["details"]["cold"], speed["details"]["warm"]
    assert cold["misses"] > 0 and warm["misses"] == 0 and warm["hits"] > 0
    assert by["env.caches"]["status"] in ("pass", "warn")
    # Filled: a level-2 run starts one fresh process from the jobs' caches, and it compiles nothing.
    after = warm_start()
    assert after["status"] == "pass", after["message"]
    assert after["message"].startswith(f"a fresh process started warm from the jobs' caches ({inductor}")
    assert after["details"]["warm"]["misses"] == 0 and after["details"]["warm"]["hits"] > 0
