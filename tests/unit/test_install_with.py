"""`rocmkit install --with`: comma-separated companions, checked before anything is installed."""

from __future__ import annotations

import pytest

from rocmkit.errors import UsageError
from rocmkit.install.companions import with_packages_of


def test_comma_separated_and_repeated() -> None:
    got = with_packages_of(("transformers,timm", " accelerate>=1.0 ", "timm"), companions=True)
    assert got == ("transformers", "timm", "accelerate>=1.0")


def test_bad_requirements_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="not a package requirement"):
        with_packages_of(("transformers,>=1",), companions=True)
    with pytest.raises(UsageError, match="URL requirement"):
        with_packages_of(("timm @ https://example.com/timm.whl",), companions=True)


def test_timm_without_the_plans_torchvision_is_refused() -> None:
    with pytest.raises(UsageError, match="needs torchvision") as err:
        with_packages_of(("transformers,timm",), companions=False)
    assert err.value.fix and "drop --skip companions" in err.value.fix
    assert with_packages_of(("transformers",), companions=False) == ("transformers",)
