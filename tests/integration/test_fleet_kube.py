"""`rocmkit fleet labels --apply-to-node` against a real HTTPS server on 127.0.0.1 that
checks the bearer token, as the API server does: one merge patch that sets the report's
labels and removes rocmkit's stale ones; a refusal or no report is one line, and a node
whose report cannot be read is left with doctor=unknown, never a stale pass."""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rocmkit.doctor.result import Status
from rocmkit.fleet.labels import KEYS
from rocmkit.machine import Gpu
from rocmkit.proc.runner import run
from tests.support.cli import rocmkit
from tests.unit.test_fleet_labels import _report

pytestmark = [pytest.mark.integration]
TOKEN = "sa-token-for-the-test"
REPO = Path(__file__).resolve().parents[2]


class _Api(ThreadingHTTPServer):
    patches: list[tuple[str, str, dict[str, Any]]]
    status: int


class _Handler(BaseHTTPRequestHandler):
    server: _Api

    def do_PATCH(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self.send_response(401)
            self.end_headers()
            return
        self.server.patches.append((self.path, self.headers.get("Content-Type", ""), json.loads(body)))
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[_Api, dict[str, str]]]:
    """The API server stand-in with a self-signed certificate for 127.0.0.1, and the pod
    environment (service host, port, the service account folder with token and CA)."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    cert, key = sa / "ca.crt", tmp_path / "key.pem"
    made = run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        timeout=60,
    )
    assert made.ok, made.describe()
    (sa / "token").write_text(TOKEN + "\n")
    server = _Api(("127.0.0.1", 0), _Handler)
    server.patches, server.status = [], 200
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(server.server_address[1]),
        "ROCMKIT_KUBE_SERVICEACCOUNT": str(sa),
    }
    try:
        yield server, env
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _write(tmp_path: Path, status: Status) -> Path:
    gpus = tuple(Gpu(vendor="amd", index=i, arch="gfx942") for i in range(8))
    path = tmp_path / "n1.json"
    path.write_text(json.dumps(_report(status, gpus, "2.5.1+rocm6.2").to_dict()))
    return path


def test_labels_are_set_and_stale_ones_removed_in_one_patch(
    api: tuple[_Api, dict[str, str]], tmp_path: Path
) -> None:
    server, env = api
    res = rocmkit("fleet", "labels", str(_write(tmp_path, Status.PASS)), "--apply-to-node", "gpu-7", env=env)
    assert res.code == 0, res.stderr
    ((path, ctype, patch),) = server.patches
    assert path == "/api/v1/nodes/gpu-7" and ctype == "application/merge-patch+json"
    labels = patch["metadata"]["labels"]
    assert labels["rocmkit.io/doctor"] == "pass" and labels["rocmkit.io/gfx"] == "gfx942"
    assert set(labels) == {f"rocmkit.io/{k}" for k in KEYS}
    # The node stops passing and its torch is gone from the report: the label goes too.
    failing = _report(Status.FAIL, (), None)
    (tmp_path / "n1.json").write_text(json.dumps(failing.to_dict()))
    assert (
        rocmkit("fleet", "labels", str(tmp_path / "n1.json"), "--apply-to-node", "gpu-7", env=env).code == 0
    )
    labels = server.patches[-1][2]["metadata"]["labels"]
    assert labels["rocmkit.io/doctor"] == "fail" and labels["rocmkit.io/torch"] is None
    assert labels["rocmkit.io/gfx"] is None


def test_no_readable_report_leaves_doctor_unknown_and_says_why(
    api: tuple[_Api, dict[str, str]], tmp_path: Path
) -> None:
    server, env = api
    broken = tmp_path / "n1.json"
    broken.write_text("{not json")
    res = rocmkit("fleet", "labels", str(broken), "--apply-to-node", "gpu-7", env=env)
    assert res.code == 5 and "Traceback" not in res.stderr
    said, error, *fixes = res.stderr.strip().splitlines()
    assert all(f.startswith("fix: ") for f in fixes)
    assert said == "rocmkit: node gpu-7 labelled rocmkit.io/doctor=unknown"
    assert error.startswith(f"error: {broken} is not valid JSON")
    labels = server.patches[-1][2]["metadata"]["labels"]
    assert labels == {f"rocmkit.io/{k}": ("unknown" if k == "doctor" else None) for k in KEYS}


def test_refusals_and_a_wrong_place_are_one_line(api: tuple[_Api, dict[str, str]], tmp_path: Path) -> None:
    server, env = api
    report = _write(tmp_path, Status.PASS)
    server.status = 403
    res = rocmkit("fleet", "labels", str(report), "--apply-to-node", "gpu-7", env=env)
    assert res.code == 4 and "refused to patch node gpu-7 (HTTP 403)" in res.one_line_error()
    wrong_token = {**env, "ROCMKIT_KUBE_SERVICEACCOUNT": str(tmp_path / "none")}
    res = rocmkit("fleet", "labels", str(report), "--apply-to-node", "gpu-7", env=wrong_token)
    assert res.code == 4 and "cannot read the service account token" in res.one_line_error()
    outside = {**env, "KUBERNETES_SERVICE_HOST": None}
    res = rocmkit("fleet", "labels", str(report), "--apply-to-node", "gpu-7", env=outside)
    assert res.code == 4 and "only inside a Kubernetes pod" in res.one_line_error()
    # A server that is not the cluster's (another CA) is not talked to.
    other = tmp_path / "other-ca"
    other.mkdir()
    (other / "token").write_text(TOKEN)
    (other / "ca.crt").write_text(
        (Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")).read_text()
    )
    res = rocmkit(
        "fleet",
        "labels",
        str(report),
        "--apply-to-node",
        "gpu-7",
        env={**env, "ROCMKIT_KUBE_SERVICEACCOUNT": str(other)},
    )
    assert res.code == 9 and "did not answer" in res.one_line_error()
    assert TOKEN not in res.stderr


def test_the_manual_script_knows_every_label_rocmkit_sets() -> None:
    text = (REPO / "scripts" / "k8s" / "label-node.sh").read_text()
    found = re.search(r"for key in ([a-z -]+); do", text)
    assert found and tuple(found.group(1).split()) == KEYS
