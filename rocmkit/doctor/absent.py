"""What the doctor says when torch or Triton is not installed in the Python it checks.

A venv without torch used to come out as ``PASS`` with every torch check
skipped: nothing about PyTorch had been validated, yet the exit code said all
was well. From level 1 on, the missing torch is the finding (``torch.import``
fails, with the command that installs it); a missing Triton next to torch is a
warning (``triton.import``), since a CPU-only torch pins no Triton and runs
without one. At level 0 (an image build before torch goes in) both stay
``skip``. Decided here, in the parent, from the probe of the checked Python:
starting a child only to watch ``import torch`` fail would say less.
"""

from __future__ import annotations

import shlex

from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.pyenv import PyEnv, triton_pin


def pip_index(ctx: CheckContext) -> str:
    """`` --index-url URL`` for a pip command line: the plan's index, where there is a plan."""
    if ctx.plan is not None and ctx.plan.index_urls:
        return f" --index-url {ctx.plan.index_urls[0]}"
    return ""


def install_torch_remedy(python: PyEnv) -> str:
    """The command that puts torch into the checked Python, and where to see the plan first."""
    if python.venv:
        target = f"rocmkit install --venv {shlex.quote(str(python.venv))}"
    else:
        # Not a venv (a system or conda base Python): install into that interpreter.
        target = f"rocmkit install --interpreter {shlex.quote(str(python.executable))}"
    return f"`{target}` (or `rocmkit resolve` to see the plan first)"


def install_triton_remedy(python: PyEnv, ctx: CheckContext) -> str:
    """The Triton torch pins, or for a torch that pins none (a CPU-only build) plain
    ``triton``, which Triton's interpreter runs on the CPU."""
    pip = f"{shlex.quote(str(python.executable))} -m pip install"
    pin = triton_pin(python.torch_requires)
    if pin is not None:
        # Without the marker: it held for this platform, and the command reads better bare.
        return f"{pip} '{pin.name}{pin.specifier}'{pip_index(ctx)} (the Triton torch pins)"
    return f"{pip} triton (this torch pins no Triton, as CPU-only builds do; kernels then run under TRITON_INTERPRET=1)"


def absent_gate(chk: Check, ctx: CheckContext, python: PyEnv, level: int) -> CheckResult | None:
    """``torch.import``'s FAIL or ``triton.import``'s WARN when the package is not
    installed in ``python``, or None where the usual skip applies."""
    if level < 1 or ctx.machine.source.startswith("capture:"):
        return None
    where = str(python.executable)
    venv = None if python.venv is None else str(python.venv)
    if chk.name == "torch.import" and not python.has("torch"):
        return CheckResult(
            name=chk.name,
            level=chk.level,
            status=Status.FAIL,
            message=f"torch is not installed in {where}: nothing about PyTorch could be checked",
            remedy=install_torch_remedy(python),
            backend=ctx.backend,
            details={"missing": "torch", "python": where, "venv": venv},
        )
    if chk.name == "triton.import" and python.has("torch") and not python.has("triton"):
        version = python.dists.get("torch") or "?"
        return CheckResult(
            name=chk.name,
            level=chk.level,
            status=Status.WARN,
            message=f"Triton is not installed in {where} (torch {version} is): "
            "torch.compile cannot generate kernels and the Triton checks are skipped",
            remedy=install_triton_remedy(python, ctx),
            backend=ctx.backend,
            details={"missing": "triton", "python": where, "venv": venv},
        )
    return None
