"""The step runner's bookkeeping with a scripted runner (the real runs are in tests/integration)."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rocmkit.errors import DataError, InterruptedStateError, ToolError, UsageError
from rocmkit.proc.runner import CommandResult
from rocmkit.source_build.steps import STATE_FILE, Recipe, Step, read_state, run_recipe


@dataclass
class Scripted:
    """Runs nothing: writes a line to the step's log and answers per step name (argv[1])."""

    fail: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)
    interrupt: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    envs: list[dict[str, str]] = field(default_factory=list)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> CommandResult:
        name = argv[1]
        self.calls.append(name)
        self.envs.append(dict(env or {}))
        if name in self.interrupt:
            raise KeyboardInterrupt
        if name in self.absent:
            return CommandResult(argv=tuple(argv), status="absent", error=f"{argv[0]}: not found")
        assert log_path is not None
        with open(log_path, "a") as fh:
            for i in range(50):
                fh.write(f"{name} line {i}\n")
        if name in self.fail:
            return CommandResult(argv=tuple(argv), status="failed", returncode=1, stdout="boom")
        return CommandResult(argv=tuple(argv), status="ok", returncode=0)


def recipe(tmp_path: Path, names: Sequence[str] = ("a", "b", "c", "d"), extra: str = "") -> Recipe:
    steps = tuple(
        Step(
            name=n,
            title=f"step {n}",
            argv=("tool", n, extra) if extra and n == "c" else ("tool", n),
            env={"S": n},
        )
        for n in names
    )
    return Recipe(title="t", build_dir=str(tmp_path / "b"), wheelhouse=str(tmp_path / "b/wh"), steps=steps)


def test_runs_all_steps_with_one_log_each(tmp_path: Path) -> None:
    r = recipe(tmp_path)
    runner = Scripted()
    out = run_recipe(r, runner=runner, base_env={"BASE": "1", "S": "base"})
    assert out.ran == ("a", "b", "c", "d") and out.skipped == ()
    assert [e["S"] for e in runner.envs] == ["a", "b", "c", "d"]  # the step's env wins
    assert all(e["BASE"] == "1" for e in runner.envs)
    logs = sorted(p.name for p in (tmp_path / "b/logs").iterdir())
    assert logs == ["01-a.log", "02-b.log", "03-c.log", "04-d.log"]
    state = read_state(r.build_dir)
    assert [s.status for s in state.values()] == ["done"] * 4
    assert (tmp_path / "b/wh").is_dir()


def test_failure_shows_the_log_tail_then_resume_skips_done_steps(tmp_path: Path) -> None:
    r = recipe(tmp_path)
    messages: list[str] = []
    with pytest.raises(ToolError) as err:
        run_recipe(r, runner=Scripted(fail={"c"}), base_env={}, echo=messages.append)
    log = tmp_path / "b/logs/03-c.log"
    assert f"log: {log}" in err.value.message
    assert "build step 3/4 (c) failed" in err.value.message
    assert err.value.fix is not None and "resume at c" in err.value.fix
    tail = next(m for m in messages if m.startswith("--- last lines of"))
    assert "c line 49" in tail and "c line 20" in tail and "c line 19" not in tail  # the last 30 lines
    state = read_state(r.build_dir)
    assert {n: s.status for n, s in state.items()} == {"a": "done", "b": "done", "c": "failed"}

    again = Scripted()
    out = run_recipe(r, runner=again, base_env={}, echo=messages.append)
    assert again.calls == ["c", "d"]
    assert out.skipped == ("a", "b") and out.ran == ("c", "d")
    assert log.read_text().count("c line 0\n") == 1  # a re-run starts a fresh log
    # Done means done: a third run runs nothing.
    third = Scripted()
    assert run_recipe(r, runner=third, base_env={}).ran == ()
    assert third.calls == []


def test_changed_plan_reruns_from_the_first_changed_step(tmp_path: Path) -> None:
    run_recipe(recipe(tmp_path), runner=Scripted(), base_env={})
    messages: list[str] = []
    runner = Scripted()
    out = run_recipe(recipe(tmp_path, extra="--flag"), runner=runner, base_env={}, echo=messages.append)
    assert runner.calls == ["c", "d"] and out.skipped == ("a", "b")
    assert any("the plan changed" in m and "c, d" in m for m in messages)


def test_restart_forgets_progress(tmp_path: Path) -> None:
    run_recipe(recipe(tmp_path), runner=Scripted(), base_env={})
    runner = Scripted()
    run_recipe(recipe(tmp_path), runner=runner, base_env={}, restart=True)
    assert runner.calls == ["a", "b", "c", "d"]


def test_interrupt_keeps_state_and_resumes(tmp_path: Path) -> None:
    r = recipe(tmp_path)
    with pytest.raises(InterruptedStateError, match=r"interrupted during step 2/4 \(b\)") as err:
        run_recipe(r, runner=Scripted(interrupt={"b"}), base_env={})
    assert err.value.exit_code == 10
    assert read_state(r.build_dir)["b"].status == "interrupted"
    runner = Scripted()
    run_recipe(r, runner=runner, base_env={})
    assert runner.calls == ["b", "c", "d"]


def test_absent_tool_is_explained_in_the_log(tmp_path: Path) -> None:
    r = recipe(tmp_path)
    with pytest.raises(ToolError, match="`tool` is not installed"):
        run_recipe(r, runner=Scripted(absent={"a"}), base_env={})
    assert "rocmkit: `tool` is not installed" in (tmp_path / "b/logs/01-a.log").read_text()


def test_clean_paths_are_removed_before_a_step_runs(tmp_path: Path) -> None:
    half = tmp_path / "b/src/half-cloned"
    half.mkdir(parents=True)
    (half / "junk").write_text("x")
    step = Step(name="clone", title="clone", argv=("git", "clone"), clean=(str(half),))
    r = Recipe(title="t", build_dir=str(tmp_path / "b"), wheelhouse=str(tmp_path / "b/wh"), steps=(step,))
    seen: list[bool] = []

    def runner(argv: Sequence[str], **kw: object) -> CommandResult:
        seen.append(half.exists())
        return CommandResult(argv=tuple(argv), status="ok", returncode=0)

    run_recipe(r, runner=runner, base_env={})
    assert seen == [False]


def test_corrupt_state_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / STATE_FILE).write_text("{not json")
    with pytest.raises(DataError, match="is unreadable") as err:
        run_recipe(recipe(tmp_path), runner=Scripted(), base_env={})
    assert err.value.fix is not None and "--restart" in err.value.fix
    # --restart does not read the state, so it is the way out.
    assert run_recipe(recipe(tmp_path), runner=Scripted(), base_env={}, restart=True).ran
    (tmp_path / "b" / STATE_FILE).write_text(json.dumps({"schema": "other/1", "steps": []}))
    with pytest.raises(DataError, match="unreadable"):
        read_state(tmp_path / "b")


def test_a_second_build_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    with open(tmp_path / "b/.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        with pytest.raises(UsageError, match="another rocmkit build is running"):
            run_recipe(recipe(tmp_path), runner=Scripted(), base_env={})


def test_duplicate_step_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="duplicate step names: a"):
        recipe(tmp_path, names=("a", "b", "a"))


def test_declared_ok_codes_count_as_done(tmp_path: Path) -> None:
    def runner(argv: Sequence[str], **kw: object) -> CommandResult:
        return CommandResult(argv=tuple(argv), status="failed", returncode=int(argv[1]))

    warn = Step(name="doctor", title="warnings only", argv=("doctor", "2"), ok_codes=(0, 2))
    r = Recipe(title="t", build_dir=str(tmp_path / "b"), wheelhouse=str(tmp_path / "wh"), steps=(warn,))
    assert run_recipe(r, runner=runner, base_env={}).ran == ("doctor",)
    fail = Step(name="doctor", title="a failed check", argv=("doctor", "1"), ok_codes=(0, 2))
    r = Recipe(title="t", build_dir=str(tmp_path / "c"), wheelhouse=str(tmp_path / "wh"), steps=(fail,))
    with pytest.raises(ToolError, match="exited with code 1"):
        run_recipe(r, runner=runner, base_env={})


@pytest.mark.parametrize("target", ["/", "..", "."])
def test_clean_paths_outside_the_build_folder_are_refused(tmp_path: Path, target: str) -> None:
    path = str(tmp_path / "b" / target) if target != "/" else "/"
    step = Step(name="clone", title="clone", argv=("git", "clone"), clean=(path,))
    r = Recipe(title="t", build_dir=str(tmp_path / "b"), wheelhouse=str(tmp_path / "wh"), steps=(step,))
    with pytest.raises(UsageError, match="not inside the build folder"):
        run_recipe(r, runner=Scripted(), base_env={})
    assert tmp_path.exists()


def test_the_status_line_shows_a_steps_last_log_line(tmp_path: Path) -> None:
    """A step's output goes to its log only; its last line (ninja's own progress) is what the
    status line and the heartbeat show, read from the end, colour codes and redraws removed."""
    from rocmkit.source_build.steps import last_log_line

    log = tmp_path / "03-torch.log"
    assert last_log_line(log) is None  # not written yet
    log.write_bytes(b"")
    assert last_log_line(log) is None
    big = b"x" * 100_000 + b"\n"
    log.write_bytes(
        big + b"-- Configuring done\n\x1b[1;32m[12/5678] Building CXX object a.o\x1b[0m\r[13/5678] Building CXX object b.o\n\n"
    )
    assert last_log_line(log) == "[13/5678] Building CXX object b.o"
    log.write_bytes(b"y" * 500 + b"\n")
    assert last_log_line(log, limit=20) == "y" * 17 + "..."


def test_the_log_read_for_the_status_line_is_never_a_fifo_nor_a_link(tmp_path: Path) -> None:
    """The status line's thread reads the log under the ticker's lock, as root on a build folder
    another account may write: a FIFO in its place must not block it (and with it every line
    the command prints), and a symlink must not show the end of another file."""
    import threading

    from rocmkit.source_build.steps import last_log_line

    secret = tmp_path / "secret"
    secret.write_text("root's last line\n")
    link = tmp_path / "04-link.log"
    link.symlink_to(secret)
    assert last_log_line(link) is None
    fifo = tmp_path / "05-fifo.log"
    os.mkfifo(fifo)
    answers: list[str | None] = []
    reader = threading.Thread(target=lambda: answers.append(last_log_line(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=5)
    blocked = reader.is_alive()
    if blocked:  # let the stuck reader go: a writer opening the FIFO ends its open
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=5)
    assert not blocked, "reading a FIFO in the log's place blocked"
    assert answers == [None]
