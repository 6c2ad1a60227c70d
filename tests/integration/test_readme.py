"""The README stays true: every command line in its ``bash`` blocks is run (by
scripts/walkthrough.sh, in a throwaway folder, or by a test here) or listed with why not, and
every figure it quotes is one that benchmarks/first-run.md records with how it was measured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The pylock test's machine and 127.0.0.1 index (fixtures, imported to be used here).
from tests.integration.test_lock_exports import _quiet_user_config, index_root, plan_args, server  # noqa: F401
from tests.support.cli import last_error, run_main
from tests.support.pkgindex import IndexServer, closed_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
FIRST_RUN = REPO / "benchmarks/first-run.md"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"

# README lines this file runs, beside the walk-through (the test that runs each).
RUN_HERE = {
    "rocmkit export pylock --output pylock.toml": "test_the_pylock_line_writes_a_lock_or_no_file",
}
# README lines not run in CI, and why (a test file named here must exist).
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/rocmkit install --venv .venv && "
    ".venv/bin/rocmkit doctor --venv .venv --level 2": "downloads (rocmkit's dependencies, torch): "
    "`bash scripts/walkthrough.sh --full` runs it whole and measures it (benchmarks/first-run.md); the walk-through "
    "runs its install against a dead index (exit 9, --fallback-index first)",
    "python3 -m venv .venv && .venv/bin/pip install -q -e .": "downloads rocmkit's dependencies: the main line's "
    "first half, run by `bash scripts/walkthrough.sh --full`",
    "bash scripts/test.sh": "the whole suite, this test among it: .ci/run runs exactly this",
    "uv tool install .": "builds rocmkit with hatchling from PyPI (a download); run by hand, benchmarks/first-run.md",
    "rocmkit install --venv ~/venvs/torch": "installs torch (minutes, GBs): the main line's install, run by "
    "`walkthrough.sh --full`; planned (--dry-run) by the walk-through",
    "rocmkit doctor --venv ~/venvs/torch --level 2": "needs that install; the main line's doctor, run by "
    "`walkthrough.sh --full`",
    "source ~/venvs/torch/bin/activate": "needs that install; the walk-through activates .venv the same way",
    "rocmkit install --venv ~/venvs/jax --framework jax": "installs jax: tests/integration/test_jax_install_doctor.py "
    "does, from a 127.0.0.1 index",
    "rocmkit install --venv ~/venvs/torch --with xformers": "a GPU machine's line: xformers has no CPU build "
    "(tests/unit/test_companions_resolve.py: the refusal, exit 6)",
    "rocmkit wheelhouse /shared/wh": "downloads: tests/integration/test_install_e2e.py "
    "fills a wheelhouse from a 127.0.0.1 index",
    "rocmkit install --wheelhouse /shared/wh --venv ~/venvs/torch": "needs that wheelhouse: "
    "tests/integration/test_install_e2e.py installs from one offline",
    "rocmkit doctor --venv ~/venvs/torch --json --output report.json": "needs an install: "
    "tests/integration/test_doctor_venv.py checks a venv's --json report",
    "rocmkit bench models --venv ~/venvs/torch": "needs an install (and minutes): "
    "tests/integration/test_bench_suites.py runs bench models against a venv",
}


def readme_commands() -> list[str]:
    """Every line of the README's ``bash`` blocks, less its comment and extra spaces."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [" ".join(re.split(r"\s{2,}#", line)[0].split()) for line in lines]


@pytest.fixture(scope="module")
def walked() -> list[str]:
    """The README lines scripts/walkthrough.sh ran (and checked: it exits 1 on the first that
    did not do what the README says)."""
    rocmkit_bin = Path(sys.executable).parent / "rocmkit"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMKIT_", "PIP_"))}
    proc = subprocess.run(
        ["bash", str(REPO / "scripts/walkthrough.sh")],
        env={**env, "WALKTHROUGH_ROCMKIT": str(rocmkit_bin)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("walkthrough: ok"), proc.stdout
    return [line.removeprefix("walkthrough: $ ") for line in proc.stdout.splitlines() if line.startswith("walkthrough: $ ")]


def test_the_walkthrough_runs_the_readme_lines_it_names(walked: list[str]) -> None:
    commands = readme_commands()
    # Each line it ran is a README line, as the README has it.
    assert walked and all(line in commands or line in _parts(commands) for line in walked), walked


def _parts(commands: list[str]) -> set[str]:
    # The main line's `&&` steps (the walk-through runs its install step alone).
    return {part.strip() for c in commands for part in c.split("&&")}


def test_every_readme_line_is_run_or_says_why_not(walked: list[str]) -> None:
    commands = readme_commands()
    unaccounted = [c for c in commands if c not in walked and c not in RUN_HERE and c not in NOT_RUN]
    assert not unaccounted, f"run these in scripts/walkthrough.sh or a test, or say why not: {unaccounted}"
    stale = [c for c in (*RUN_HERE, *NOT_RUN) if c not in commands]
    assert not stale, f"no longer in the README: {stale}"
    for why in NOT_RUN.values():
        for path in re.findall(r"tests/[\w/]+\.py|benchmarks/[\w.-]+\.md|scripts/[\w.]+\.sh", why):
            assert (REPO / path).is_file(), path


def test_the_readme_opens_with_the_two_commands() -> None:
    commands = readme_commands()
    assert commands[0].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e . && ")
    assert commands[1] == "bash scripts/test.sh"
    # .ci/run runs exactly the README's test command.
    assert (REPO / ".ci/run").read_text().rstrip().endswith("exec bash scripts/test.sh")


def test_every_figure_the_readme_quotes_is_recorded() -> None:
    """A time or a size in the README is one benchmarks/first-run.md holds, with its source."""
    text = README.read_text()
    figures = re.findall(r"\b\d[\d,.]*\s(?:min \d+ s|min|s|GB|MB)\b", text)
    assert figures, "the README quotes its time and disk figures"
    record = FIRST_RUN.read_text()
    missing = [f for f in figures if f not in record]
    assert not missing, f"figures in README.md that {FIRST_RUN.name} does not record: {missing}"


def test_the_pylock_line_writes_a_lock_or_no_file(
    server: IndexServer,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rocmkit export pylock --output pylock.toml` from the README's setup (uv is a
    dependency: no exit 7); a failed run leaves no pylock.toml, as `> pylock.toml` would. The
    machine and its index are test_lock_exports.py's (a 127.0.0.1 index: nothing is downloaded)."""
    monkeypatch.chdir(tmp_path)
    line = ["export", "pylock", "--output", "pylock.toml"]
    code, out, err = run_main(capsys, *line, *plan_args(server), "--python", PY)
    assert code == 0, err
    assert out == "" and "wrote pylock.toml" in err
    text = (tmp_path / "pylock.toml").read_text()
    assert text.startswith("# rocmkit.plan/1: backend rocm6.2, torch 2.5.1+rocm6.2") and 'lock-version = "1.0"' in text
    (tmp_path / "pylock.toml").unlink()
    dead = [*plan_args(server)[:-1], f"http://127.0.0.1:{closed_port()}/whl"]
    code, out, err = run_main(capsys, *line, *dead, "--python", PY)
    assert code != 0 and out == "" and not (tmp_path / "pylock.toml").exists(), err
    assert last_error(err).startswith("error: ")
