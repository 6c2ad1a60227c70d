"""The work behind the level-3 ``hw.*`` checks: a device-memory pattern test and copy bandwidths.

Plain torch, passed in as ``torch`` (rocmkit never imports it at module level), on any device
torch knows: the doctor's child runs them on a GPU; the tests run them for real on the CPU.

The pattern test writes, reads back and verifies each pattern over one buffer, chunk by chunk,
in the spirit of RVS ``mem`` and memtest86: zeros and ones (stuck bits), the 0xAA/0x55
checkerboards (coupling between neighbouring cells), each word's own address (a fault in the
addressing, which constant patterns cannot see), and a seeded random pattern with its inverse
(moving inversions). A mismatch is counted and its first offsets kept; nothing is sampled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WORD = 4  # bytes of an int32 word
CHUNK_WORDS = 16 * 1024 * 1024  # 64 MiB: the expected values are made one chunk at a time
PATTERNS = ("zeros", "ones", "checker_aa", "checker_55", "own_address", "random", "random_inverse")
_CONST = {"zeros": 0, "ones": -1, "checker_aa": -0x55555556, "checker_55": 0x55555555}  # 0xAAAAAAAA as int32


@dataclass
class MemtestResult:
    bytes_tested: int
    patterns: tuple[str, ...]
    passes: int
    errors: int = 0
    first_errors: list[dict[str, Any]] = field(default_factory=list)  # pattern, offset (bytes), got, want
    seconds: float = 0.0

    @property
    def gbs(self) -> float:
        """Bytes written and read back per second, over every pattern and pass."""
        moved = 2 * self.bytes_tested * len(self.patterns) * self.passes
        return moved / self.seconds / 1e9 if self.seconds > 0 else 0.0


def _expected(torch: Any, name: str, start: int, n: int, device: Any, seed: int) -> Any:
    if name in _CONST:
        return None  # compared with a scalar, no tensor needed
    if name == "own_address":
        # The word's index, wrapped to 31 bits (a buffer over 8 GiB repeats it, still unique per 8 GiB).
        idx = torch.arange(start, start + n, dtype=torch.int64, device=device)
        return (idx & 0x7FFFFFFF).to(torch.int32)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed + start)
    values = torch.randint(-(2**31), 2**31, (n,), dtype=torch.int64, generator=gen, device=device).to(torch.int32)
    return values if name == "random" else torch.bitwise_not(values)


def pattern_test(
    torch: Any,
    device: Any,
    nbytes: int,
    *,
    passes: int = 1,
    patterns: tuple[str, ...] = PATTERNS,
    seed: int = 1234,
    chunk_words: int = CHUNK_WORDS,
    sync: Callable[[], None] | None = None,
    after_write: Callable[[str, Any], None] | None = None,
    keep: int = 8,
) -> MemtestResult:
    """Write, read back and verify ``patterns`` over ``nbytes`` of ``device`` memory.

    ``after_write(pattern, buffer)`` runs between writing and verifying (tests use it to flip a
    bit, as a failing cell would)."""
    words = max(1, nbytes // WORD)
    buf = torch.empty(words, dtype=torch.int32, device=device)
    out = MemtestResult(bytes_tested=words * WORD, patterns=tuple(patterns), passes=passes)
    started = time.perf_counter()
    for p in range(passes):
        for name in patterns:
            for start in range(0, words, chunk_words):
                n = min(chunk_words, words - start)
                view = buf[start : start + n]
                want = _expected(torch, name, start, n, device, seed + p)
                if want is None:
                    view.fill_(_CONST[name])
                else:
                    view.copy_(want)
            if sync is not None:
                sync()
            if after_write is not None:
                after_write(name, buf)
            for start in range(0, words, chunk_words):
                n = min(chunk_words, words - start)
                view = buf[start : start + n]
                want = _expected(torch, name, start, n, device, seed + p)
                bad = view != (_CONST[name] if want is None else want)
                count = int(bad.sum().item())
                if not count:
                    continue
                out.errors += count
                for i in bad.nonzero().flatten()[: max(0, keep - len(out.first_errors))].tolist():
                    got = int(view[i].item()) & 0xFFFFFFFF
                    exp = (_CONST[name] if want is None else int(want[i].item())) & 0xFFFFFFFF
                    out.first_errors.append(
                        {"pattern": name, "offset": (start + int(i)) * WORD, "got": f"0x{got:08x}",
                         "want": f"0x{exp:08x}"}
                    )
    if sync is not None:
        sync()
    out.seconds = time.perf_counter() - started
    del buf
    return out


def copy_gbs(
    torch: Any, src: Any, dst: Any, *, repeats: int = 5, sync: Callable[[], None] | None = None
) -> float:
    """GB/s of ``dst.copy_(src)`` (one warm-up, then the median of ``repeats`` timed copies)."""
    import statistics

    def once() -> float:
        if sync is not None:
            sync()
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=False)
        if sync is not None:
            sync()
        return time.perf_counter() - t0

    once()
    times = [once() for _ in range(max(1, repeats))]
    best = statistics.median(times)
    nbytes = src.numel() * src.element_size()
    return nbytes / best / 1e9 if best > 0 else 0.0


def pcie_gbs(speed_gts: float, width: int) -> float:
    """A PCIe link's payload peak per direction, GB/s: Gen1-2 encode 8b/10b, Gen3+ 128b/130b."""
    efficiency = 0.8 if speed_gts <= 5.0 else 128 / 130
    return speed_gts * width * efficiency / 8
