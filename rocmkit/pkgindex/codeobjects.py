"""Which gfx targets a ROCm library carries, read from its code objects, and which a wheel's
ROCm libraries carry, read from the wheel by range requests.

A HIP library keeps its device code in the ELF section ``.hip_fatbin``: one or more clang
offload bundles, each starting at a 4 KiB boundary. A plain bundle
(clang/docs/ClangOffloadBundler.rst) is the 24-byte magic ``__CLANG_OFFLOAD_BUNDLE__``, the
number of entries (uint64), then per entry its offset, its size and the length of its id
(uint64 each) and the id (``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-``; ``host-x86_64-...`` for
the empty host entry). ``--offload-compress`` wraps the bundle in a compressed one
(llvm/include/llvm/Object/OffloadBundle.h): ``CCOB``, the version (uint16), the method
(uint16: 0 zlib, 1 zstd), then the total size (uint32 in version 2, uint64 in 3; none in 1),
the uncompressed size (uint32 in 1 and 2, uint64 in 3) and a truncated MD5 (uint64), then the
compressed plain bundle. Only its head is inflated: the entry ids come first, so a few KiB of
output say every target, never the megabytes of code.

Everything here is read bounded: the library (``LIBRARY_CAP``), the bundle count, the id
lengths, and the inflated head (``HEAD_CAP``). zstd needs a decoder Python 3.11 lacks: the
standard library's ``compression.zstd`` (3.14) or the ``zstandard`` package; without either a
compressed bundle raises :class:`CodeObjectError` saying so.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Iterator
from typing import Any

from rocmkit.errors import DataError

PLAIN_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
SECTION = ".hip_fatbin"
ALIGN = 4096  # bundles in .hip_fatbin start at page boundaries
HEAD_CAP = 1 << 20  # inflated bytes read from a compressed bundle: its entry table is a few KiB
LIBRARY_CAP = 512 << 20  # a ROCm library read from a wheel (bitsandbytes': about 1.3 MB)
_MAX_ENTRIES = 4096
_MAX_ID = 1024
_TARGET = re.compile(r"amdgcn-amd-amdhsa-+(gfx[0-9a-f]+)")
_ZSTD, _ZLIB = 1, 0


class CodeObjectError(DataError):
    """Bytes that are not what they claim (a bundle, an ELF library) or cannot be read here."""


class _CutShort(CodeObjectError):
    """A bundle's entry table ends past the bytes at hand."""


def bundle_ids(bundle: bytes) -> tuple[str, ...]:
    """The entry ids of one offload bundle, plain or compressed (``bundle`` may stop after its
    entry table: a recorded excerpt, or the head of a bundle)."""
    if not bundle.startswith(COMPRESSED_MAGIC):
        return _plain_ids(bundle)
    # Inflated a piece at a time, only until the entry table is whole: the code after it is
    # never inflated (and a recorded head, cut after the table, is never read past its end).
    head = b""
    for piece in _inflated_pieces(bundle):
        head += piece
        try:
            return _plain_ids(head)
        except _CutShort:
            if len(head) >= HEAD_CAP:
                break
    return _plain_ids(head)


def targets(ids: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` -> ``gfx90a``; host entries dropped; sorted."""
    return tuple(sorted({m.group(1) for i in ids if (m := _TARGET.search(i))}))


def library_targets(library: bytes) -> tuple[str, ...]:
    """The gfx targets every bundle of a library's ``.hip_fatbin`` carries (a target missing from
    one bundle misses that bundle's kernels, so the library does not carry it)."""
    section = hip_fatbin(library)
    if section is None:
        raise CodeObjectError(f"the library has no {SECTION} section: no HIP device code")
    common: set[str] | None = None
    for bundle in bundles(section):
        found = set(targets(bundle_ids(bundle)))
        if found:
            common = found if common is None else common & found
    if common is None:
        raise CodeObjectError(f"the library's {SECTION} holds no offload bundle with a GPU target")
    return tuple(sorted(common))


def hip_fatbin(elf: bytes) -> bytes | None:
    """The ``.hip_fatbin`` section of a 64-bit little-endian ELF file, or None without one."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise CodeObjectError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shentsize < 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        raise CodeObjectError("the ELF section table lies outside the file")

    def header(i: int) -> tuple[int, int, int]:
        name, _type = struct.unpack_from("<II", elf, shoff + i * shentsize)
        offset, size = struct.unpack_from("<QQ", elf, shoff + i * shentsize + 24)
        return name, offset, size

    _, str_off, str_size = header(shstrndx)
    names = elf[str_off : str_off + str_size]
    for i in range(shnum):
        name, offset, size = header(i)
        end = names.find(b"\0", name)
        if names[name : end if end >= 0 else None] == SECTION.encode():
            if offset + size > len(elf):
                raise CodeObjectError(f"the ELF section {SECTION} lies outside the file")
            return elf[offset : offset + size]
    return None


def bundles(section: bytes) -> Iterator[bytes]:
    """The offload bundles of a ``.hip_fatbin`` section, each from its magic to its end (to the
    section's end where its size is not recorded: a version-1 compressed bundle)."""
    pos = 0
    while pos < len(section):
        head = section[pos : pos + len(PLAIN_MAGIC)]
        if head.startswith(COMPRESSED_MAGIC) or head == PLAIN_MAGIC:
            size = _bundle_size(section, pos)
            yield section[pos : pos + size] if size else section[pos:]
            pos += max(size, 1)
        else:
            pos += 1
        pos = -(-pos // ALIGN) * ALIGN  # padding up to the next page


def _bundle_size(section: bytes, pos: int) -> int:
    """The bytes of the bundle at ``pos``, 0 when the bundle does not record it."""
    if section.startswith(COMPRESSED_MAGIC, pos):
        version = struct.unpack_from("<H", section, pos + 4)[0]
        if version == 2:
            return int(struct.unpack_from("<I", section, pos + 8)[0])
        if version == 3:
            return int(struct.unpack_from("<Q", section, pos + 8)[0])
        return 0
    count = struct.unpack_from("<Q", section, pos + 24)[0]
    end, at = 0, pos + 32
    for _ in range(min(count, _MAX_ENTRIES)):
        offset, size, id_len = struct.unpack_from("<QQQ", section, at)
        end = max(end, offset + size)
        at += 24 + id_len
    return end


def _plain_ids(data: bytes) -> tuple[str, ...]:
    if len(data) < 32 and PLAIN_MAGIC.startswith(data[: len(PLAIN_MAGIC)]):
        raise _CutShort("the clang offload bundle is cut short before its entry count")
    if not data.startswith(PLAIN_MAGIC):
        raise CodeObjectError("not a clang offload bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)")
    (count,) = struct.unpack_from("<Q", data, 24)
    if count > _MAX_ENTRIES:
        raise CodeObjectError(f"a clang offload bundle claims {count} entries")
    ids: list[str] = []
    at = 32
    for _ in range(count):
        if at + 24 > len(data):
            raise _CutShort("the clang offload bundle's entry table is cut short")
        _offset, _size, id_len = struct.unpack_from("<QQQ", data, at)
        if id_len > _MAX_ID:
            raise CodeObjectError(f"a clang offload bundle entry claims an id of {id_len} bytes")
        if at + 24 + id_len > len(data):
            raise _CutShort("the clang offload bundle's entry table is cut short")
        ids.append(data[at + 24 : at + 24 + id_len].decode("ascii", "replace"))
        at += 24 + id_len
    return tuple(ids)


_PIECE = 16 << 10  # inflated per step


def _inflated_pieces(bundle: bytes) -> Iterator[bytes]:
    """The compressed bundle's plain bundle, inflated ``_PIECE`` bytes at a time, to ``HEAD_CAP``."""
    version, method = struct.unpack_from("<HH", bundle, 4)
    start = {1: 20, 2: 24, 3: 32}.get(version)
    if start is None:
        raise CodeObjectError(f"compressed offload bundle of unknown version {version}")
    payload = bundle[start:]
    if method == _ZLIB:
        inflater = zlib.decompressobj()
        pending = payload
        for _ in range(HEAD_CAP // _PIECE):
            try:
                piece = inflater.decompress(pending, _PIECE)
            except zlib.error as exc:
                raise CodeObjectError(f"the zlib stream of a compressed offload bundle is damaged: {exc}") from None
            pending = inflater.unconsumed_tail
            if not piece:
                return
            yield piece
        return
    if method == _ZSTD:
        yield from _zstd_pieces(payload)
        return
    raise CodeObjectError(f"compressed offload bundle with unknown method {method}")


def _zstd_pieces(payload: bytes) -> Iterator[bytes]:
    """A zstd frame's output ``_PIECE`` bytes at a time, to ``HEAD_CAP`` (the frame may be cut
    short, or followed by padding, after the pieces asked for)."""
    module: Any
    try:
        from compression import zstd as module  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        try:
            import zstandard as module  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            raise CodeObjectError(
                "the bundle is zstd-compressed and this Python has no zstd decoder",
                "pip install zstandard (Python 3.14 has one built in)",
            ) from None
        try:
            with module.ZstdDecompressor().stream_reader(io.BytesIO(payload)) as reader:
                for _ in range(HEAD_CAP // _PIECE):
                    piece = reader.read(_PIECE)
                    if not piece:
                        return
                    yield bytes(piece)
        except module.ZstdError as exc:
            raise CodeObjectError(f"the zstd stream of a compressed offload bundle is damaged: {exc}") from None
        return
    decoder = module.ZstdDecompressor()
    pending = payload
    try:
        for _ in range(HEAD_CAP // _PIECE):
            piece = decoder.decompress(pending, max_length=_PIECE)
            pending = b""
            if not piece:
                return
            yield bytes(piece)
    except module.ZstdError as exc:
        raise CodeObjectError(f"the zstd stream of a compressed offload bundle is damaged: {exc}") from None


# bitsandbytes names each ROCm library for its ROCm release: libbitsandbytes_rocm714.so is 7.14.
ROCM_LIBRARY = re.compile(r"[_-]rocm(\d)(\d+)\.so$")


def rocm_of(member: str) -> str | None:
    """``bitsandbytes/libbitsandbytes_rocm714.so`` -> ``7.14``; None for a library not so named."""
    m = ROCM_LIBRARY.search(member)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def wheel_targets(url: str, *, timeout: float) -> dict[str, tuple[str, ...]] | None:
    """The gfx targets of each ROCm library (named as :data:`ROCM_LIBRARY`) of the wheel at
    ``url``: its directory and each library read by range requests, never the whole wheel. None
    when the server serves no ranges."""
    from rocmkit.pkgindex.wheelzip import read_member, zip_members

    members = zip_members(url, timeout=timeout)
    if members is None:
        return None
    out: dict[str, tuple[str, ...]] = {}
    for member in members:
        if rocm_of(member.name) is None:
            continue
        data = read_member(
            url, member, cap=LIBRARY_CAP, timeout=timeout, what=member.name,
            fix="check the index: no ROCm library of a wheel is that large",
        )  # fmt: skip
        if data is None:
            return None
        out[member.name] = library_targets(data)
    return out
