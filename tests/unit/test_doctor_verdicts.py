"""A verdict of the software stack (doctor/verdicts.py): computed once, reused while the stack
stays, said to be reused and from when, looked at again with --fresh, never read from a folder
another user can write."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rocmkit.doctor import verdicts
from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.doctor.run import run_checks
from rocmkit.machine import Gpu, Machine, RocmInfo
from rocmkit.pyenv import this_python


class Counted:
    """A check that says how often it really ran, with the status it is told to give."""

    def __init__(self, status: Status = Status.PASS) -> None:
        self.calls = 0
        self.status = status

    def __call__(self, ctx: CheckContext) -> CheckResult:
        self.calls += 1
        return CheckResult(name="compile.sound", level=2, status=self.status, message="trains like eager")


def _check(func: Counted) -> Check:
    return Check(
        name="compile.sound", level=2, description="", func=func, module=__name__, stack_verdict=True
    )


def _ctx(tmp_path: Path, **kw: object) -> CheckContext:
    machine = Machine(
        gpus=(Gpu(vendor="amd", index=0, arch="gfx90a", name="MI210"),),
        rocm=RocmInfo(version="6.2.4", driver_version="6.8.5"),
    )
    base = CheckContext(machine=machine, backend="rocm", cache_dir=tmp_path / "cache", level=2)
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def test_a_pass_is_computed_once_then_reused_and_says_from_when(tmp_path: Path) -> None:
    func = Counted()
    chk = _check(func)
    first = run_checks([chk], _ctx(tmp_path))
    assert func.calls == 1 and first[0].status is Status.PASS and "reused" not in first[0].message
    again = run_checks([chk], _ctx(tmp_path))
    assert func.calls == 1  # not run again
    (r,) = again
    assert r.status is Status.PASS and r.duration_s == 0.0
    assert r.message.startswith("trains like eager [verdict reused from 20")
    assert "--fresh reruns it" in r.message and r.details["reused_from"].endswith("Z")
    # --fresh looks again (and stores what it found).
    run_checks([chk], _ctx(tmp_path, fresh=True))
    assert func.calls == 2


def test_another_stack_is_another_verdict(tmp_path: Path) -> None:
    func = Counted()
    chk = _check(func)
    py = this_python()
    key = verdicts.stack_key(chk, _ctx(tmp_path), py)
    assert key == verdicts.stack_key(chk, _ctx(tmp_path), py)
    other_gpu = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx942", name="MI300X"),))
    others = [
        _ctx(tmp_path, machine=other_gpu),
        _ctx(tmp_path, env={"TORCHINDUCTOR_MAX_AUTOTUNE": "1"}),
        _ctx(tmp_path, env={"HSA_OVERRIDE_GFX_VERSION": "9.4.2"}),
        _ctx(tmp_path, level=3),
        _ctx(tmp_path, options={"compile.steps": 3}),
        _ctx(tmp_path, machine=dataclasses.replace(_ctx(tmp_path).machine, rocm=RocmInfo(driver_version="6.10"))),
    ]
    keys = {verdicts.stack_key(chk, c, py) for c in others}
    assert key not in keys and len(keys) == len(others)
    # Where the compiled code is kept is not the stack; another torch is.
    assert verdicts.stack_key(chk, _ctx(tmp_path, env={"TRITON_CACHE_DIR": "/elsewhere"}), py) == key
    newer = dataclasses.replace(py, dists={**py.dists, "torch": "9.9.9"})
    assert verdicts.stack_key(chk, _ctx(tmp_path), newer) != key


def test_only_a_pass_is_kept(tmp_path: Path) -> None:
    for status in (Status.FAIL, Status.WARN, Status.ERROR):
        func = Counted(status)
        chk = _check(func)
        run_checks([chk], _ctx(tmp_path))
        run_checks([chk], _ctx(tmp_path))
        assert func.calls == 2, status


def test_a_verdict_in_a_folder_others_can_write_is_never_read(tmp_path: Path) -> None:
    func = Counted()
    chk = _check(func)
    run_checks([chk], _ctx(tmp_path))
    folder = tmp_path / "cache" / verdicts.FOLDER
    assert [p.stat().st_mode & 0o777 for p in folder.iterdir()] == [0o600]
    os.chmod(folder, 0o777)  # another user could have put a "pass" here
    run_checks([chk], _ctx(tmp_path))
    assert func.calls == 2
    # A damaged entry is a miss, not a crash.
    os.chmod(folder, 0o700)
    for entry in folder.iterdir():
        entry.write_text("{not json")
    run_checks([chk], _ctx(tmp_path))
    assert func.calls == 3
