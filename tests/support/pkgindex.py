"""A real package index for tests: generated wheels served on 127.0.0.1.

``make_wheel`` writes a small but genuine wheel (METADATA with Requires-Dist,
WHEEL with its tag, RECORD with sha256 hashes) that pip and uv install like
any other. ``IndexServer`` serves a folder tree as PEP 503 (HTML) and PEP 691
(JSON) simple indexes with PEP 658/714 ``.metadata`` files, the way
download.pytorch.org does, so resolve/install/matrix-refresh are tested
against the same protocol they meet in the field, never a mock.

Layout: every folder under ``root`` that holds ``*.whl`` (or ``*.tar.gz`` sdist) files is an index,
named by its path relative to ``root``::

    root/whl/rocm6.2/torch-2.5.1+rocm6.2-cp311-cp311-manylinux_2_28_x86_64.whl
    -> index  http://127.0.0.1:PORT/whl/rocm6.2/
    -> page   http://127.0.0.1:PORT/whl/rocm6.2/torch/
    -> file   http://127.0.0.1:PORT/whl/rocm6.2/torch-2.5.1%2Brocm6.2-...whl

Nothing here touches the network beyond 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import sys
import threading
import zipfile
from collections.abc import Mapping, Sequence
from email.parser import Parser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

# The tag of wheels built for the interpreter running the tests (CPython on
# x86_64 Linux here; glibc >= 2.28 so manylinux_2_28 installs).
PY_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
PLATFORM_TAG = f"{PY_TAG}-{PY_TAG}-manylinux_2_28_x86_64"

# A fixed timestamp makes a wheel's bytes (and so its hash) reproducible.
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def normalize(name: str) -> str:
    """PEP 503 project name normalisation ("Pytorch_Triton.ROCm" -> "pytorch-triton-rocm")."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_name(name: str) -> str:
    """The distribution part of a wheel filename ("pytorch-triton-rocm" -> "pytorch_triton_rocm")."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_wheel(
    dest_dir: Path,
    name: str,
    version: str,
    *,
    tag: str = "py3-none-any",
    requires: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
    requires_python: str | None = None,
    provides_extra: Sequence[str] = (),
) -> Path:
    """Write a real, installable wheel and return its path.

    ``files`` maps paths inside the wheel to their text; by default the wheel
    holds an importable package named after the project (dashes become
    underscores) whose ``__version__`` is ``version``.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    dist = _wheel_name(name)
    if files is None:
        files = {f"{dist}/__init__.py": f'__version__ = "{version}"\n'}
    dist_info = f"{dist}-{version}.dist-info"
    meta_lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta_lines.append(f"Requires-Python: {requires_python}")
    meta_lines += [f"Provides-Extra: {extra}" for extra in provides_extra]
    meta_lines += [f"Requires-Dist: {req}" for req in requires]
    metadata = "\n".join(meta_lines) + "\n\n"
    purelib = tag.endswith("-none-any")
    wheel_meta = (
        "Wheel-Version: 1.0\n"
        "Generator: rocmkit-tests (pkgindex)\n"
        f"Root-Is-Purelib: {'true' if purelib else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in _expand_tag(tag))
    )
    entries: list[tuple[str, bytes]] = [(path, text.encode()) for path, text in sorted(files.items())]
    entries.append((f"{dist_info}/METADATA", metadata.encode()))
    entries.append((f"{dist_info}/WHEEL", wheel_meta.encode()))
    top = sorted({p.split("/", 1)[0] for p in files if "/" in p and not p.startswith(dist_info)})
    if top:
        entries.append((f"{dist_info}/top_level.txt", ("\n".join(top) + "\n").encode()))
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))

    out = dest_dir / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return out


def _expand_tag(tag: str) -> list[str]:
    """A compressed tag set ("py2.py3-none-any") as one tag per line, as WHEEL lists them."""
    py, abi, plat = tag.split("-")
    return [f"{p}-{a}-{pl}" for p in py.split(".") for a in abi.split(".") for pl in plat.split(".")]


def torch_files(version: str, *, hip: str | None = None, cuda: str | None = None) -> dict[str, str]:
    """A tiny importable ``torch`` exposing ``__version__``, ``version.hip`` and ``version.cuda``."""
    return {
        "torch/__init__.py": ("from torch import version as version\n__version__ = version.__version__\n"),
        "torch/version.py": (
            f"__version__ = {version!r}\nhip = {hip!r}\ncuda = {cuda!r}\ngit_version = 'test'\n"
        ),
    }


def triton_files(version: str) -> dict[str, str]:
    """A tiny importable ``triton`` (what pytorch-triton-rocm / triton-rocm install)."""
    return {"triton/__init__.py": f"__version__ = {version!r}\n"}


def make_torch_set(
    index_dir: Path,
    torch_version: str,
    *,
    triton: str | None = None,
    hip: str | None = None,
    cuda: str | None = None,
    tag: str = PLATFORM_TAG,
    extra_requires: Sequence[str] = (),
) -> list[Path]:
    """Write torch (and its Triton, when ``triton`` is a pin like "pytorch-triton-rocm==3.1.0")
    into ``index_dir``, wired with the real Requires-Dist; returns the wheel paths."""
    requires = list(extra_requires)
    wheels: list[Path] = []
    if triton:
        requires.append(f"{triton}; platform_system == 'Linux' and platform_machine == 'x86_64'")
        tname, _, tver = triton.partition("==")
        wheels.append(make_wheel(index_dir, tname, tver, tag=tag, files=triton_files(tver)))
    wheels.append(
        make_wheel(
            index_dir,
            "torch",
            torch_version,
            tag=tag,
            requires=requires,
            files=torch_files(torch_version, hip=hip, cuda=cuda),
            requires_python=">=3.9",
        )
    )
    return wheels


_DIGESTS: dict[tuple[str, int, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def sha256_file(path: Path) -> str:
    """The file's sha256, remembered by path, inode, size and mtime: a project page names
    every wheel's digest, and hashing a real 200 MB torch wheel again for each page request
    would make this server, not the installer under test, the slow part."""
    st = path.stat()
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest
    return digest


def _wheel_metadata(path: Path) -> bytes:
    with zipfile.ZipFile(path) as zf:
        for member in zf.namelist():
            if member.endswith(".dist-info/METADATA") and member.count("/") == 1:
                return zf.read(member)
    raise ValueError(f"{path} has no METADATA")


def _project_of(filename: str) -> str:
    if filename.endswith(SDIST):
        return normalize(filename[: -len(SDIST)].rsplit("-", 1)[0])
    return normalize(filename.split("-", 1)[0])


SDIST = ".tar.gz"


def _dists(folder: Path) -> list[Path]:
    """The wheels and sdists a folder serves."""
    return sorted([*folder.glob("*.whl"), *folder.glob("*" + SDIST)])


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet; requests are recorded in IndexServer.requests

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _serve(self, *, head: bool) -> None:
        owner = self.server.owner
        path = unquote(urlsplit(self.path).path)
        if owner.auth is not None and self.headers.get("Authorization") != owner.auth:
            # An authenticated mirror: 401 with a Basic challenge, as Artifactory and devpi answer.
            with owner._lock:
                owner.refused.append(path)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="rocmkit-tests"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with owner._lock:
            owner.requests.append(path)
            cut = owner._stop_at is not None and path.endswith(owner._stop_at)
            if cut:
                owner._stop_at = None
        hold = False
        with owner._lock:
            if owner._hold_at is not None and path.endswith(owner._hold_at):
                owner._hold_skip -= 1
                hold = owner._hold_skip < 0
        if hold:
            # Stall this download (a slow mirror), so a test can act while the installer waits.
            owner.held.set()
            owner._release.wait(timeout=120)
        if cut:
            # Go away mid-install: this request gets no answer, later ones are refused.
            self.close_connection = True
            threading.Thread(target=owner.stop_serving, daemon=True).start()
            return
        moved = next((to + path[len(p) :] for p, to in owner.redirect.items() if path.startswith(p)), None)
        if moved is not None:
            # A mirror that sends its pages elsewhere (another host, say).
            self.send_response(302)
            self.send_header("Location", moved)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            status, ctype, body = owner._respond(path, self.headers.get("Accept", ""))
        except OSError:
            status, ctype, body = 500, "text/plain", b"error"
        # An ETag on every answer and 304 for a matching If-None-Match, as real indexes do.
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if status == 200 and self.headers.get("If-None-Match") == etag:
            status, body = 304, b""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if status in (200, 304):
            self.send_header("ETag", etag)
        self.end_headers()
        if not head:
            self.wfile.write(body)
        trigger = owner._stop_after
        if trigger is not None and path.endswith(trigger):
            owner._stop_after = None
            # Stop from another thread: shutdown() waits for the serve loop.
            threading.Thread(target=owner.stop_serving, daemon=True).start()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: IndexServer


class IndexServer:
    """Serve ``root`` as PEP 503/691 simple indexes with PEP 658 metadata on 127.0.0.1."""

    def __init__(
        self, root: Path, *, legacy_metadata: bool = True, basic_auth: tuple[str, str] | None = None
    ) -> None:
        self.root = Path(root)
        # ("user", "token"): every request without that HTTP Basic Authorization gets 401.
        self.auth = (
            None
            if basic_auth is None
            else "Basic " + base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode()
        )
        self.refused: list[str] = []  # paths answered 401
        # PEP 658's first attribute name (data-dist-info-metadata) as well as PEP 714's.
        # pip 23.0 (Debian bookworm's) mishandles the first, which is why PyPI serves
        # only data-core-metadata; False serves what PyPI does.
        self.legacy_metadata = legacy_metadata
        self.requests: list[str] = []
        # Projects answered 200 with a page that lists no file (an index saying "none" its own way).
        self.empty: set[str] = set()
        # Path prefix -> where a request under it is redirected (302 to that URL + the rest of the path).
        self.redirect: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop_after: str | None = None
        self._stop_at: str | None = None
        self._hold_at: str | None = None
        self._hold_skip = 0
        self._release = threading.Event()
        self.held = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------
    def __enter__(self) -> IndexServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_serving()

    def start(self) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def index_url(self, name: str) -> str:
        """The simple-index URL of ``root/<name>`` ("whl/rocm6.2" -> "http://.../whl/rocm6.2/")."""
        return f"{self.url}/{name.strip('/')}/"

    def hold_at(self, path_end: str, *, skip: int = 0) -> None:
        """Stall every request whose path ends with ``path_end``, after the first ``skip``
        of them (pip's dry run fetches a wheel too), until :meth:`release` (at most 120 s);
        ``held`` is set once one arrives."""
        self._hold_at = path_end
        self._hold_skip = skip

    def release(self) -> None:
        self._hold_at = None
        self._release.set()

    def stop_serving(self) -> None:
        self._release.set()  # a stalled request must not keep shutdown() waiting
        """Close the listening socket: later connections are refused (the index "went away")."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def stop_after(self, path_end: str) -> None:
        """Stop serving right after the first request whose path ends with ``path_end``
        (e.g. one wheel's filename: the index goes away in the middle of an install)."""
        self._stop_after = path_end

    def stop_at(self, path_end: str) -> None:
        """Go away when a request's path ends with ``path_end``: that request gets no
        answer (the connection drops) and later connections are refused."""
        self._stop_at = path_end

    # -- content ---------------------------------------------------------
    def _respond(self, path: str, accept: str) -> tuple[int, str, bytes]:
        rel = path.strip("/")
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root.resolve()):
            return 404, "text/plain", b"not found"
        if target.is_file():
            return 200, "application/octet-stream", target.read_bytes()
        if path.endswith(".whl.metadata"):
            wheel = target.with_name(target.name[: -len(".metadata")])
            if wheel.is_file():
                return 200, "text/plain", _wheel_metadata(wheel)
            return 404, "text/plain", b"not found"
        want_json = JSON_TYPE in accept
        if target.is_dir() and _dists(target):
            return self._root_page(target, want_json)
        parent = target.parent
        if parent.is_dir() and _dists(parent):
            wheels = [w for w in _dists(parent) if _project_of(w.name) == normalize(target.name)]
            if wheels:
                return self._project_page(parent, normalize(target.name), wheels, want_json)
            if normalize(target.name) in self.empty:
                return self._project_page(parent, normalize(target.name), [], want_json)
        return 404, "text/plain", b"not found"

    def _root_page(self, index: Path, want_json: bool) -> tuple[int, str, bytes]:
        projects = sorted({_project_of(w.name) for w in _dists(index)})
        if want_json:
            data = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in projects]}
            return 200, JSON_TYPE, json.dumps(data).encode()
        links = "".join(f'<a href="{quote(p)}/">{html.escape(p)}</a>\n' for p in projects)
        page = f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"
        return 200, "text/html", page.encode()

    def _project_page(
        self, index: Path, project: str, wheels: list[Path], want_json: bool
    ) -> tuple[int, str, bytes]:
        files: list[dict[str, Any]] = []
        links: list[str] = []
        for wheel in wheels:
            if wheel.name.endswith(SDIST):
                # An sdist: no core metadata file (installers build it to learn its dependencies).
                digest = sha256_file(wheel)
                href = f"../{quote(wheel.name)}"
                files.append({"filename": wheel.name, "url": href, "hashes": {"sha256": digest}})
                links.append(f'<a href="{href}#sha256={digest}">{html.escape(wheel.name)}</a><br/>\n')
                continue
            meta = _wheel_metadata(wheel)
            meta_sha = hashlib.sha256(meta).hexdigest()
            digest = sha256_file(wheel)
            requires_python = Parser().parsestr(meta.decode()).get("Requires-Python")
            href = f"../{quote(wheel.name)}"
            files.append(
                {
                    "filename": wheel.name,
                    "url": href,
                    "hashes": {"sha256": digest},
                    "requires-python": requires_python,
                    "core-metadata": {"sha256": meta_sha},
                }
            )
            attrs = f' data-core-metadata="sha256={meta_sha}"'
            if self.legacy_metadata:
                files[-1]["dist-info-metadata"] = {"sha256": meta_sha}
                attrs = f' data-dist-info-metadata="sha256={meta_sha}"{attrs}'
            if requires_python:
                attrs += f' data-requires-python="{html.escape(requires_python)}"'
            links.append(f'<a href="{href}#sha256={digest}"{attrs}>{html.escape(wheel.name)}</a><br/>\n')
        if want_json:
            data = {"meta": {"api-version": "1.1"}, "name": project, "files": files}
            return 200, JSON_TYPE, json.dumps(data).encode()
        page = (
            f"<!DOCTYPE html>\n<html><body>\n<h1>Links for {project}</h1>\n{''.join(links)}</body></html>\n"
        )
        return 200, "text/html", page.encode()


# An in-tree PEP 517 backend (standard library only): building needs torch and nothing else, so
# no setuptools is fetched. It records torch.__version__ as the build saw it.
_RECORDER_BACKEND = """
import base64, hashlib, io, os, zipfile

NAME, VERSION = "{name}", "{version}"
DIST = NAME.replace("-", "_")


def get_requires_for_build_wheel(config_settings=None):
    return []


def _hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    import torch  # the torch this build sees

    info = f"{{DIST}}-{{VERSION}}.dist-info"
    files = {{
        f"{{DIST}}/__init__.py": f"BUILT_WITH = {{str(torch.__version__)!r}}\\n".encode(),
        f"{{info}}/METADATA": f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\nRequires-Dist: torch\\n\\n".encode(),
        f"{{info}}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: recorder\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }}
    record = "".join(f"{{p}},{{_hash(d)}},{{len(d)}}\\n" for p, d in files.items()) + f"{{info}}/RECORD,,\\n"
    files[f"{{info}}/RECORD"] = record.encode()
    name = f"{{DIST}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return name
"""


def make_torch_recording_sdist(dest_dir: Path, name: str = "recordtorch", version: str = "1.0") -> Path:
    """An sdist whose build imports torch and writes ``torch.__version__`` into the package
    (``import recordtorch; recordtorch.BUILT_WITH``): which torch a build really saw."""
    import io
    import tarfile

    dest_dir.mkdir(parents=True, exist_ok=True)
    dist = _wheel_name(name)
    root = f"{dist}-{version}"
    members = {
        "pyproject.toml": (
            "[build-system]\n"
            'requires = ["torch"]\n'
            'build-backend = "recorder_backend"\n'
            'backend-path = ["."]\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n'
        ),
        "recorder_backend.py": _RECORDER_BACKEND.format(name=name, version=version),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    out = dest_dir / f"{dist}-{version}{SDIST}"
    with tarfile.open(out, "w:gz") as tf:
        for path, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size = len(data)
            info.mtime = 1704067200
            tf.addfile(info, io.BytesIO(data))
    return out


def closed_port() -> int:
    """A 127.0.0.1 port with nothing listening (bound, then released): a dead index."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
