"""compare(): the allclose rule, in float64, with NaN and shape mistakes caught."""

from __future__ import annotations

import pytest

from rocmkit.kernels.compare import compare
from rocmkit.kernels.tolerance import Tolerance, tolerance

torch = pytest.importorskip("torch")


def test_within_tolerance_passes_and_reports_the_largest_error() -> None:
    ref = torch.tensor([1.0, 2.0, -4.0])
    out = ref + torch.tensor([0.005, -0.009, 0.0])
    c = compare(out, ref, tolerance("matmul", "float16"))
    assert c.ok and c.mismatched == 0 and c.total == 3
    assert c.max_abs_error == pytest.approx(0.009, rel=1e-5)


def test_rtol_scales_with_the_reference() -> None:
    ref = torch.tensor([100.0, 1.0])
    out = torch.tensor([100.5, 1.005])
    assert not compare(out, ref, Tolerance(atol=1e-2, rtol=0.0, source="t")).ok
    assert compare(out, ref, Tolerance(atol=1e-2, rtol=1e-2, source="t")).ok


def test_exact_tolerance_catches_a_one_ulp_difference() -> None:
    ref = torch.tensor([1.0, 2.0])
    out = torch.nextafter(ref, torch.tensor([3.0, 3.0]))
    c = compare(out, ref, tolerance("vector_add", "float32"))
    assert not c.ok and c.mismatched == 2
    assert "2 of 2 elements outside exact" in c.describe()


def test_nan_is_a_mismatch_not_close() -> None:
    c = compare(
        torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 1.0]), Tolerance(atol=1, rtol=1, source="t")
    )
    assert not c.ok and c.mismatched == 1
    assert c.max_abs_error == float("inf")


def test_low_precision_outputs_are_compared_in_float64() -> None:
    ref = torch.randn(64, 64).to(torch.bfloat16)
    c = compare(ref.clone(), ref, tolerance("matmul", "bfloat16"))
    assert c.ok and c.max_abs_error == 0.0
    assert c.as_details()["tolerance_source"]


def test_a_shape_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="differs from the reference"):
        compare(torch.zeros(3), torch.zeros(4), tolerance("softmax", "float32"))
