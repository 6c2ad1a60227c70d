"""@check stamps name and level on results and declares the options a check reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.registry import CheckContext, check, current_check, load_checks, unknown_options
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.machine import Machine

CTX = CheckContext(machine=Machine(), cache_dir=Path("/tmp"))


@check("stamp.one", level=2, description="leaves its name and level to @check", options={"stamp_n": "n"})
def stamped(ctx: CheckContext) -> CheckResult:
    assert current_check().name == "stamp.one"
    return CheckResult(status=Status.PASS, message="ok")


@check("stamp.many", level=1, description="names its own parts", options={"stamp.*": "any"})
def many(ctx: CheckContext) -> list[CheckResult]:
    return [
        CheckResult(status=Status.PASS, message="whole"),
        CheckResult(name="stamp.many.part", level=3, status=Status.WARN, message="part"),
    ]


def test_name_and_level_come_from_check() -> None:
    r = stamped(CTX)
    assert isinstance(r, CheckResult)
    assert (r.name, r.level) == ("stamp.one", 2)
    whole, part = many(CTX)  # type: ignore[misc]
    assert (whole.name, whole.level) == ("stamp.many", 1)
    assert (part.name, part.level) == ("stamp.many.part", 3)  # what a check says wins


def test_no_check_is_running_outside_one() -> None:
    with pytest.raises(RuntimeError, match="no doctor check is running"):
        current_check()


def test_registering_another_function_under_a_taken_name_fails() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        check("stamp.one", level=0, description="a clash")(lambda ctx: CheckResult(status=Status.PASS, message=""))


def test_unknown_options_against_what_checks_declare() -> None:
    checks = load_checks((__name__,)).values()
    assert unknown_options(["stamp_n", "stamp.x", "stamp_m"], checks) == ["stamp_m"]


def test_every_built_in_option_is_declared_by_a_check() -> None:
    from rocmkit.doctor.registry import CHECK_MODULES
    from rocmkit.kernels.sizes import CHECK_OPTION_KEYS, option_keys

    built_in = load_checks(CHECK_MODULES).values()
    keys = [*option_keys(), *CHECK_OPTION_KEYS, "shm_min_bytes", "cache_min_free_bytes", "smoke_rel_tolerance"]
    keys += ["allreduce_sizes", "cpu_procs", "models.repeat"]
    assert unknown_options(keys, built_in) == []
