"""Selection, needs and in-process running, without any child process."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor import run as doctor_run
from rocmkit.doctor.registry import Check, CheckContext, CheckFunc
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.doctor.run import Discovery, RunOptions, discover, doctor, host_id, missing_need, select
from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, Machine


def _fn(status: Status):  # type: ignore[no-untyped-def]
    def run(ctx: CheckContext) -> CheckResult:
        return CheckResult(name="", level=0, status=status, message=status.value)

    return run


def _boom(ctx: CheckContext) -> CheckResult:
    raise KeyError("missing fact")


def _chk(name: str, level: int = 0, status: Status = Status.PASS, **kw: object) -> Check:
    return Check(name=name, level=level, description=name, func=_fn(status), module=__name__, **kw)  # type: ignore[arg-type]


CHECKS = {
    c.name: c
    for c in (
        _chk("env.a"),
        _chk("env.b", 1),
        _chk("triton.vector_add", 2),
        _chk("triton.matmul", 2),
        _chk("models.resnet", 3),
        _chk("torch.import", 1, needs=frozenset({"torch"}), isolated=True),
    )
}


def test_level_selects_at_or_below_in_level_order() -> None:
    assert [c.name for c in select(CHECKS, level=0)] == ["env.a"]
    assert [c.name for c in select(CHECKS, level=1)] == ["env.a", "env.b", "torch.import"]
    assert len(select(CHECKS, level=3)) == len(CHECKS)


def test_only_by_name_group_and_glob_ignores_level_and_skip_removes() -> None:
    assert [c.name for c in select(CHECKS, level=0, only=("triton.matmul",))] == ["triton.matmul"]
    assert [c.name for c in select(CHECKS, level=0, only=("triton",))] == [
        "triton.vector_add",
        "triton.matmul",
    ]
    assert [c.name for c in select(CHECKS, level=0, only=("t*.v*",))] == ["triton.vector_add"]
    assert [c.name for c in select(CHECKS, level=3, skip=("triton", "models.resnet"))] == [
        "env.a",
        "env.b",
        "torch.import",
    ]


def test_unknown_names_and_levels_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="no doctor check matches 'nope'"):
        select(CHECKS, only=("nope",))
    with pytest.raises(UsageError, match="no doctor check matches"):
        select(CHECKS, skip=("env.z",))
    with pytest.raises(UsageError, match="--level must be 0 to 3"):
        select(CHECKS, level=7)


def test_needs_become_skips_with_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path)
    gpu_check = _chk("kern.x", needs=frozenset({"gpu"}))
    why = missing_need(gpu_check, cpu)
    assert why is not None and "needs a GPU" in why[0]
    rocm = CheckContext(
        machine=Machine(gpus=(Gpu(vendor="amd", index=0),)), backend="rocm", cache_dir=tmp_path
    )
    assert missing_need(gpu_check, rocm) is None
    absent = _chk("x.y", needs=frozenset({"transformers"}))
    # The test extra installs transformers (the HF bench suite's test needs it): make it absent here.
    monkeypatch.setattr(doctor_run, "_installed", lambda name: name != "transformers")
    why = missing_need(absent, cpu)
    assert why is not None and "transformers" in why[0] and "pip install transformers" in why[1]
    capture = CheckContext(machine=Machine(source="capture:/x"), cache_dir=tmp_path)
    why = missing_need(CHECKS["torch.import"], capture)
    assert why is not None and "live machine" in why[0]
    assert missing_need(_chk("live.thing", needs=frozenset({"live"})), capture) is not None
    assert missing_need(CHECKS["env.a"], capture) is None


def test_in_process_exception_is_an_error_result_and_others_run(tmp_path: Path) -> None:
    checks = {
        "a.ok": _chk("a.ok"),
        "a.boom": Check(name="a.boom", level=0, description="", func=_boom, module=__name__),
        "a.warn": _chk("a.warn", status=Status.WARN),
    }
    seen: list[str] = []
    report = doctor(
        Machine(),
        RunOptions(level=0),
        cache_dir=tmp_path,
        checks=Discovery(checks=checks),
        on_start=lambda c: seen.append(c.name),
    )
    assert seen == ["a.ok", "a.boom", "a.warn"]
    by = {r.name: r for r in report.results}
    assert by["a.boom"].status is Status.ERROR
    assert by["a.boom"].message == "raised KeyError: 'missing fact'"
    assert by["a.ok"].name == "a.ok" and by["a.ok"].backend == "cpu"  # filled in from the check
    assert report.exit_code == 3
    assert report.versions["rocmkit"]


def test_broken_check_module_is_reported_not_fatal(tmp_path: Path) -> None:
    bad = tmp_path / "rk_broken_checks.py"
    bad.write_text("raise RuntimeError('half-written module')\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        found = discover(("rk_broken_checks", "rk_module_that_does_not_exist"))
    finally:
        sys.path.remove(str(tmp_path))
    (err,) = found.broken
    assert err.status is Status.ERROR and "half-written module" in err.message
    assert found.checks == {}


def test_host_id_is_stable_and_hides_the_machine_id() -> None:
    files = {"/etc/machine-id": "0123456789abcdef\n"}
    a = host_id("node7", files.get)
    assert a == host_id("node7", files.get)
    assert a.startswith("node7-") and "0123456789abcdef" not in a
    no_files: dict[str, str] = {}
    assert a != host_id("node7", no_files.get)


def _interrupt(ctx: CheckContext) -> CheckResult:
    raise KeyboardInterrupt


def test_ctrl_c_keeps_a_partial_honest_report(tmp_path: Path) -> None:
    checks = {
        "a.ok": _chk("a.ok"),
        "a.stop": Check(name="a.stop", level=0, description="", func=_interrupt, module=__name__),
        "a.later": _chk("a.later"),
    }
    report = doctor(Machine(), RunOptions(level=0), cache_dir=tmp_path, checks=Discovery(checks=checks))
    got = [(r.name, r.status, r.message) for r in report.results]
    assert got == [
        ("a.ok", Status.PASS, "pass"),
        ("a.stop", Status.ERROR, "interrupted (Ctrl-C) while running"),
        ("a.later", Status.SKIP, "not run: the doctor was interrupted"),
    ]
    assert report.exit_code == 3


def test_a_broken_torch_import_skips_later_torch_checks_once(tmp_path: Path) -> None:
    torch_needs = frozenset({"torch"})
    checks = {
        "torch.import": _chk("torch.import", status=Status.FAIL),
        "torch.build": _chk("torch.build", needs=torch_needs),
        "env.x": _chk("env.x"),
    }
    ctx = CheckContext(machine=Machine(), cache_dir=tmp_path)
    import importlib.util

    from rocmkit.doctor.run import run_checks

    if importlib.util.find_spec("torch") is None:  # the need itself must be met for the gate to matter
        pytest.skip("torch is not installed")
    out = {r.name: r for r in run_checks(checks.values(), ctx)}
    assert out["torch.build"].status is Status.SKIP
    assert out["torch.build"].message == "not run: torch.import failed on this node"
    assert out["env.x"].status is Status.PASS


class _Activity:
    """Which checks are running right now, as each check sees it on entry."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.active: set[str] = set()
        self.seen: dict[str, set[str]] = {}
        self.events = {n: threading.Event() for n in ("par.a", "par.b")}

    def check(self, name: str, needs: frozenset[str] = frozenset(), exclusive: bool = False) -> Check:
        def func(ctx: CheckContext) -> CheckResult:
            with self.lock:
                self.seen[name] = set(self.active)
                self.active.add(name)
            try:
                if name in self.events:  # a and b each wait for the other: only concurrency passes
                    self.events[name].set()
                    other = self.events["par.b" if name == "par.a" else "par.a"]
                    ok = other.wait(30)
                    return CheckResult(status=Status.PASS if ok else Status.FAIL, message="met")
                import time

                time.sleep(0.05)  # a window in which an overlap would be seen
                return CheckResult(status=Status.PASS, message="ran")
            finally:
                with self.lock:
                    self.active.discard(name)

        return Check(
            name=name, level=0, description="", func=func, module=__name__, needs=needs, exclusive=exclusive
        )


def test_checks_run_concurrently_gpu_ones_one_at_a_time_and_the_order_holds(tmp_path: Path) -> None:
    from rocmkit.doctor.run import run_checks

    act = _Activity()
    gpu = frozenset({"gpu"})
    checks = [
        act.check("par.gpu1", gpu),
        act.check("par.a"),
        act.check("par.gpu2", gpu),
        act.check("par.b"),
        act.check("par.excl", exclusive=True),
        act.check("par.after"),
    ]
    ctx = CheckContext(machine=Machine(), backend="rocm", cache_dir=tmp_path)
    emitted: list[str] = []
    out = run_checks(checks, ctx, jobs=2, on_result=lambda c, rs: emitted.extend(r.name for r in rs))
    names = [c.name for c in checks]
    assert [r.name for r in out] == names == emitted
    assert all(r.status is Status.PASS for r in out), [(r.name, r.message) for r in out]
    assert "par.gpu1" not in act.seen["par.gpu2"]  # one GPU check at a time
    assert act.seen["par.excl"] == set()  # alone
    assert "par.excl" not in act.seen["par.after"]


def test_a_long_running_check_is_offered_a_slot_first_but_reported_in_order(tmp_path: Path) -> None:
    """A real compile that outlasts the rest starts as soon as it may, so the short checks run
    beside it instead of leaving it alone at the end, even ahead of an exclusive check, which
    runs alone once the compile has ended. (The order is the scheduler's, read from its
    on_start hook, not from threads racing.)"""
    from rocmkit.doctor.run import run_checks

    def check(name: str, **kw: object) -> Check:
        return Check(name=name, level=0, description="", func=_fn(Status.PASS), module=__name__, **kw)  # type: ignore[arg-type]

    started: list[str] = []
    checks = [check("s.a"), check("s.b"), check("s.c"), check("s.compile", long_running=True)]
    ctx = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path)
    out = run_checks(checks, ctx, jobs=2, on_start=lambda c: started.append(c.name))
    assert started[0] == "s.compile"
    assert [r.name for r in out] == ["s.a", "s.b", "s.c", "s.compile"]  # the report's order holds

    # An exclusive check ahead of the compile waits for it, and the checks after the exclusive
    # one run beside the compile meanwhile: the compile ends only once s.b has run beside it.
    import threading

    active: set[str] = set()
    seen: dict[str, set[str]] = {}
    b_ran = threading.Event()

    def tracked(name: str, wait_for_b: bool = False) -> CheckFunc:
        def run(ctx: CheckContext) -> CheckResult:
            seen[name] = set(active)
            active.add(name)
            try:
                ok = b_ran.wait(30) if wait_for_b else True
                if name == "s.b":
                    b_ran.set()
                return CheckResult(status=Status.PASS if ok else Status.FAIL, message=name)
            finally:
                active.discard(name)

        return run

    started.clear()
    fenced = [
        Check(name="s.a", level=0, description="", func=tracked("s.a"), module=__name__),
        Check(name="s.excl", level=0, description="", func=tracked("s.excl"), module=__name__, exclusive=True),
        Check(name="s.b", level=0, description="", func=tracked("s.b"), module=__name__),
        Check(name="s.compile", level=0, description="", func=tracked("s.compile", wait_for_b=True),
              module=__name__, long_running=True),
    ]
    out = run_checks(fenced, ctx, jobs=2, on_start=lambda c: started.append(c.name))
    assert all(r.status is Status.PASS for r in out), [(r.name, r.message) for r in out]
    assert started[0] == "s.compile" and started[-1] == "s.excl"
    assert seen["s.excl"] == set()  # still alone
    assert [r.name for r in out] == ["s.a", "s.excl", "s.b", "s.compile"]
