"""Set this node's rocmkit labels through the Kubernetes API, from inside a pod.

The manifests in ``scripts/k8s/`` run the doctor on a schedule in the rocmkit image; that image
has no kubectl, and a kubectl image has no shell to loop in (``registry.k8s.io/kubectl`` is
shell-free; the Bitnami one is no longer published). So rocmkit sends the one request a label
update needs itself: a JSON merge patch of ``metadata.labels`` to ``/api/v1/nodes/NAME``, over
TLS checked against the pod's service-account CA, with its token. Every rocmkit label is in
the patch, those the report does not give as ``null``, so a node that stops passing loses
``doctor=pass`` and its other stale labels in the same request (merge-patch semantics, RFC 7386).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rocmkit.errors import NetworkError, UsageError

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TIMEOUT_S = 15.0
MAX_ANSWER_BYTES = 1 << 20


@dataclass(frozen=True, kw_only=True)
class InCluster:
    """Where the API server is and how to authenticate to it, from the pod's environment."""

    url: str
    token: str
    ca_file: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> InCluster:
        env = os.environ if environ is None else environ
        host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "443")
        # ROCMKIT_KUBE_SERVICEACCOUNT: the token and ca.crt somewhere else (a projected volume).
        folder = Path(env.get("ROCMKIT_KUBE_SERVICEACCOUNT") or SERVICE_ACCOUNT)
        if not host:
            raise UsageError(
                "KUBERNETES_SERVICE_HOST is not set: --apply-to-node works only inside a Kubernetes pod",
                "run it in the pod of scripts/k8s/daemonset.yaml or job.yaml, or print the labels without it",
            )
        try:
            token = (folder / "token").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"cannot read the service account token in {folder}: {getattr(exc, 'strerror', exc)}",
                "give the pod a service account (scripts/k8s/rbac.yaml) with automountServiceAccountToken",
            ) from None
        if not port.isdigit():
            raise UsageError(f"KUBERNETES_SERVICE_PORT={port!r} is not a port number", "unset it or fix it")
        bracketed = f"[{host}]" if ":" in host else host
        return cls(url=f"https://{bracketed}:{port}", token=token, ca_file=folder / "ca.crt")


def label_patch(labels: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, object]:
    """A merge patch that sets ``labels`` and removes every other key of ``keys``."""
    merged: dict[str, str | None] = {key: None for key in keys}
    merged.update(labels)
    return {"metadata": {"labels": merged}}


def patch_node(node: str, patch: Mapping[str, object], where: InCluster, *, timeout: float = TIMEOUT_S) -> None:
    """PATCH the node object; one NetworkError (exit 9) or UsageError line on failure."""
    import ssl
    from urllib.error import HTTPError, URLError
    from urllib.request import Request, urlopen

    url = f"{where.url}/api/v1/nodes/{quote(node, safe='')}"
    try:
        context = ssl.create_default_context(cafile=str(where.ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"cannot load the cluster CA {where.ca_file}: {exc}", "mount the service account's ca.crt"
        ) from None
    request = Request(
        url,
        data=json.dumps(patch).encode("utf-8"),
        method="PATCH",
        headers={
            "Content-Type": "application/merge-patch+json",
            "Accept": "application/json",
            "Authorization": f"Bearer {where.token}",
            "User-Agent": "rocmkit",
        },
    )
    try:
        with urlopen(request, context=context, timeout=timeout) as resp:
            resp.read(MAX_ANSWER_BYTES)
    except HTTPError as exc:
        exc.close()  # its response's socket
        if exc.code in (401, 403):
            raise UsageError(
                f"the API server refused to patch node {node} (HTTP {exc.code})",
                "apply scripts/k8s/rbac.yaml: the pod's service account needs get and patch on nodes",
            ) from None
        raise NetworkError(f"patching node {node} at {where.url} failed: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NetworkError(f"the Kubernetes API at {where.url} did not answer: {reason}") from None
