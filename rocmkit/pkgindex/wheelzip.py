"""A wheel's files read from its zip central directory with HTTP range requests (ZIP64
included), never the whole wheel: its ``METADATA``, and any one member (the ROCm libraries whose
code objects :mod:`rocmkit.pkgindex.codeobjects` reads), each read capped."""

from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass

from rocmkit.errors import DataError, NetworkError
from rocmkit.pkgindex.http import (
    CHUNK_BYTES,
    MAX_METADATA_BYTES,
    TAIL_BYTES,
    USER_AGENT,
    open_url,
    request,
    shown,
)

_EOCD = b"PK\x05\x06"
_EOCD64_LOC = b"PK\x06\x07"
_CDIR = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"


def _range_get(url: str, spec: str, *, timeout: float, max_bytes: int) -> bytes | None:
    from urllib.error import HTTPError, URLError

    deadline = time.monotonic() + timeout
    try:
        req = request(url, {"Range": f"bytes={spec}", "User-Agent": USER_AGENT})
        resp = open_url(req, timeout=timeout)
    except HTTPError as exc:
        exc.close()  # its response's socket
        if exc.code == 416:
            return None
        raise NetworkError(f"{shown(url)} answered HTTP {exc.code}", "check the index") from None
    except (URLError, TimeoutError, OSError, ValueError) as exc:
        raise NetworkError(
            f"{shown(url)} does not answer: {shown(str(getattr(exc, 'reason', exc)))}",
            "check the network, or raise --timeout",
        ) from None
    with resp:
        if resp.status != 206:
            # The server ignored Range and started sending the whole (multi-GB) wheel: hang up.
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise NetworkError(f"{shown(url)} did not finish answering within {timeout:g} s", "raise --timeout")
            chunk = resp.read(CHUNK_BYTES)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def metadata_by_range(url: str, filename: str, *, timeout: float) -> str | None:
    """``<dist>.dist-info/METADATA`` of the wheel at ``url``, read from the zip's end.

    A zip ends with its central directory and the end-of-central-directory record;
    one range request for the last 64 KiB holds both for a wheel like torch's, a
    second one reads the METADATA member itself. None when ranges are not served.
    """
    tail = _range_get(url, f"-{TAIL_BYTES}", timeout=timeout, max_bytes=TAIL_BYTES)
    if tail is None:
        return None
    return _metadata_from_tail(url, filename, tail, timeout=timeout)


@dataclass(frozen=True, kw_only=True)
class ZipMember:
    """One file of a zip's central directory: where its local header is and how it is stored."""

    name: str
    method: int  # 0 stored, 8 deflated
    csize: int
    usize: int
    offset: int  # of its local header


def zip_members(url: str, *, timeout: float) -> list[ZipMember] | None:
    """The files of the wheel at ``url``, read from its central directory by range requests
    (the last 64 KiB, and the directory itself when it is not in them). None when the
    server serves no ranges or the directory is larger than rocmkit reads."""
    tail = _range_get(url, f"-{TAIL_BYTES}", timeout=timeout, max_bytes=TAIL_BYTES)
    if tail is None:
        return None
    cdir = _directory(url, tail, timeout=timeout)
    return None if cdir is None else _members(cdir)


def _metadata_from_tail(url: str, filename: str, tail: bytes, *, timeout: float) -> str | None:
    cdir = _directory(url, tail, timeout=timeout)
    if cdir is None:
        return None
    dist = filename.split("-", 2)
    want = f"{dist[0]}-{dist[1]}.dist-info/METADATA" if len(dist) >= 2 else ""
    for member in _members(cdir):
        name = member.name
        if name == want or (name.endswith(".dist-info/METADATA") and name.count("/") == 1 and not want):
            raw = read_member(url, member, cap=MAX_METADATA_BYTES, timeout=timeout, what="its METADATA")
            return None if raw is None else raw.decode("utf-8", "replace")
    return None


def _directory(url: str, tail: bytes, *, timeout: float) -> bytes | None:
    """The central directory: from the tail already read, or one more range request."""
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        raise NetworkError(f"{shown(url)} is not a zip file (no end of central directory)", "check the index")
    (_, _, _, _, entries, cd_size, cd_offset, _) = struct.unpack("<4sHHHHIIH", tail[at : at + 22])
    if cd_offset == 0xFFFFFFFF or entries == 0xFFFF:
        loc = tail.rfind(_EOCD64_LOC, 0, at)
        if loc < 0:
            raise NetworkError(f"{shown(url)}: zip64 wheel without a zip64 locator", "check the index")
        (eocd64_off,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
        eocd64 = _range_get(url, f"{eocd64_off}-{eocd64_off + 55}", timeout=timeout, max_bytes=56)
        if eocd64 is None:
            return None
        cd_size, cd_offset = struct.unpack("<QQ", eocd64[40:56])
    total_end = at + (len(tail) - at)  # position of tail end relative to tail
    file_size = _file_size_from_tail(tail, at, cd_offset, cd_size)
    start_in_tail = cd_offset - (file_size - len(tail)) if file_size is not None else -1
    if start_in_tail >= 0 and start_in_tail + cd_size <= total_end:
        return tail[start_in_tail : start_in_tail + cd_size]
    if cd_size > MAX_METADATA_BYTES:
        return None
    return _range_get(url, f"{cd_offset}-{cd_offset + cd_size - 1}", timeout=timeout, max_bytes=cd_size)


def _members(cdir: bytes) -> list[ZipMember]:
    out: list[ZipMember] = []
    pos = 0
    while pos + 46 <= len(cdir) and cdir[pos : pos + 4] == _CDIR:
        (method, csize, usize, nlen, xlen, clen, local_off) = _cdir_fields(cdir, pos)
        name = cdir[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        extra = cdir[pos + 46 + nlen : pos + 46 + nlen + xlen]
        csize, usize, local_off = _zip64_extra(extra, csize, usize, local_off)
        out.append(ZipMember(name=name, method=method, csize=csize, usize=usize, offset=local_off))
        pos += 46 + nlen + xlen + clen
    return out


def _file_size_from_tail(tail: bytes, at: int, cd_offset: int, cd_size: int) -> int | None:
    """The wheel's size: the central directory ends where the EOCD (or zip64 records) begin."""
    loc = tail.rfind(_EOCD64_LOC, 0, at)
    if loc >= 0:
        # zip64 records sit between the directory and the EOCD: find the record itself.
        rec = tail.rfind(b"PK\x06\x06", 0, loc)
        if rec >= 0:
            return cd_offset + cd_size + (len(tail) - rec)
    return cd_offset + cd_size + (len(tail) - at)


def _cdir_fields(cdir: bytes, pos: int) -> tuple[int, int, int, int, int, int, int]:
    method = struct.unpack("<H", cdir[pos + 10 : pos + 12])[0]
    csize, usize = struct.unpack("<II", cdir[pos + 20 : pos + 28])
    nlen, xlen, clen = struct.unpack("<HHH", cdir[pos + 28 : pos + 34])
    (local_off,) = struct.unpack("<I", cdir[pos + 42 : pos + 46])
    return method, csize, usize, nlen, xlen, clen, local_off


def _zip64_extra(extra: bytes, csize: int, usize: int, off: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[pos : pos + 4])
        if tag == 0x0001:
            data = extra[pos + 4 : pos + 4 + size]
            vals = [struct.unpack("<Q", data[i : i + 8])[0] for i in range(0, len(data) - 7, 8)]
            it = iter(vals)
            if usize == 0xFFFFFFFF:
                usize = next(it, usize)
            if csize == 0xFFFFFFFF:
                csize = next(it, csize)
            if off == 0xFFFFFFFF:
                off = next(it, off)
        pos += 4 + size
    return csize, usize, off


def read_member(
    url: str, member: ZipMember, *, cap: int, timeout: float, what: str, fix: str | None = None
) -> bytes | None:
    """One file of the wheel at ``url``, by one range request, at most ``cap`` bytes stored or
    inflated (``what`` names it in the error past the cap); None when it is larger than ``cap``,
    stored otherwise than plain or deflated, or not served."""
    if member.usize > cap or member.csize > cap:
        return None
    # The local header is 30 bytes plus a name and an extra field of unknown length: read a margin.
    want = 30 + 1024 + member.csize
    offset = member.offset
    got = _range_get(url, f"{offset}-{offset + want - 1}", timeout=timeout, max_bytes=want)
    if got is None or got[:4] != _LOCAL:
        return None
    nlen, xlen = struct.unpack("<HH", got[26:30])
    data = got[30 + nlen + xlen : 30 + nlen + xlen + member.csize]
    if member.method == 0:
        return data
    if member.method == 8:
        if fix is None:
            return inflate_capped(data, cap, what=f"{url}: {what}")
        return inflate_capped(data, cap, what=f"{url}: {what}", fix=fix)
    return None


_METADATA_FIX = "check the index: a wheel's METADATA is a few KiB; leave this index out (--only)"


def inflate_capped(data: bytes, cap: int, *, what: str, fix: str = _METADATA_FIX) -> bytes | None:
    """Raw deflate ``data`` inflated to at most ``cap`` bytes: the size a zip's directory
    declares is the sender's word, and a few MB of deflate inflate to GBs (a zip bomb).
    Past the cap: :class:`DataError` naming ``what``; a broken stream: None."""
    inflater = zlib.decompressobj(-15)
    try:
        raw = inflater.decompress(data, cap + 1)
    except zlib.error:
        return None
    if len(raw) > cap or inflater.unconsumed_tail:
        raise DataError(
            f"{what} inflates past rocmkit's cap of {cap} bytes (a zip bomb, or not a wheel)", fix
        )
    return raw


