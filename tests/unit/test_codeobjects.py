"""The gfx targets of a ROCm library read from its code objects (clang offload bundles), on real
bytes of the bitsandbytes 0.50.2 wheel and on bundles built here per the documented format; the
wheel read by range requests from a server on 127.0.0.1; companions.toml held to it offline."""

from __future__ import annotations

import io
import shutil
import struct
import sys
import threading
import zipfile
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rocmkit.pkgindex.codeobjects import (
    CodeObjectError,
    bundle_ids,
    bundles,
    hip_fatbin,
    library_targets,
    rocm_of,
    targets,
    wheel_targets,
)

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "data" / "upstream"
WHEEL = "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"
RECORDED = RECORDING / "pypi" / "wheels" / WHEEL / "bitsandbytes"
ROCM_64_72 = ("gfx1030", "gfx908")  # what the build script's list lacks, per the issue


def _recorded(lib: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((RECORDED / lib).glob("*.bundle"))]


def test_real_compressed_bundles_of_the_wheel_name_their_targets() -> None:
    (first, second) = _recorded("libbitsandbytes_rocm72.so")
    assert first[:4] == b"CCOB" and struct.unpack_from("<HH", first, 4) == (3, 1)  # version 3, zstd
    ids = bundle_ids(first)
    assert ids[0] == "host-x86_64-unknown-linux-gnu-"
    assert "hipv4-amdgcn-amd-amdhsa--gfx908" in ids and "hipv4-amdgcn-amd-amdhsa--gfx1030" in ids
    assert targets(ids) == targets(bundle_ids(second))
    assert set(ROCM_64_72) <= set(targets(ids)) and "gfx1010" not in targets(ids)
    v2 = _recorded("libbitsandbytes_rocm64.so")[0]
    assert struct.unpack_from("<H", v2, 4)[0] == 2 and set(ROCM_64_72) <= set(targets(bundle_ids(v2)))
    new = targets(bundle_ids(_recorded("libbitsandbytes_rocm714.so")[0]))
    assert {"gfx1010", "gfx1011", "gfx1012", "gfx1036", "gfx1250"} <= set(new)


def _plain(entries: list[tuple[str, bytes]]) -> bytes:
    """A clang offload bundle per clang/docs/ClangOffloadBundler.rst (built here, not real)."""
    head = len(b"__CLANG_OFFLOAD_BUNDLE__") + 8 + sum(24 + len(i) for i, _ in entries)
    table, blobs, at = b"", b"", head
    for ident, code in entries:
        table += struct.pack("<QQQ", at, len(code), len(ident)) + ident.encode()
        blobs += code
        at += len(code)
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries)) + table + blobs


def _zstd(plain: bytes) -> bytes:
    """zstd as the reader gets it: the standard library's from 3.14, else the `zstandard` package,
    which the test extra installs, so a missing one fails here rather than skipping the CCOB cases."""
    if sys.version_info >= (3, 14):
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]

        return bytes(zstd.compress(plain))
    import zstandard  # type: ignore[import-not-found,unused-ignore]

    return bytes(zstandard.ZstdCompressor().compress(plain))


def _ccob(plain: bytes, version: int, method: int) -> bytes:
    """The compressed form per llvm/include/llvm/Object/OffloadBundle.h (built here, not real)."""
    payload = zlib.compress(plain) if method == 0 else _zstd(plain)
    sizes = {
        1: struct.pack("<I", len(plain)),
        2: struct.pack("<II", 24 + len(payload), len(plain)),
        3: struct.pack("<QQ", 32 + len(payload), len(plain)),
    }[version]
    return b"CCOB" + struct.pack("<HH", version, method) + sizes + struct.pack("<Q", 0) + payload


def _elf(section: bytes) -> bytes:
    """A 64-bit little-endian ELF file with a .hip_fatbin and a .shstrtab section (built here)."""
    names = b"\0.hip_fatbin\0.shstrtab\0"
    fat_off = 0x1000
    str_off = fat_off + len(section)
    shoff = -(-(str_off + len(names)) // 8) * 8
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 3, 0xE0, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 3, 2)
    null = bytes(64)
    fat = struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, fat_off, len(section), 0, 0, 4096, 0)
    strtab = struct.pack("<IIQQQQIIQQ", 12, 3, 0, 0, str_off, len(names), 0, 0, 1, 0)
    body = header.ljust(fat_off, b"\0") + section + names
    return body.ljust(shoff, b"\0") + null + fat + strtab


def _section(*bundle: bytes) -> bytes:
    return b"".join(b.ljust(-(-len(b) // 4096) * 4096, b"\0") for b in bundle)


CODE = b"\x7fELF" + b"\0" * 60  # stands for a device code object; only the ids are read
HOST = ("host-x86_64-unknown-linux-gnu-", b"")


@pytest.mark.parametrize(("version", "method"), [(1, 0), (2, 0), (3, 0), (2, 1), (3, 1)])
def test_bundles_built_per_the_documented_format(version: int, method: int) -> None:
    plain = _plain([HOST, ("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", CODE), ("hip-amdgcn-amd-amdhsa-gfx906", CODE)])
    assert targets(bundle_ids(plain)) == ("gfx906", "gfx90a")
    assert targets(bundle_ids(_ccob(plain, version, method))) == ("gfx906", "gfx90a")


def test_a_library_carries_the_targets_every_bundle_has() -> None:
    a = _ccob(_plain([HOST, ("hipv4-amdgcn-amd-amdhsa--gfx942", CODE), ("hipv4-amdgcn-amd-amdhsa--gfx90a", CODE)]), 3, 0)
    b = _plain([HOST, ("hipv4-amdgcn-amd-amdhsa--gfx942", CODE)])
    elf = _elf(_section(a, b))
    assert hip_fatbin(elf) is not None and len(list(bundles(hip_fatbin(elf) or b""))) == 2
    assert library_targets(elf) == ("gfx942",)  # gfx90a lacks the second bundle's kernels


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"not an elf at all" * 8, "not a 64-bit little-endian ELF"),
        (_elf(b""), "holds no offload bundle"),
    ],
)
def test_libraries_that_are_not_what_they_claim(data: bytes, said: str) -> None:
    with pytest.raises(CodeObjectError, match=said):
        library_targets(data)


def test_bundles_that_are_cut_or_lie_are_refused() -> None:
    plain = _plain([HOST, ("hipv4-amdgcn-amd-amdhsa--gfx942", CODE)])
    with pytest.raises(CodeObjectError, match="cut short"):
        bundle_ids(plain[:40])
    with pytest.raises(CodeObjectError, match="claims"):
        bundle_ids(plain[:24] + struct.pack("<Q", 1 << 40) + plain[32:])
    with pytest.raises(CodeObjectError, match="unknown version"):
        bundle_ids(b"CCOB" + struct.pack("<HH", 9, 1) + bytes(64))
    with pytest.raises(CodeObjectError, match="unknown method"):
        bundle_ids(b"CCOB" + struct.pack("<HH", 3, 7) + bytes(64))
    # A zlib stream that inflates far past the entry table: only HEAD_CAP bytes are inflated.
    bomb = _ccob(plain + bytes(64 << 20), 3, 0)
    assert targets(bundle_ids(bomb)) == ("gfx942",)


def test_rocm_of_a_library_name() -> None:
    assert rocm_of("bitsandbytes/libbitsandbytes_rocm714.so") == "7.14"
    assert rocm_of("bitsandbytes/libbitsandbytes_rocm64.so") == "6.4"
    assert rocm_of("bitsandbytes/libbitsandbytes_cuda126.so") is None


# ------------------------------------------------------------------ the wheel, by range requests


class _RangeServer:
    """Serves one wheel on 127.0.0.1, honouring Range as PyPI's CDN does; counts bytes sent."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.sent = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                size = len(outer.body)
                spec = (self.headers.get("Range") or "").removeprefix("bytes=")
                first, _, last = spec.partition("-")
                start = size - int(last) if not first else int(first)
                end = size - 1 if not first or not last else min(int(last), size - 1)
                chunk = outer.body[max(start, 0) : end + 1]
                outer.sent += len(chunk)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {max(start, 0)}-{end}/{size}")
                self.send_header("Content-Length", str(len(chunk)))
                self.end_headers()
                self.wfile.write(chunk)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/files/{WHEEL}"


@pytest.fixture
def served() -> Iterator[_RangeServer]:
    # A wheel of libraries whose .hip_fatbin holds the recorded real bundle heads, beside 8 MiB
    # of a library that is no ROCm one (never to be read) and the dist-info.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bitsandbytes/libbitsandbytes_cuda126.so", bytes(range(256)) * 32768, zipfile.ZIP_STORED)
        for lib in ("libbitsandbytes_rocm64.so", "libbitsandbytes_rocm72.so"):
            zf.writestr(f"bitsandbytes/{lib}", _elf(_section(*_recorded(lib))))
        zf.writestr("bitsandbytes-0.50.2.dist-info/METADATA", "Name: bitsandbytes\nVersion: 0.50.2\n")
    srv = _RangeServer(buf.getvalue())
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.server.shutdown()
        srv.server.server_close()


def test_a_wheels_rocm_libraries_read_by_range_requests(served: _RangeServer) -> None:
    read = wheel_targets(served.url, timeout=10)
    assert read is not None and set(read) == {
        "bitsandbytes/libbitsandbytes_rocm64.so",
        "bitsandbytes/libbitsandbytes_rocm72.so",
    }
    assert set(ROCM_64_72) <= set(read["bitsandbytes/libbitsandbytes_rocm72.so"])
    assert "gfx950" not in read["bitsandbytes/libbitsandbytes_rocm64.so"]
    assert served.sent < len(served.body) // 4  # the 8 MiB CUDA library was never read


# ------------------------------------------------------------------ the data, held to the wheel


def test_companions_archs_are_the_wheels_code_objects_offline(tmp_path: Path) -> None:
    from rocmkit.companions.data import parse_companions
    from rocmkit.companions.sourcecheck import check_companion_archs
    from rocmkit.matrix.sourceread import Report, Sources

    rep = Report()
    check_companion_archs(parse_companions(REPO / "matrices"), Sources(RECORDING, offline=True), rep)
    assert rep.not_stated == [] and rep.unreadable == [] and rep.checked == 6  # 6.4 ... 7.15
    # The build script's lists (the data before issue 36) are caught, naming what the wheel has.
    folder = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", folder)
    text = (folder / "companions.toml").read_text()
    text = text.replace('archs = ["gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100"', 'archs = ["gfx90a", "gfx942", "gfx950", "gfx1100"')
    (folder / "companions.toml").write_text(text)
    rep = Report()
    check_companion_archs(parse_companions(folder), Sources(RECORDING, offline=True), rep)
    assert len(rep.not_stated) == 3  # ROCm 7.0, 7.1, 7.2
    assert "libbitsandbytes_rocm72.so carries code objects for gfx1030 " in "\n".join(rep.not_stated)
    # Without the recording, offline: unreadable, said so.
    rep = Report()
    check_companion_archs(parse_companions(REPO / "matrices"), Sources(tmp_path, offline=True), rep)
    assert rep.checked == 0 and len(rep.unreadable) == 3


def test_without_a_zstd_decoder_the_wheel_is_unreadable_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from rocmkit.companions.data import parse_companions
    from rocmkit.datafiles import CheckRequest, check_data

    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails, as where it is not installed
    monkeypatch.setitem(sys.modules, "compression", None)
    lines: list[str] = []

    class Out:
        def data(self, text: str, *, nl: bool = True) -> None:
            lines.append(text)

        def lines(self, more: list[str] | tuple[str, ...]) -> None:
            lines.extend(more)

    assert parse_companions(REPO / "matrices").builds
    check_data(CheckRequest(with_sources=True, offline=True, recording=RECORDING), Out())
    (unreadable,) = [line for line in lines if line.startswith("unreadable:")]
    assert "bnb_wheel_code" in unreadable and "no zstd decoder" in unreadable and "pip install zstandard" in unreadable


def test_the_cli_check_reads_the_wheel_from_the_recording(capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.cli import main

    with pytest.raises(SystemExit) as info:
        main(["matrix", "check", "--sources", "--offline", "--from", str(RECORDING)])
        raise SystemExit(0)
    out = capsys.readouterr().out
    assert info.value.code in (0, None), out
    assert "0 not stated by them; 0 sources could not be read" in out


def test_bitsandbytes_on_a_gfx908_with_rocm_7_2_loads_its_7_2_library_without_a_false_warning() -> None:
    from rocmkit.companions.data import load_companions
    from rocmkit.companions.resolve import resolve_one
    from rocmkit.detect import load_machine
    from rocmkit.resolve import Constraints, resolve

    machine = load_machine(REPO / "tests" / "data" / "captures" / "mi100-gfx908-igpu-gfx1036-rocm5.7")
    plan = resolve(machine, Constraints(python="3.11"))
    assert plan.backend.tag == "rocm7.2" and plan.target_archs == ("gfx908",)
    _package, reasons, warnings, _env = resolve_one("bitsandbytes", plan, machine, load_companions())
    assert not any("7.14" in w for w in warnings), warnings
    assert any("covering gfx908" in r and "7.2" in r for r in reasons), reasons
