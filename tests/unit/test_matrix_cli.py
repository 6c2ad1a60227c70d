"""`rocmkit matrix check|show` and the pure parts of `matrix refresh`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocmkit.cli import main
from rocmkit.matrix import FILES
from rocmkit.packages import triton_pin
from rocmkit.pkgindex.pages import files_from_html
from rocmkit.util.paths import matrices_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main([*argv])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_check_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "matrix", "check", "--unconfirmed")
    assert code == 0
    assert "ok  gfx.toml:" in out and "ok  torch.toml:" in out and "ok  channels.toml" in out
    assert "entries with unconfirmed facts" in out and "torch.toml: release 2.14.0" in out


def test_check_bad_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in FILES:
        shutil.copy(matrices_dir() / name, tmp_path / name)
    path = tmp_path / "torch.toml"
    path.write_text(path.read_text().replace('torchaudio = "2.5.1"', 'torchaudo = "2.5.1"', 1))
    code, out, err = run(capsys, "matrix", "check", "--dir", str(tmp_path))
    assert code == 5 and out == ""
    assert err.strip() == (
        "error: torch.toml: release '2.5.1': unknown key 'torchaudo' (did you mean 'torchaudio'?)\n"
        "fix: allowed keys are confirmed, not_built, not_built_sources, note, python_max, python_min, released, "
        "sources, torchaudio, torchvision, unconfirmed, variants, version"
    )


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "matrix", "show")
    assert code == 0 and out.splitlines()[0].startswith("torch")
    assert any(line.startswith("2.5.1 ") and "6.2" in line for line in out.splitlines())
    # The cpu column lines up even on rows with four CUDA variants (2.11.0).
    assert len({line.rindex(" ") for line in out.splitlines()}) == 1
    code, out, _ = run(capsys, "matrix", "show", "--torch", "2.7")
    assert "torch 2.7.1:" in out and "torch 2.7.0:" in out and "pytorch-triton-rocm==3.3.0" in out
    code, out, _ = run(capsys, "matrix", "show", "--gfx", "gfx1151")
    assert "gfx1151: RDNA3.5" in out and "0x1586" in out and "2.11.0+rocm7.2" in out
    code, out, err = run(capsys, "matrix", "show", "--gfx", "gfx1031x")
    assert code == 4 and "did you mean 'gfx1031'" in err


HTML = """<!DOCTYPE html><html><body>
<a href="/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl#sha256=ab"
   data-dist-info-metadata="sha256=cd" data-core-metadata="sha256=cd">torch-2.5.1+rocm6.2-cp311-cp311-linux_x86_64.whl</a><br/>
<a href="../torch-2.5.0%2Brocm6.2-cp312-cp312-linux_x86_64.whl">torch-2.5.0+rocm6.2-cp312-cp312-linux_x86_64.whl</a><br/>
</body></html>"""


def test_html_simple_page() -> None:
    files = files_from_html("https://download.pytorch.org/whl/rocm6.2/torch/", HTML.encode())
    assert [f.filename for f in files] == [
        "torch-2.5.1+rocm6.2-cp311-cp311-linux_x86_64.whl",
        "torch-2.5.0+rocm6.2-cp312-cp312-linux_x86_64.whl",
    ]
    assert files[0].metadata_url == (
        "https://download.pytorch.org/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl.metadata"
    )
    assert files[1].metadata_url is None
    assert (
        files[1].url
        == "https://download.pytorch.org/whl/rocm6.2/torch-2.5.0%2Brocm6.2-cp312-cp312-linux_x86_64.whl"
    )


def test_triton_pin_from_requires_dist() -> None:
    requires = [
        "filelock",
        "sympy==1.13.1; python_version >= '3.9'",
        "pytorch-triton-rocm==3.1.0; platform_system == 'Linux' and platform_machine == 'x86_64'",
    ]
    assert triton_pin(requires) == "pytorch-triton-rocm==3.1.0"
    assert triton_pin(["Triton_ROCm==3.6.0; platform_system == 'Linux'"]) == "triton-rocm==3.6.0"
    assert triton_pin(["numpy"]) is None
