"""The plan as a reviewable shell script (it is run for real in tests/integration)."""

from __future__ import annotations

import shlex
from pathlib import Path

from rocmkit.source_build.recipes import BuildOptions, HostFacts, load_build_matrix, make_recipe
from rocmkit.source_build.script import render_script
from rocmkit.source_build.targets import target_from_args


def test_script_runs_the_same_argv_with_the_same_env(tmp_path: Path) -> None:
    recipe = make_recipe(
        load_build_matrix().release("2.7"),
        target_from_args(["gfx1031", "gfx1030"], None),
        HostFacts(cores=4, memory_bytes=64 * 1024**3),
        BuildOptions(build_dir=tmp_path / "build dir", python="/v/bin/python"),
    )
    text = render_script(recipe)
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert f"# Plan fingerprint: {recipe.fingerprint()}" in text
    # Semicolons and spaces are quoted, so the script means what the plan means.
    assert "export PYTORCH_ROCM_ARCH='gfx1031;gfx1030'" in text
    for i, step in enumerate(recipe.steps, 1):
        assert f"# [{i}/{len(recipe.steps)}] {step.name}: " in text
        assert f"  {shlex.join(step.argv)}\n" in text or f"  {shlex.join(step.argv)} || " in text
        assert f"  cd {shlex.quote(step.cwd or recipe.build_dir)}\n" in text
    torch_src = str((tmp_path / "build dir/src/pytorch").resolve())
    assert f"  rm -rf -- {shlex.quote(torch_src)}\n" in text
    assert "# note: MAX_JOBS = min(cores" in text
    # doctor's exit 2 (warnings only) counts as success, as in the step runner.
    assert 'rocmkit doctor || { rc=$?; case " 0 2 " in' in text
