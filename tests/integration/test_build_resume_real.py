"""The step runner for real, on a tiny source project in a local git repository.

Build, an injected failure in a middle step, resume (earlier steps provably not re-run),
success, the wheel installed into a fresh venv and imported. The recipe is made of the same
Step/Recipe types and run by the same run_recipe as the torch recipe.
"""

from __future__ import annotations

import _thread
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from rocmkit.errors import InterruptedStateError, ToolError
from rocmkit.proc.runner import run
from rocmkit.source_build.script import render_script
from rocmkit.source_build.steps import STATE_FILE, Recipe, Step, read_state, run_recipe

pytestmark = pytest.mark.integration

PY = sys.executable
QUIET_PIP = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def git(*args: str, cwd: Path) -> None:
    result = run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, timeout=60)
    assert result.ok, result.describe()


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    """A pyproject package built by setuptools (in the venv already: nothing is downloaded)."""
    repo = tmp_path / "tinypkg-repo"
    (repo / "tinypkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tinypkg"\nversion = "0.3.0"\n\n'
        '[tool.setuptools]\npackages = ["tinypkg"]\n'
    )
    (repo / "tinypkg" / "__init__.py").write_text("VALUE = 42\n")
    git("init", "--quiet", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "--quiet", "-m", "tinypkg 0.3.0", cwd=repo)
    return repo


RECORD = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"
CHECK = (
    "import os, sys; open(sys.argv[1], 'a').write('check\\n'); print('checking tinypkg sources');"
    "print('TINY_FAIL is set: failing on purpose') if os.environ.get('TINY_FAIL') == '1' else None;"
    "sys.exit(1 if os.environ.get('TINY_FAIL') == '1' else 0)"
)


def tiny_recipe(build: Path, repo: Path, wheel_flags: tuple[str, ...] = ()) -> Recipe:
    src = build / "src" / "tinypkg"
    wheelhouse = build / "wheelhouse"
    venv = build / "venv"
    venv_py = venv / "bin" / "python"
    counts = build / "counts.txt"
    steps = (
        Step(
            name="source",
            title="clone the source at its tag",
            argv=("git", "clone", "--depth", "1", repo.as_uri(), str(src)),
            cwd=str(build),
            clean=(str(src),),
            timeout_s=60,
        ),
        Step(name="prepare", title="record a run", argv=(PY, "-c", RECORD, str(counts), "prepare"), timeout_s=60),
        Step(name="check", title="a step that fails on request", argv=(PY, "-c", CHECK, str(counts)), timeout_s=60),
        Step(
            name="wheel",
            title="build the wheel",
            argv=(PY, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", *wheel_flags, "-w", str(wheelhouse), str(src)),
            cwd=str(src),
            env=dict(QUIET_PIP),
            timeout_s=300,
        ),
        Step(
            name="venv",
            title="a fresh venv to receive it",
            argv=(PY, "-m", "venv", "--without-pip", str(venv)),
            clean=(str(venv),),
            timeout_s=120,
        ),
        Step(
            name="install",
            title="install from the wheelhouse only",
            argv=(PY, "-m", "pip", "--python", str(venv_py), "install", "--no-index", "--find-links", str(wheelhouse), "tinypkg==0.3.0"),
            env=dict(QUIET_PIP),
            timeout_s=300,
        ),
        Step(
            name="import",
            title="import it from the venv",
            argv=(str(venv_py), "-c", "import tinypkg; assert tinypkg.VALUE == 42; print('imported', tinypkg.__file__)"),
            timeout_s=60,
        ),
    )  # fmt: skip
    return Recipe(title="tinypkg 0.3.0", build_dir=str(build), wheelhouse=str(wheelhouse), steps=steps)


def test_build_fail_resume_install_import(tmp_path: Path, tiny_repo: Path) -> None:
    build = tmp_path / "build"
    recipe = tiny_recipe(build, tiny_repo)
    messages: list[str] = []

    # 1. An injected failure in a middle step.
    with pytest.raises(ToolError) as err:
        run_recipe(recipe, base_env={**os.environ, "TINY_FAIL": "1"}, echo=messages.append)
    check_log = build / "logs" / "03-check.log"
    assert f"log: {check_log}" in err.value.message
    assert "exited with code 1" in err.value.message
    tail = next(m for m in messages if m.startswith("--- last lines of"))
    assert "TINY_FAIL is set: failing on purpose" in tail
    state = json.loads((build / STATE_FILE).read_text())
    assert [(s["name"], s["status"]) for s in state["steps"]] == [
        ("source", "done"),
        ("prepare", "done"),
        ("check", "failed"),
    ]
    assert not list((build / "wheelhouse").glob("*.whl"))
    source_log = build / "logs" / "01-source.log"
    source_log_stat = source_log.stat()
    clone_head = (build / "src/tinypkg/.git/HEAD").stat()

    # 2. Resume: the first two steps are not run again, the failed one and the rest are.
    outcome = run_recipe(recipe, base_env=dict(os.environ), echo=messages.append)
    assert outcome.skipped == ("source", "prepare")
    assert outcome.ran == ("check", "wheel", "venv", "install", "import")
    assert (build / "counts.txt").read_text() == "prepare\ncheck\ncheck\n"  # prepare ran once
    assert source_log.stat().st_mtime_ns == source_log_stat.st_mtime_ns  # its log untouched
    assert (build / "src/tinypkg/.git/HEAD").stat().st_ino == clone_head.st_ino  # not re-cloned

    # 3. The wheel landed in the wheelhouse and was installed into the venv and imported from it.
    wheels = [p.name for p in (build / "wheelhouse").glob("*.whl")]
    assert wheels == ["tinypkg-0.3.0-py3-none-any.whl"]
    import_log = (build / "logs" / "07-import.log").read_text()
    assert "imported " + str(build / "venv") in import_log
    assert all(r.status == "done" for r in read_state(build).values())

    # 4. A changed plan re-runs from the changed step on; the unchanged prefix stays done.
    changed = tiny_recipe(build, tiny_repo, wheel_flags=("--no-cache-dir",))
    outcome = run_recipe(changed, base_env=dict(os.environ), echo=messages.append)
    assert outcome.skipped == ("source", "prepare", "check")
    assert outcome.ran == ("wheel", "venv", "install", "import")
    assert (build / "counts.txt").read_text() == "prepare\ncheck\ncheck\n"


def test_the_rendered_script_builds_the_same_thing(tmp_path: Path, tiny_repo: Path) -> None:
    build = tmp_path / "scripted build"
    recipe = tiny_recipe(build, tiny_repo)
    script = tmp_path / "build.sh"
    script.write_text(render_script(recipe))
    failed = run(["bash", str(script)], env={**os.environ, "TINY_FAIL": "1"}, timeout=300)
    assert failed.returncode == 1  # set -e stops at the failing step
    assert not list((build / "wheelhouse").glob("*.whl"))
    done = run(["bash", str(script)], timeout=600)
    assert done.ok, done.stdout + done.stderr
    assert "imported " + str(build / "venv") in done.stdout
    assert f"done: wheels in {build / 'wheelhouse'}" in done.stdout


SLOW = (
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); print('started', flush=True);"
    "time.sleep(120 if os.environ.get('TINY_SLOW') == '1' else 0); open(sys.argv[1] + '.slept', 'w').close()"
)


def test_ctrl_c_stops_the_running_step_and_the_build_resumes(tmp_path: Path) -> None:
    build = tmp_path / "build"
    pidfile = tmp_path / "pid"
    steps = (
        Step(name="first", title="quick", argv=(PY, "-c", "print('first')"), timeout_s=60),
        Step(name="slow", title="sleeps when asked", argv=(PY, "-c", SLOW, str(pidfile)), timeout_s=300),
        Step(name="last", title="quick", argv=(PY, "-c", "print('last')"), timeout_s=60),
    )
    recipe = Recipe(title="interrupt", build_dir=str(build), wheelhouse=str(build / "wh"), steps=steps)

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        _thread.interrupt_main()

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    with pytest.raises(InterruptedStateError, match=r"interrupted during step 2/3 \(slow\)"):
        run_recipe(recipe, base_env={**os.environ, "TINY_SLOW": "1"})
    presser.join()
    assert not Path(f"{pidfile}.slept").exists()  # stopped mid-sleep, not waited for
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the step's process was stopped, not left running in the background
    assert read_state(build)["slow"].status == "interrupted"

    outcome = run_recipe(recipe, base_env=dict(os.environ))
    assert outcome.skipped == ("first",) and outcome.ran == ("slow", "last")


def test_a_long_step_is_never_silent_and_shows_its_logs_last_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a terminal (as here), a running step gets a heartbeat line naming what its log last
    said; the step's own output still goes only to its log."""
    from rocmkit.source_build import steps as steps_mod

    monkeypatch.setattr(steps_mod, "BUILD_HEARTBEAT_S", 0.3)
    build = tmp_path / "build"
    heard = tmp_path / "heard"
    # Counted, not timed: after its first line the step waits until a heartbeat has named that
    # line (the echo below leaves a file), however loaded the machine; 50 s only bounds a failure.
    work = (
        "import pathlib, sys, time\n"
        f"heard = pathlib.Path({str(heard)!r})\n"
        "for i in range(1, 4):\n"
        "    print(f'[{i}/3] Building CXX object o{i}.o', flush=True)\n"
        "    end = time.monotonic() + 50\n"
        "    while i == 1 and not heard.exists() and time.monotonic() < end:\n"
        "        time.sleep(0.05)\n"
    )
    recipe = Recipe(
        title="heartbeat",
        build_dir=str(build),
        wheelhouse=str(build / "wh"),
        steps=(Step(name="compile", title="compile three objects", argv=(PY, "-c", work), timeout_s=60),),
    )
    messages: list[str] = []

    def echo(message: str) -> None:
        messages.append(message)
        if "still running" in message and "Building CXX object o" in message:
            heard.touch()

    outcome = run_recipe(recipe, base_env=dict(os.environ), echo=echo)
    assert outcome.ran == ("compile",)
    beats = [m for m in messages if "still running" in m]
    assert beats and all(m.startswith("rocmkit: [1/1] compile: still running (") for m in beats), messages
    assert any("Building CXX object o" in m for m in beats), beats
    assert not any(m.startswith("[2/3]") for m in messages)  # the output itself stays in the log
