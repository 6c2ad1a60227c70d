"""A real zip bomb, built in milliseconds: a raw deflate stream that inflates to GBs.

zlib would take half a minute to compress 2 GiB of zeros. This writes the stream by hand
instead (RFC 1951): one dynamic-Huffman block whose literal/length code gives the symbol
285 ("copy 258 bytes") a one-bit code and whose distance code gives distance 1 a one-bit
code, both ``0``. After one literal, every two zero bits inflate to 258 bytes, so the body is
a run of zero bytes: 1032 to 1, the ratio of the bombs found in the wild."""

from __future__ import annotations

import struct
import zlib


class _Bits:
    """An LSB-first bit stream, as deflate packs it."""

    def __init__(self) -> None:
        self.value = 0
        self.length = 0

    def put(self, value: int, count: int) -> None:
        """Header fields and extra bits: least significant bit first."""
        self.value |= value << self.length
        self.length += count

    def code(self, code: int, count: int) -> None:
        """Huffman codes: most significant bit first."""
        for i in reversed(range(count)):
            self.put((code >> i) & 1, 1)


# Code length code order (RFC 1951, 3.2.7).
_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def deflate_bomb(inflated: int) -> bytes:
    """A raw deflate stream (no zlib header) that inflates to about ``inflated`` zero bytes."""
    reps = max(1, (inflated - 1) // 258)
    head = _Bits()
    head.put(1, 1)  # BFINAL
    head.put(2, 2)  # BTYPE: dynamic Huffman
    head.put(286 - 257, 5)  # HLIT: every literal/length symbol up to 285
    head.put(1 - 1, 5)  # HDIST: one distance code
    head.put(18 - 4, 4)  # HCLEN: code length codes up to symbol 1 in _ORDER
    # The code length code: 18 (a run of zeros) -> "0", 1 -> "10", 2 -> "11".
    lengths = {18: 1, 1: 2, 2: 2}
    for symbol in _ORDER[:18]:
        head.put(lengths.get(symbol, 0), 3)
    one, two, zeros = (0b10, 2), (0b11, 2), (0b0, 1)

    def run(count: int) -> None:  # symbol 18: 11 to 138 zero lengths, 7 extra bits
        head.code(*zeros)
        head.put(count - 11, 7)

    # Literal/length lengths: 0 -> 2, 1..255 -> 0, 256 (end) -> 2, 257..284 -> 0, 285 -> 1.
    head.code(*two)
    run(138)
    run(117)
    head.code(*two)
    run(28)
    head.code(*one)
    head.code(*one)  # the one distance code (distance 1): length 1
    # Canonical codes: 285 -> "0"; literal 0 -> "10"; end of block -> "11"; distance 1 -> "0".
    head.code(0b10, 2)  # one literal zero byte, for the copies to repeat
    tail = _Bits()
    tail.code(0b11, 2)  # end of block
    body_bits = 2 * reps  # "0" (285) + "0" (distance 1) per 258 bytes: all zero bits
    total = head.length + body_bits + tail.length
    value = head.value | (tail.value << (head.length + body_bits))
    return value.to_bytes((total + 7) // 8, "little")


def zip_with(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of ``(name, data, method, declared_size)`` members, ``data`` stored as given
    (already deflated for method 8) and ``declared_size`` what the directory claims the
    member inflates to: a bomb lies about it."""
    out = bytearray()
    central = bytearray()
    for name, data, method, declared in members:
        raw = name.encode()
        offset = len(out)
        crc = zlib.crc32(data)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(data), declared, len(raw), 0)
        out += raw + data
        central += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(data), declared, len(raw), 0, 0, 0, 0, 0, offset,
        )  # fmt: skip
        central += raw
    cd_offset = len(out)
    out += central
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), cd_offset, 0)
    return bytes(out)
