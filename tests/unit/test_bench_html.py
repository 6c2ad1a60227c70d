"""The speedup picture: well-formed, self-contained SVG/HTML with bars, parity and geomean lines."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rocmkit.bench.html import render_page, render_svg
from rocmkit.bench.results import ModelResult, SuiteResult

SVG = "{http://www.w3.org/2000/svg}"


def suite() -> SuiteResult:
    return SuiteResult(
        backend="rocm",
        device="AMD Instinct MI300X <&>",
        mode="train",
        dtype="bf16",
        size="full",
        repeat=30,
        models=(
            ModelResult(name="fast", status="pass", speedup=1.8, speedup_q1=1.7, speedup_q3=1.9),
            ModelResult(name="slow", status="pass", speedup=0.8, speedup_q1=0.75, speedup_q3=0.85),
            ModelResult(name="a<b", status="compile_error", message="Error: <boom> & more"),
        ),
        versions={"torch": "2.6.0+rocm6.2", "triton": None},
        command="rocmkit bench models --mode train",
    )


def test_svg_parses_and_draws_a_bar_per_passing_model() -> None:
    root = ET.fromstring(render_svg(suite()))
    assert root.tag == f"{SVG}svg"
    rects = root.findall(f"{SVG}rect")
    filled = [r for r in rects if not r.get("stroke-dasharray")]
    assert len(filled) == 2  # fast and slow; the failed model gets an outlined box
    widths = sorted(float(r.get("width", "0")) for r in filled)
    assert widths[1] / widths[0] == pytest.approx(1.8 / 0.8)
    texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "parity" in texts
    assert "geomean 1.20x" in texts  # sqrt(1.8 * 0.8), slowdowns included
    assert "compile_error: Error: <boom> & more" in texts  # escaped in the file, intact when parsed
    assert len([r for r in rects if r.get("stroke-dasharray")]) == 1  # the failed model's box
    assert "a<b" in texts


def test_geomean_line_is_drawn_at_its_value() -> None:
    root = ET.fromstring(render_svg(suite()))
    dashed = [ln for ln in root.iter(f"{SVG}line") if ln.get("stroke-dasharray")]
    assert len(dashed) == 1
    assert dashed[0].get("x1") == dashed[0].get("x2")


def test_page_is_self_contained() -> None:
    page = render_page(suite())
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
    assert "AMD Instinct MI300X &lt;&amp;&gt;" in page
    assert "<svg" in page and "pass rate" in page.lower()
    assert "rocmkit bench models --mode train" in page


def test_svg_with_no_passing_model_has_no_geomean_line() -> None:
    s = SuiteResult(
        backend="cpu",
        device="cpu",
        mode="infer",
        dtype="fp32",
        size="tiny",
        repeat=3,
        models=(ModelResult(name="x", status="timeout", message="killed"),),
    )
    root = ET.fromstring(render_svg(s))
    assert not [ln for ln in root.iter(f"{SVG}line") if ln.get("stroke-dasharray")]
