"""hw.memtest and hw.p2p_bandwidth (level 3): the pattern test and the copy timing run for real on
CPU memory with torch; the verdicts are judged on measured numbers; without a GPU both checks
refuse and say why (docs/hardware.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocmkit.detect import detect_machine
from rocmkit.doctor import hwload
from rocmkit.doctor.checks import hardware_load
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.sources import CaptureSource

torch = pytest.importorskip("torch")
CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"


def test_pattern_test_passes_on_good_memory() -> None:
    r = hwload.pattern_test(torch, "cpu", 3 * 1024 * 1024 + 12, chunk_words=1 << 18)
    assert r.errors == 0 and r.bytes_tested == 3 * 1024 * 1024 + 12 and r.patterns == hwload.PATTERNS


@pytest.mark.parametrize("pattern", ["zeros", "checker_55", "own_address", "random_inverse"])
def test_pattern_test_finds_a_flipped_bit(pattern: str) -> None:
    def fail_a_cell(name: str, buf: Any) -> None:
        if name == pattern:
            buf[300_000] ^= 1 << 17  # one bit of one word, as a weak cell

    r = hwload.pattern_test(torch, "cpu", 2 * 1024 * 1024, chunk_words=1 << 18, after_write=fail_a_cell)
    assert r.errors == 1
    assert r.first_errors[0]["pattern"] == pattern and r.first_errors[0]["offset"] == 1_200_000
    verdict = hardware_load.memtest_verdict([(0, 2 * 1024 * 1024, r)], 0.5)
    assert verdict.status is Status.FAIL and "byte 1200000" in verdict.message and verdict.remedy


def test_an_addressing_fault_only_own_address_sees() -> None:
    # Two words that alias (a stuck address line): constant patterns read back fine.
    def alias(name: str, buf: Any) -> None:
        buf[1024] = buf[0]

    r = hwload.pattern_test(torch, "cpu", 1024 * 1024, chunk_words=1 << 16, after_write=alias,
                            patterns=("zeros", "ones", "own_address"))
    assert r.errors == 1 and r.first_errors[0]["pattern"] == "own_address"


def test_copy_bandwidth_is_measured() -> None:
    src = torch.ones(1 << 20)
    dst = torch.empty_like(src)
    gbs = hwload.copy_gbs(torch, src, dst, repeats=3)
    assert gbs > 0 and torch.equal(src, dst)
    assert hwload.pcie_gbs(32.0, 16) == pytest.approx(63.02, abs=0.01)
    assert hwload.pcie_gbs(2.5, 16) == pytest.approx(4.0)


def _ctx() -> CheckContext:
    m = detect_machine(CaptureSource(CAPTURES / "synthetic-mi300x8-health-sysfs"), environ={})
    return CheckContext(machine=m, backend="rocm")


def test_p2p_verdict_against_the_sku_floor_and_the_trained_link() -> None:
    ctx = _ctx()
    buses = {0: "0000:05:00.0", 1: "0000:26:00.0"}
    good = hardware_load.p2p_verdict(ctx.machine, {(0, 1): 52.0, (1, 0): 51.0}, {0: 50.0, 1: 49.0}, buses,
                                     {0: 32.0, 1: 32.0}, 0.6)
    assert good.status is Status.PASS, good.message
    fig = {f.name: f for f in good.figures}
    assert fig["p2p.0to1"].floor == 38.4 and fig["p2p.0to1"].sku == "MI300X"
    assert fig["h2d.gpu0"].reference == 63.0 and fig["h2d.gpu0"].floor == 37.8
    bad = hardware_load.p2p_verdict(ctx.machine, {(0, 1): 52.0, (1, 0): 12.0}, {0: 50.0, 1: 20.0}, buses,
                                    {0: 32.0, 1: 32.0}, 0.6)
    assert bad.status is Status.FAIL
    assert "GPU 1 -> 0 copies at 12.0 GB/s" in bad.message and "GPU 1 host-to-device 20.0 GB/s" in bad.message
    # The link read under load wins over the idle reading: at 16 GT/s, 20 GB/s is 63 % of 31.5.
    slow_link = hardware_load.p2p_verdict(ctx.machine, {}, {1: 20.0}, buses, {1: 16.0}, 0.6)
    assert slow_link.status is Status.PASS


def _run(fn: Any, ctx: CheckContext) -> CheckResult:
    out = fn(ctx)
    assert isinstance(out, CheckResult)
    return out


def test_without_a_gpu_both_refuse_and_say_why() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the check runs for real")
    ctx = _ctx()
    for fn in (hardware_load.memtest, hardware_load.p2p_bandwidth):
        r = _run(fn, ctx)
        assert r.status is Status.SKIP and "no GPU" in r.message
    checks = load_checks()
    for name in ("hw.memtest", "hw.p2p_bandwidth"):
        assert checks[name].level == 3 and "gpu" in checks[name].needs and checks[name].exclusive
