"""Children answer in their result file (:func:`rocmkit.pyenv.run_json`), not on stdout.

torch, Triton, site hooks and wrappers print freely, before and after a child's answer,
and some of what they print looks like JSON. Each interpreter here is a wrapper script
around this Python that prints such text around the real run, the way a noisy
``sitecustomize`` or an ``atexit`` hook would; a second kind then overwrites the result
file with damaged JSON, which must be one error line, never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.errors import ToolError
from rocmkit.install.state import snapshot
from rocmkit.install.verify import verify
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import Inline, PyEnv, probe, run_json
from rocmkit.source_build.wheelhouse import plan_for

# What a noisy child prints: JSON that answers the wrong thing, and text that is no JSON.
BEFORE = '{"torch": "0.0-wrong", "version": "0.0-wrong", "hip": "9.9"}\n[{"name": "before"}]'
AFTER = '{"torch": "6.6.6", "prefix": "/evil"}\n[{"name": "after"}]\nnot json {'

FAKE_TORCH = """
import atexit
__version__ = "2.5.1+rocm6.2"
class version:
    hip = "6.2.41134-65d174c3e"
    cuda = None
print('{"torch": "import-time-noise", "version": "0.0"}')
atexit.register(print, '{"torch": "exit-time-noise"}')
"""


def _interpreter(tmp_path: Path, *, damage: str | None = None, fake_torch: bool = False) -> Path:
    """A wrapper around this Python: noise on stdout around the run, an optional fake torch
    first on the path, and optionally a damaged result file written after the child."""
    path = ""
    if fake_torch:
        pkg = tmp_path / "fake" / "torch"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(FAKE_TORCH)
        path = str(tmp_path / "fake")
    script = tmp_path / "python"
    lines = ["#!/bin/sh", f"printf '%s\\n' '{BEFORE}'"]
    if path:
        lines.append(f"export PYTHONPATH={path}")
    lines += [f'{sys.executable} "$@"', "rc=$?", f"printf '%s\\n' '{AFTER}'"]
    if damage is not None:
        (tmp_path / "damage.txt").write_text(damage)
        lines.append(f'cat {tmp_path / "damage.txt"} > "$ROCMKIT_RESULT_FILE"')
    lines.append("exit $rc")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def _env(python: Path, site: Path) -> PyEnv:
    return PyEnv(
        executable=python,
        version="3.11.7",
        prefix=site.parent,
        venv=site.parent,
        purelib=site,
        platlib=site,
        stdlib=site, include=site,
    )


def test_run_json_reads_the_file_whatever_stdout_says(tmp_path: Path) -> None:
    code = (
        "print('{\"answer\": 1}')\nwrite_result({'answer': 42, 'path': __import__('pathlib').Path('/x')})\n"
    )
    ran = run_json(_interpreter(tmp_path), Inline(code), timeout=60)
    assert ran.proc.ok and ran.data == {"answer": 42, "path": "/x"} and ran.error is None
    assert '"answer": 1' in ran.proc.stdout and "not json {" in ran.proc.stdout


def test_the_probe_ignores_noise_and_keeps_the_name_it_was_given(tmp_path: Path) -> None:
    python = _interpreter(tmp_path)
    env = probe(python)
    assert env.executable == python  # as named, not the interpreter the wrapper runs
    assert env.prefix == Path(sys.prefix) and env.version.count(".") == 2
    assert str(env.prefix) != "/evil"


def test_install_verify_reads_the_childs_file_not_its_stdout(tmp_path: Path) -> None:
    target = _env(_interpreter(tmp_path, fake_torch=True), tmp_path / "site")
    checked = verify(target, Plan(backend=Backend.parse("rocm6.2"), torch_version="2.5.1+rocm6.2"), timeout=60)
    assert checked.ok, checked.problems
    assert checked.facts["torch"] == "2.5.1+rocm6.2" and checked.facts["hip"] == "6.2.41134-65d174c3e"


def test_install_snapshot_reads_the_childs_file_not_its_stdout(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "demo_pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("demo_pkg/__init__.py,sha256=x,1\n")
    state = snapshot(_env(_interpreter(tmp_path), site))
    assert list(state.dists) == ["demo-pkg"]
    assert state.dists["demo-pkg"].version == "1.0" and state.dists["demo-pkg"].has_record


def test_the_wheelhouse_plan_reads_the_childs_file_not_its_stdout(tmp_path: Path) -> None:
    python = _interpreter(tmp_path, fake_torch=True)
    plan = plan_for(str(python), {"torch": "2.5.1+rocm6.2", "triton": "3.1.0"}, ("gfx1031",))
    assert plan is not None
    assert (plan.backend.tag, plan.torch_version, plan.triton) == ("rocm6.2", "2.5.1+rocm6.2", "triton==3.1.0")


DAMAGE = {
    "torn": ('{"torch": "2.5.1+rocm6.2", "hi', "is not valid JSON"),
    "deep": ("[" * 100_000, "nests deeper than 64 levels"),
    "nan": ('{"torch": NaN}', "not a number rocmkit accepts"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_result_file_is_one_clear_error(tmp_path: Path, kind: str) -> None:
    text, why = DAMAGE[kind]
    python = _interpreter(tmp_path, damage=text, fake_torch=True)
    target = _env(python, tmp_path / "site")
    ran = run_json(python, Inline("write_result({'fine': True})\n"), timeout=60)
    assert ran.data is None and ran.error is not None and why in ran.error
    checked = verify(target, Plan(backend=Backend.parse("rocm6.2"), torch_version="2.5.1+rocm6.2"), timeout=60)
    assert not checked.ok and len(checked.problems) == 1 and why in checked.problems[0]
    with pytest.raises(ToolError, match="gave no distribution list") as err:
        snapshot(target)
    assert why in err.value.message
    with pytest.raises(ToolError, match="printed no environment description") as err:
        probe(python)
    assert why in err.value.message and "\n" not in err.value.one_line()
    assert plan_for(str(python), {"torch": "2.5.1+rocm6.2"}, ("gfx1031",)) is None


def test_a_damaged_probe_answer_is_one_line_from_the_cli(tmp_path: Path) -> None:
    python = _interpreter(tmp_path, damage="[" * 100_000)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", "--python", str(python), "--level", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "cannot run the Python to check" in lines[0] and "nests deeper" in lines[0]
