"""The accuracy rules of PyTorch's harness (torch._dynamo.utils.same), on real tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rocmkit.bench.harness import TOLERANCES, check_accuracy, compare  # noqa: E402


def test_allclose_passes_first() -> None:
    ref = torch.randn(100, generator=torch.Generator().manual_seed(0))
    ok, info = compare(ref, ref + 1e-5, None, tol=1e-3, cosine=False)
    assert ok and info["method"] == "allclose"


def test_fp64_rule_forgives_a_result_no_worse_than_eager() -> None:
    gen = torch.Generator().manual_seed(1)
    fp64 = torch.randn(5000, generator=gen, dtype=torch.float64)
    noise = torch.randn(5000, generator=gen, dtype=torch.float64) * 0.01
    ref = (fp64 + noise).float()  # eager is itself 1e-2 away from the fp64 truth
    res = (fp64 - noise).float()  # compiled as far, the other way: allclose fails, fp64 rule passes
    ok, info = compare(ref, res, fp64, tol=1e-3, cosine=False)
    assert ok and info["method"] == "fp64_rmse"
    assert float(info["res_rmse"]) == pytest.approx(float(info["ref_rmse"]), rel=1e-3)


def test_fp64_rule_catches_a_wrong_result() -> None:
    fp64 = torch.randn(5000, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    ok, info = compare(fp64.float(), (fp64 * 1.5).float(), fp64, tol=1e-3, cosine=False)
    assert not ok and info["method"] == "failed:fp64_rmse"


def test_without_fp64_a_mismatch_fails_on_allclose() -> None:
    ref = torch.ones(10)
    ok, info = compare(ref, ref + 0.1, None, tol=1e-3, cosine=False)
    assert not ok and info["method"] == "failed:allclose"
    assert info["max_abs_diff"] == pytest.approx(0.1)


def test_cosine_rule() -> None:
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(3))
    ok, info = compare(ref, ref * 1.2, None, tol=1e-3, cosine=True)  # same direction: cosine 1
    assert ok and info["method"] == "cosine"
    ok, info = compare(ref, -ref, None, tol=1e-3, cosine=True)
    assert not ok and info["method"] == "failed:cosine"


def test_integer_outputs_must_be_equal() -> None:
    a = torch.arange(10)
    assert compare(a, a.clone(), None, tol=1e-3, cosine=False)[0]
    assert not compare(a, a + 1, None, tol=1e-3, cosine=False)[0]


def test_check_accuracy_reports_the_first_failing_tensor() -> None:
    good = torch.ones(4)
    ref = [("output", good), ("loss", torch.tensor(1.0)), ("grad[0]", good)]
    res = [("output", good), ("loss", torch.tensor(1.0)), ("grad[0]", good * 2)]
    acc = check_accuracy(ref, res, None, tol=1e-2, cosine=False)
    assert not acc.ok and acc.worst == "grad[0]" and acc.method == "failed:allclose"
    assert check_accuracy(ref, ref, None, tol=1e-2, cosine=False).ok


def test_check_accuracy_rejects_shape_and_count_mismatches() -> None:
    ref = [("output", torch.ones(4))]
    assert (
        check_accuracy(ref, [("output", torch.ones(5))], None, tol=1e-3, cosine=False).method
        == "failed:shape"
    )
    assert not check_accuracy(ref, [], None, tol=1e-3, cosine=False).ok


def test_tolerances_follow_the_harness() -> None:
    assert TOLERANCES[("fp32", False)] == 1e-3  # HF and timm inference
    assert TOLERANCES[("fp32", True)] == 1e-2  # HF training
