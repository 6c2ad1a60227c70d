"""A plan may come from anyone: every field is checked on load (rocmkit.planschema)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rocmkit.errors import DataError
from rocmkit.plan import Plan

GOOD: dict[str, Any] = {
    "schema": "rocmkit.plan/1",
    "backend": "rocm",
    "channel": "stable",
    "torch_version": "2.13.0+rocm7.2",
    "triton": None,
    "requirements": ["torch==2.13.0+rocm7.2", "triton==3.8.0"],
    "index_urls": ["https://download.pytorch.org/whl/rocm7.2"],
    "env": {"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "HIP_VISIBLE_DEVICES": "0"},
    "warnings": [],
    "reasons": [],
}


def _with(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    data.update(changes)
    return data


def test_a_plan_resolve_writes_loads() -> None:
    plan = Plan.from_dict(_with())
    assert plan.env["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    assert plan.requirements[0] == "torch==2.13.0+rocm7.2"


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"env": {"LD_PRELOAD": "/tmp/evil.so"}}, "LD_PRELOAD"),
        ({"env": {"PATH": "/tmp/bin"}}, "PATH"),
        ({"env": {"HSA_OVERRIDE_GFX_VERSION": "11.0.0\n; rm -rf ~"}}, "control"),
        ({"env": {"bad name": "1"}}, "bad name"),
        ({"requirements": ["--index-url=https://evil.example/simple"]}, "pip option"),
        ({"requirements": ["torch @ http://evil.example/torch.whl"]}, "non-https"),
        ({"index_urls": ["ftp://evil.example/simple"]}, "not an http"),
        ({"backend": "rocm; echo"}, "backend"),
        ({"requirements": "torch"}, "requirements"),
    ],
)
def test_a_hostile_field_is_one_error_naming_it(changes: dict[str, Any], words: str) -> None:
    with pytest.raises(DataError) as err:
        Plan.from_dict(_with(**changes))
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_the_user_can_allow_one_more_variable() -> None:
    data = _with(env={"MIOPEN_USER_DB_PATH": "/scratch/miopen"})
    with pytest.raises(DataError):
        Plan.from_dict(data)
    plan = Plan.from_dict(data, allow_env=frozenset({"MIOPEN_USER_DB_PATH"}))
    assert plan.env == {"MIOPEN_USER_DB_PATH": "/scratch/miopen"}
