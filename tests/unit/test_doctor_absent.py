"""torch or Triton missing from the checked Python: a finding from level 1 on, never a quiet PASS."""

from __future__ import annotations

from pathlib import Path

from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.reporters import text
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.doctor.run import run_checks
from rocmkit.machine import Machine
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import PyEnv


def _never(ctx: CheckContext) -> CheckResult:
    raise AssertionError("a check whose package is missing must not run")


def _chk(name: str, level: int, *needs: str) -> Check:
    return Check(
        name=name,
        level=level,
        description=name,
        func=_never,
        module=__name__,
        needs=frozenset(needs),
        isolated=True,
    )


CHECKS = [
    _chk("triton.packages", 0, "live"),
    _chk("torch.import", 1, "torch"),
    _chk("torch.build", 1, "torch"),
    _chk("triton.import", 1, "triton"),
    _chk("triton.vector_add", 2, "torch", "triton"),
]


def _py(*, torch: bool, triton: bool, venv: str | None = "/v", requires: tuple[str, ...] = ()) -> PyEnv:
    prefix = Path(venv or "/usr")
    return PyEnv(
        executable=prefix / "bin/python",
        version="3.11.0",
        prefix=prefix,
        purelib=prefix / "lib/python3.11/site-packages",
        platlib=prefix / "lib/python3.11/site-packages",
        stdlib=Path("/usr/lib/python3.11"), include=Path("/usr/lib/python3.11"),
        modules={"torch": torch, "triton": triton},
        dists={"torch": "2.5.1" if torch else None},
        own=False,
        venv=None if venv is None else Path(venv),
        torch_requires=requires,
    )


def _run(python: PyEnv, level: int, tmp_path: Path, **ctx: object) -> dict[str, CheckResult]:
    context = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path, **ctx)  # type: ignore[arg-type]
    # triton.packages (needs only "live") would start a child; leave it out here.
    return {r.name: r for r in run_checks(CHECKS[1:], context, python=python, level=level)}


def test_no_torch_at_level_1_fails_torch_import_with_the_install_command(tmp_path: Path) -> None:
    by = _run(_py(torch=False, triton=False, venv="/home/u/my venv"), 1, tmp_path)
    r = by["torch.import"]
    assert r.status is Status.FAIL
    assert "torch is not installed in /home/u/my venv/bin/python" in r.message
    assert r.remedy is not None
    assert "rocmkit install --venv '/home/u/my venv'" in r.remedy and "rocmkit resolve" in r.remedy
    # The checks that need torch stay skipped, each with the reason.
    for name in ("torch.build", "triton.vector_add"):
        assert by[name].status is Status.SKIP and "needs torch" in by[name].message
        assert by[name].details == {"missing": "torch"}
    assert by["triton.import"].status is Status.SKIP
    report = _report(list(by.values()), 1)
    assert report.exit_code == 1


def test_no_torch_at_level_0_and_on_captures_stays_skip(tmp_path: Path) -> None:
    by = _run(_py(torch=False, triton=False), 0, tmp_path)
    assert by["torch.import"].status is Status.SKIP
    assert by["torch.import"].details == {"missing": "torch"}
    capture = CheckContext(machine=Machine(source="capture:/x"), cache_dir=tmp_path)
    (r,) = run_checks([CHECKS[1]], capture, python=_py(torch=False, triton=False), level=1)
    assert r.status is Status.SKIP and "live machine" in r.message


def test_a_python_outside_any_venv_gets_the_interpreter_form(tmp_path: Path) -> None:
    by = _run(_py(torch=False, triton=False, venv=None), 1, tmp_path)
    assert by["torch.import"].remedy is not None
    assert "rocmkit install --interpreter /usr/bin/python" in by["torch.import"].remedy


def test_torch_without_triton_warns_with_the_pinned_triton(tmp_path: Path) -> None:
    pins = ("filelock", "pytorch-triton-rocm==3.1.0; platform_system == 'Linux'")
    plan = Plan(backend=Backend.parse("rocm6.2"), index_urls=("https://download.pytorch.org/whl/rocm6.2",))
    by = _run(_py(torch=True, triton=False, requires=pins), 1, tmp_path, plan=plan)
    r = by["triton.import"]
    assert r.status is Status.WARN, r
    assert r.remedy is not None
    assert "/v/bin/python -m pip install 'pytorch-triton-rocm==3.1.0'" in r.remedy
    assert "--index-url https://download.pytorch.org/whl/rocm6.2" in r.remedy
    assert by["triton.vector_add"].status is Status.SKIP
    assert _report(list(by.values()), 1).exit_code != 1


def test_cpu_torch_without_triton_suggests_plain_triton(tmp_path: Path) -> None:
    by = _run(_py(torch=True, triton=False, requires=("filelock", "sympy>=1.13")), 1, tmp_path)
    r = by["triton.import"]
    assert r.status is Status.WARN and r.remedy is not None
    assert "/v/bin/python -m pip install triton" in r.remedy and "TRITON_INTERPRET=1" in r.remedy


def _report(results: list[CheckResult], level: int) -> Report:
    return Report(
        machine={},
        plan=None,
        results=tuple(results),
        versions={},
        started_at="t",
        finished_at="t",
        host_id="h",
        hostname="h",
        level=level,
    )


def _res(name: str, status: Status, **details: object) -> CheckResult:
    return CheckResult(name=name, level=0, status=status, message="m", remedy="`fix it`", details=details)


def test_the_verdict_line_counts_and_never_says_every_check_passed() -> None:
    results = [_res(f"p{i}", Status.PASS) for i in range(5)] + [_res(f"s{i}", Status.SKIP) for i in range(17)]
    out = text.render(_report(results, 1))
    assert "every check" not in out
    assert out.rstrip().splitlines()[-1] == "PASS: 5 passed, 17 skipped (level 1; exit code 0)"
    mixed = [_res("f", Status.FAIL), _res("e", Status.ERROR), _res("w", Status.WARN), _res("p", Status.PASS)]
    assert text.verdict_line(_report(mixed, 2)) == (
        "FAIL: 1 failed, 1 could not run, 1 warned, 1 passed (level 2; exit code 1)"
    )
    assert text.verdict_line(_report([], 0)) == "PASS: no checks ran (level 0; exit code 0)"


def test_level_0_without_torch_ends_with_a_next_step() -> None:
    results = [_res("env.shm", Status.PASS), _res("triton.packages", Status.SKIP, missing="torch")]
    lines = text.render(_report(results, 0)).rstrip().splitlines()
    assert lines[-2] == "PASS: 1 passed, 1 skipped (level 0; exit code 0)"
    assert lines[-1].startswith("next: 1 check(s) skipped because torch is not installed")
    assert "`fix it`" in lines[-1] and "rocmkit doctor --level 1" in lines[-1]
    # Where torch.import already failed with the fix, no second line says it again.
    failed = [*results, _res("torch.import", Status.FAIL, missing="torch")]
    assert text.next_step(failed) is None
    assert text.next_step([_res("env.shm", Status.PASS)]) is None
