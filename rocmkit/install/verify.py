"""After an install: prove, in a child process of the target, that the plan holds.

torch imports; ``torch.__version__`` is the planned build; ``torch.version.hip``
/ ``torch.version.cuda`` match the planned backend (a ROCm plan must not end
up with a CUDA or CPU torch, the classic silent failure); the Triton
distribution is the pinned one and ``import triton`` works.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.packages import parse_pin, requirement_name
from rocmkit.plan import Plan
from rocmkit.pyenv import Inline, PyEnv, run_json

VERIFY_TIMEOUT_S = 180.0

# Both children: argv[1] says whether the imports write their byte code ("compile": the
# install's compile step, for what they load) or not, whatever PYTHONDONTWRITEBYTECODE says.
# Once the result is written the child leaves with os._exit: torch's interpreter teardown
# (a few tenths of a second) proves nothing, and the result file is complete.
_PRELUDE = r"""
import os
import sys
sys.dont_write_bytecode = sys.argv[1] != "compile"
"""

_EXIT = r"""
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""

# Standard library only: the target need not have rocmkit (run_json supplies write_result).
_CHILD = (
    _PRELUDE
    + r"""
from importlib import metadata
out = {"triton_dist": None}
try:
    import torch
    out["torch"] = str(torch.__version__)
    out["hip"] = getattr(torch.version, "hip", None)
    out["cuda"] = getattr(torch.version, "cuda", None)
except Exception as exc:
    out["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
name = sys.argv[2] if len(sys.argv) > 2 else ""
if name:
    try:
        out["triton_dist"] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out["triton_dist"] = None
    try:
        import triton
        out["triton_module"] = str(getattr(triton, "__version__", "?"))
    except Exception as exc:
        out["triton_error"] = "%s: %s" % (type(exc).__name__, exc)
write_result(out)
"""
    + _EXIT
)


# The jax family (and torch-xla): each pinned distribution's installed version, and `import jax`.
_DISTS_CHILD = (
    _PRELUDE
    + r"""
from importlib import metadata
out = {"dists": {}}
for name in sys.argv[2:]:
    try:
        out["dists"][name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out["dists"][name] = None
if "jax" in sys.argv[2:]:
    try:
        import jax
        out["jax"] = str(jax.__version__)
    except Exception as exc:
        out["jax_error"] = "%s: %s" % (type(exc).__name__, exc)
write_result(out)
"""
    + _EXIT
)


@dataclass(frozen=True, kw_only=True)
class Verification:
    ok: bool
    problems: tuple[str, ...]
    facts: dict[str, object]

    def summary(self) -> str:
        if self.ok:
            parts = [f"torch {self.facts.get('torch')}"] if "torch" in self.facts else []
            if self.facts.get("hip"):
                parts.append(f"hip {self.facts['hip']}")
            if self.facts.get("cuda"):
                parts.append(f"cuda {self.facts['cuda']}")
            if self.facts.get("triton_dist"):
                parts.append(f"triton {self.facts['triton_dist']}")
            dists = self.facts.get("dists")
            if isinstance(dists, dict):
                parts += [f"{name} {version}" for name, version in dists.items()]
            return "verified: " + ", ".join(parts)
        return "verification failed: " + "; ".join(self.problems)


def check_facts(plan: Plan, facts: Mapping[str, object]) -> list[str]:
    """What in ``facts`` (from the child) contradicts ``plan``."""
    problems: list[str] = []
    if "torch_error" in facts:
        return [f"`import torch` failed: {facts['torch_error']}"]
    torch_version = str(facts.get("torch"))
    if plan.torch_version and torch_version != plan.torch_version:
        problems.append(f"torch is {torch_version}, the plan installs {plan.torch_version}")
    kind, version = plan.backend.kind, plan.backend.toolkit
    hip, cuda = facts.get("hip"), facts.get("cuda")
    if kind == "rocm":
        if not hip:
            problems.append(f"torch.version.hip is empty: this torch is not a ROCm build (cuda={cuda})")
        elif version and not str(hip).startswith(version):
            problems.append(f"torch.version.hip is {hip}, the plan is for ROCm {version}")
    elif kind == "cuda":
        if not cuda:
            problems.append(f"torch.version.cuda is empty: this torch is not a CUDA build (hip={hip})")
        elif version and str(cuda) != version and not str(cuda).startswith(version + "."):
            problems.append(f"torch.version.cuda is {cuda}, the plan is for CUDA {version}")
    elif kind == "cpu" and (hip or cuda):
        problems.append(f"the plan is a CPU build but torch reports hip={hip} cuda={cuda}")
    if plan.triton:
        parsed = parse_pin(plan.triton)
        name, pin = (parsed.name, parsed.version) if parsed else (plan.triton, "")
        got = facts.get("triton_dist")
        if got is None:
            problems.append(f"{name} is not installed (the plan pins {plan.triton})")
        elif pin and got != pin:
            problems.append(f"{name} is {got}, the plan pins {pin}")
        if "triton_error" in facts:
            problems.append(f"`import triton` failed: {facts['triton_error']}")
    return problems


def other_pins(plan: Plan) -> dict[str, str]:
    """The plan's pins of the jax family and torch-xla (project -> version): checked by distribution."""
    from rocmkit.install.guard import GUARDED_JAX

    out: dict[str, str] = {}
    for req in plan.requirements:
        pin = parse_pin(req)
        if pin is not None and GUARDED_JAX.match(pin.project):
            out[str(pin.project)] = pin.version
    return out


def check_dists(plan: Plan, facts: Mapping[str, object]) -> list[str]:
    """What in the distribution child's ``facts`` contradicts the plan's jax-family pins."""
    problems: list[str] = []
    dists = facts.get("dists")
    got = dists if isinstance(dists, dict) else {}
    for name, version in other_pins(plan).items():
        have = got.get(name)
        if have is None:
            problems.append(f"{name} is not installed (the plan pins {name}=={version})")
        elif have != version:
            problems.append(f"{name} is {have}, the plan pins {version}")
    if "jax_error" in facts:
        problems.append(f"`import jax` failed: {facts['jax_error']}")
    elif plan.jax_version and "jax" in facts and facts["jax"] != plan.jax_version:
        problems.append(f"jax.__version__ is {facts['jax']}, the plan installs {plan.jax_version}")
    return problems


def verify(
    target: PyEnv, plan: Plan, *, timeout: float = VERIFY_TIMEOUT_S, compile_bytecode: bool = True
) -> Verification:
    """Run the checks in a child of ``target`` with the plan's environment variables set; with
    ``compile_bytecode`` its imports write the byte code of what they load."""
    env = dict(os.environ)
    env.update(plan.env)
    env.pop("PYTHONPATH", None)
    pins = other_pins(plan)
    mode = "compile" if compile_bytecode else "no-compile"
    facts: dict[str, object] = {}
    problems: list[str] = []
    if pins:
        ran = run_json(target.executable, Inline(_DISTS_CHILD), [mode, *pins], timeout=timeout, env=env)
        if not ran.proc.ok or not isinstance(ran.data, dict):
            why = ran.proc.describe() if not ran.proc.ok else (ran.error or "no result")
            return Verification(ok=False, problems=(f"the check child failed: {why}",), facts={})
        facts.update(ran.data)
        problems += check_dists(plan, ran.data)
    if plan.framework == "jax":
        return Verification(ok=not problems, problems=tuple(problems), facts=facts)
    triton_name = (requirement_name(plan.triton) or "") if plan.triton else ""
    ran = run_json(target.executable, Inline(_CHILD), [mode, triton_name], timeout=timeout, env=env)
    result = ran.proc
    if not result.ok:
        return Verification(ok=False, problems=(f"the check child failed: {result.describe()}",), facts={})
    data = ran.data
    if not isinstance(data, dict):
        why = f": {ran.error}" if ran.error else ""
        return Verification(ok=False, problems=(f"the check child gave no result{why}",), facts={})
    problems = check_facts(plan, data) + problems
    return Verification(ok=not problems, problems=tuple(problems), facts={**data, **facts})
