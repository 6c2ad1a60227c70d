"""Serve the recorded PyPI pages (tests/data/upstream/pypi) on 127.0.0.1, as PyPI would.

Project pages come from the recorded PEP 691 JSON (real filenames, sizes, upload
times), as JSON or as PEP 503 HTML by the Accept header. Wheel URLs point here;
each "wheel" is a real zip holding the recorded ``METADATA`` (and padding, so
its central directory is not at offset 0), built on first request. Modes:

* ``pep658``: pages advertise ``core-metadata`` and ``<wheel>.metadata`` is served;
* ``range``:  no metadata files, but wheel requests honour ``Range`` (206), as PyPI's CDN does;
* ``none``:   neither: Range is ignored and the whole body is sent (200);
* ``garbage`` / ``html-error`` / ``huge`` / ``trickle``: the project pages answer
  bytes that are not JSON, an HTML error page, 50 MB, or one byte every 0.2 s;
* ``bomb``: as ``range``, but each wheel's METADATA is a zip bomb (2 MB of deflate that
  inflates to 2 GiB, its directory claiming 2 KiB);
* ``redirect``: project pages asked of 127.0.0.1 answer 302 to the same page on
  ``localhost`` (another host name), which serves them.

``bytes_sent`` counts wheel bytes sent, so a test can prove a wheel was never
downloaded whole.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import re
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _dist_info(filename: str) -> str:
    name, version = filename.split("-")[:2]
    return f"{name}-{version}.dist-info/METADATA"


class RecordedIndex:
    def __init__(self, pypi: Path, mode: str = "pep658", *, basic_auth: tuple[str, str] | None = None) -> None:
        self.pypi = pypi
        self.mode = mode
        # ("user", "token"): every request without that HTTP Basic Authorization gets 401.
        self.auth = None if basic_auth is None else "Basic " + base64.b64encode(":".join(basic_auth).encode()).decode()
        self.refused: list[str] = []
        self.requests: list[str] = []
        self.bytes_sent = 0
        self.full_wheel_bodies = 0
        self._zips: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -------------------------------------------------------
    def __enter__(self) -> RecordedIndex:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    # -- content ---------------------------------------------------------
    def _page(self, project: str) -> dict[str, Any] | None:
        file = self.pypi / f"{project}.json"
        if not file.is_file():
            return None
        data: dict[str, Any] = json.loads(file.read_text())
        base = self.url.rsplit("/", 1)[0]
        for f in data["files"]:
            f["url"] = f"{base}/files/{quote(f['filename'])}"
            if self.mode == "pep658" and (self.pypi / "metadata" / f"{f['filename']}.metadata").is_file():
                f["core-metadata"] = True
        return data

    def _wheel(self, filename: str) -> bytes | None:
        meta = self.pypi / "metadata" / f"{filename}.metadata"
        if not meta.is_file():
            return None
        with self._lock:
            if filename not in self._zips and self.mode == "bomb":
                from tests.support.zipbomb import deflate_bomb, zip_with

                padding = bytes(range(256)) * 2048
                self._zips[filename] = zip_with(
                    [("torch/_padding.bin", padding, 0, len(padding)), (_dist_info(filename), deflate_bomb(2 << 30), 8, 2048)]
                )
            if filename not in self._zips:
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                    # A member before METADATA, as in a real wheel (code first, dist-info last).
                    zf.writestr(
                        "torch/_padding.bin", bytes(range(256)) * 2048, compress_type=zipfile.ZIP_STORED
                    )
                    zf.writestr(_dist_info(filename), meta.read_text())
                self._zips[filename] = buf.getvalue()
            return self._zips[filename]

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(h.path).path)
        if self.auth is not None and h.headers.get("Authorization") != self.auth:
            self.refused.append(path)
            h.send_response(401)
            h.send_header("WWW-Authenticate", 'Basic realm="rocmkit-tests"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return None
        self.requests.append(path)
        m = re.fullmatch(r"/simple/([^/]+)/", path)
        if m and self.mode == "redirect" and h.headers.get("Host", "").startswith("127.0.0.1"):
            h.send_response(302)
            h.send_header("Location", f"http://localhost:{self.port}{path}")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return None
        if m:
            return self._serve_page(h, m.group(1))
        m = re.fullmatch(r"/files/(.+\.whl)\.metadata", path)
        if m and self.mode == "pep658":
            meta = self.pypi / "metadata" / f"{m.group(1)}.metadata"
            if meta.is_file():
                return self._send(h, 200, "text/plain", meta.read_bytes())
        m = re.fullmatch(r"/files/(.+\.whl)", path)
        if m:
            body = self._wheel(m.group(1))
            if body is not None:
                return self._serve_wheel(h, body)
        return self._send(h, 404, "text/plain", b"not found")

    def _serve_page(self, h: BaseHTTPRequestHandler, project: str) -> None:
        if self.mode == "garbage":
            return self._send(h, 200, JSON_TYPE, b"\x00\x01 this is not json {")
        if self.mode == "html-error":
            return self._send(h, 200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")
        if self.mode == "huge":
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.end_headers()
            try:
                chunk = b"<a>" + b"x" * 65533
                for _ in range(50 * 16):  # 50 MB
                    h.wfile.write(chunk)
            except OSError:
                pass  # the client hung up, as it should
            return None
        if self.mode == "trickle":
            h.send_response(200)
            h.send_header("Content-Type", JSON_TYPE)
            h.end_headers()
            try:
                for byte in b'{"files": []}' * 100:
                    h.wfile.write(bytes([byte]))
                    h.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            return None
        data = self._page(project)
        if data is None:
            return self._send(h, 404, "text/plain", b"not found")
        if JSON_TYPE in h.headers.get("Accept", ""):
            return self._send(h, 200, JSON_TYPE, json.dumps(data).encode())
        links = "".join(
            f'<a href="{html.escape(f["url"])}"'
            + (' data-core-metadata="true"' if f.get("core-metadata") else "")
            + f">{html.escape(f['filename'])}</a><br/>\n"
            for f in data["files"]
        )
        page = f'<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.1"></head><body>\n{links}</body></html>'
        return self._send(h, 200, "text/html", page.encode())

    def _serve_wheel(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        rng = h.headers.get("Range")
        if rng and self.mode != "none":
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
            if m:
                size = len(body)
                if m.group(1) == "":
                    start, end = max(0, size - int(m.group(2))), size - 1
                else:
                    start = int(m.group(1))
                    end = min(size - 1, int(m.group(2))) if m.group(2) else size - 1
                part = body[start : end + 1]
                h.send_response(206)
                h.send_header("Content-Type", "application/octet-stream")
                h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                h.send_header("Content-Length", str(len(part)))
                h.end_headers()
                h.wfile.write(part)
                self.bytes_sent += len(part)
                return
        self.full_wheel_bodies += 1
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            h.wfile.write(body)
            self.bytes_sent += len(body)
        except OSError:
            pass

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)
