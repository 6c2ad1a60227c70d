"""Parsers never raise on garbage: real outputs cut, mutated and mixed (hypothesis)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocmkit.parsers import amd_smi, host, kfd, lspci, nvidia_smi, rocm_smi, rocminfo, versions
from rocmkit.parsers.records import GpuRecord

CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"
REAL = sorted(
    p.read_text(encoding="utf-8", errors="replace")
    for p in CAPTURES.rglob("*")
    if p.is_file() and p.suffix in {".txt", ".json", ".csv", ".err", ""} and p.stat().st_size < 200_000
)

PARSERS: list[Callable[[str], object]] = [
    lambda t: rocminfo.parse_rocminfo(t, t[: len(t) // 2]),
    rocminfo.parse_agent_enumerator,
    rocm_smi.parse_concise,
    rocm_smi.parse_productname,
    rocm_smi.parse_json,
    rocm_smi.parse_csv,
    amd_smi.parse_list,
    amd_smi.parse_static_json,
    amd_smi.parse_version,
    nvidia_smi.parse_query_csv,
    nvidia_smi.parse_table,
    nvidia_smi.parse_driver_version,
    lspci.parse_lspci,
    lambda t: kfd.parse_kfd([kfd.KfdNode(node=1, properties=t, mem_banks=(t,))]),
    versions.parse_rocm_version_file,
    versions.parse_hipconfig_version,
    versions.parse_module_version,
    host.parse_os_release,
    host.parse_system_release,
    host.parse_cpuinfo,
    host.parse_meminfo_total,
    host.parse_id,
    host.parse_uname,
    host.parse_ldd_version,
    host.parse_devices,
    host.parse_python,
]


@st.composite
def garbage(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from(REAL))
    how = draw(st.sampled_from(["cut", "mutate", "mix", "lines", "random", "number"]))
    if how == "number":
        # A number made absurd: 5000 digits (int() raises past 4300), other scripts' digits.
        spots = [m.span() for m in re.finditer(r"\d+", base)]
        if spots:
            a, b = draw(st.sampled_from(spots))
            return base[:a] + draw(st.sampled_from(["9" * 5000, "١٢", "²", "1e400", "-0"])) + base[b:]
        return base
    if how == "cut":
        a = draw(st.integers(0, len(base)))
        b = draw(st.integers(a, len(base)))
        return base[a:b]
    if how == "mutate":
        chars = list(base)
        for _ in range(draw(st.integers(1, 30))):
            if not chars:
                break
            i = draw(st.integers(0, len(chars) - 1))
            chars[i] = draw(st.characters())
        return "".join(chars)
    if how == "mix":
        other = draw(st.sampled_from(REAL)).splitlines()
        mine = base.splitlines()
        out = []
        for i in range(max(len(mine), len(other))):
            if i < len(mine):
                out.append(mine[i])
            if i < len(other) and draw(st.booleans()):
                out.append(other[i])
        return "\n".join(out)
    if how == "lines":
        lines = base.splitlines()
        return "\n".join(draw(st.permutations(lines))[: draw(st.integers(0, len(lines)))])
    return draw(st.text(max_size=400))


def _check_records(result: object) -> None:
    for rec in getattr(result, "gpus", ()) or ():
        assert isinstance(rec, GpuRecord)
        assert rec.vendor in ("amd", "nvidia")
        assert rec.memory_bytes is None or rec.memory_bytes > 0


# ROCMKIT_FUZZ=long (the weekly fuzz workflow) explores far more.
_EXAMPLES = int(os.environ.get("ROCMKIT_FUZZ_EXAMPLES", "20000" if os.environ.get("ROCMKIT_FUZZ") == "long" else "400"))


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=garbage())
def test_parsers_never_raise(text: str) -> None:
    for parse in PARSERS:
        _check_records(parse(text))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet='{}[]":,0123456789abcdefgx \n', max_size=300))
def test_json_parsers_survive_json_like_noise(text: str) -> None:
    for parse in (rocm_smi.parse_json, amd_smi.parse_static_json):
        _check_records(parse(text))


def test_real_outputs_parse_without_error() -> None:
    assert len(REAL) > 20
    for text in REAL:
        for parse in PARSERS:
            _check_records(parse(text))


def test_deeply_nested_json_does_not_crash() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert amd_smi.parse_static_json(text).gpus == ()
    assert rocm_smi.parse_json("{" * 50_000).gpus == ()


def test_every_number_in_real_outputs_made_absurd() -> None:
    """Each of the first numbers of every real output replaced by 5000 digits or by
    non-ASCII digits: every parser still returns (the class the first fuzzer missed)."""
    for text in REAL:
        for m in list(re.finditer(r"\d+", text))[:4]:
            for odd in ("9" * 5000, "²"):
                damaged = text[: m.start()] + odd + text[m.end() :]
                for parse in PARSERS:
                    _check_records(parse(damaged))
