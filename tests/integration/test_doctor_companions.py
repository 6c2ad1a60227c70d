"""`companion.*` doctor checks on this CPU machine, against stand-in packages.

The real xformers and flash-attn cannot be installed here (their wheels pull a CUDA torch, and
neither has CPU kernels), so small packages with their names, their public functions and their
build records stand in: some compute the right answer in plain torch, some a wrong one, some
refuse the CPU the way the real ones do, and one carries the build record of the real xformers
0.0.35 wheel (built for torch 2.10.0+cu128). The checks that judge them are the shipped ones, run
by `rocmkit doctor` in its forked worker, with real torch on the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests/data/companions/xformers-0.0.35/cpp_lib.json"

# Attention in plain torch, in the libraries' [batch, seq, heads, dim] layout.
_ATTENTION = (
    "import torch\n"
    "def _attention(q, k, v, wrong=False):\n"
    "    out = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))\n"
    "    out = out.transpose(1, 2)\n"
    "    return out * 1.5 if wrong else out\n"
)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def xformers(root: Path, *, built_for: str) -> None:
    record = json.loads(RECORDED.read_text())
    record["version"]["torch"] = built_for
    record["version"]["cuda"] = None
    write(
        root,
        {
            "xformers/__init__.py": '__version__ = "0.0.35"\n',
            "xformers/cpp_lib.json": json.dumps(record),
            "xformers/ops/__init__.py": _ATTENTION
            + "def memory_efficient_attention(q, k, v):\n    return _attention(q, k, v)\n",
        },
    )


def flash_attn(root: Path, *, mode: str) -> None:
    body = {
        "right": "    return _attention(q, k, v)\n",
        "wrong": "    return _attention(q, k, v, wrong=True)\n",
        # What the real one does with CPU tensors: it has no kernels for them.
        "no-cpu": "    raise RuntimeError('FlashAttention only supports CUDA/ROCm devices; got device cpu')\n",
    }[mode]
    write(
        root,
        {"flash_attn/__init__.py": '__version__ = "2.8.3.post2"\n' + _ATTENTION + "def flash_attn_func(q, k, v):\n" + body},
    )


def bitsandbytes(root: Path, *, scale: float) -> None:
    """bitsandbytes' int8 functional API in plain torch (vector-wise absmax quantisation)."""
    write(
        root,
        {
            "bitsandbytes/__init__.py": '__version__ = "0.50.2"\n',
            "bitsandbytes/cextension.py": "import torch\nHIP_ENVIRONMENT = bool(torch.version.hip)\nBNB_BACKEND = 'CPU'\n",
            "bitsandbytes/functional.py": (
                "import torch\n"
                "def int8_vectorwise_quant(a):\n"
                "    s = a.abs().amax(dim=1, keepdim=True)\n"
                "    return torch.round(a * 127 / s).to(torch.int8), s.squeeze(1), None\n"
                "def int8_linear_matmul(a, b):\n"
                "    return a.to(torch.int32) @ b.to(torch.int32).T\n"
                "def int8_mm_dequant(c, sa, sb):\n"
                f"    return (c.float() * sa[:, None] * sb[None, :] / (127 * 127) * {scale}).half()\n"
            ),
        },
    )


def doctor(fakes: Path) -> dict[str, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(fakes)))}
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", "--level", "1", "--only", "companion", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO,
    )
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    return {r["name"]: r for r in report["results"] if r["name"].startswith("companion.")}


def torch_version() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, timeout=120
    )
    return out.stdout.strip()


def test_fitting_builds_pass_with_their_time_and_a_wrong_answer_fails(tmp_path: Path) -> None:
    xformers(tmp_path, built_for=torch_version())
    flash_attn(tmp_path, mode="wrong")
    bitsandbytes(tmp_path, scale=1.0)
    got = doctor(tmp_path)
    xf, fa, bnb = got["companion.xformers"], got["companion.flash_attn"], got["companion.bitsandbytes"]
    assert xf["status"] == "pass", xf
    assert "xformers attention (2x128x4x64, float32) agrees with torch's SDPA" in str(xf["message"])
    assert any(f["name"] == "xformers.attention.time" for f in xf["figures"])  # type: ignore[attr-defined]
    assert fa["status"] == "fail" and "disagrees with torch's SDPA" in str(fa["message"]), fa
    assert bnb["status"] == "pass" and "relative error" in str(bnb["message"]), bnb


def test_a_build_for_another_torch_fails_and_no_cpu_path_skips(tmp_path: Path) -> None:
    # The real xformers 0.0.35 wheel's record: built for torch 2.10.0+cu128.
    xformers(tmp_path, built_for="2.10.0+cu128")
    flash_attn(tmp_path, mode="no-cpu")
    bitsandbytes(tmp_path, scale=1.2)  # a 20% error: not int8 rounding
    got = doctor(tmp_path)
    assert set(got) == {"companion.xformers", "companion.flash_attn", "companion.bitsandbytes"}
    xf, fa, bnb = got["companion.xformers"], got["companion.flash_attn"], got["companion.bitsandbytes"]
    assert xf["status"] == "fail" and "it was built for torch 2.10.0+cu128" in str(xf["message"]), xf
    assert "rocmkit install --venv V --with xformers" in str(xf["remedy"])
    assert fa["status"] == "skip" and "has no path on cpu here" in str(fa["message"]), fa
    assert bnb["status"] == "fail" and "off from the float matmul" in str(bnb["message"]), bnb


def test_a_library_not_installed_is_skipped_without_importing_torch() -> None:
    from rocmkit.doctor.checks.companions import _missing

    skipped = _missing("rocmkit_no_such_library", "no-such-library")
    assert skipped is not None and skipped.status.value == "skip"
    assert skipped.message == "no-such-library is not installed" and skipped.details["installed"] is False
    assert _missing("json", "json") is None
