"""Guard an environment's torch build against later ``pip install`` / ``uv pip install``.

PyPI's torch for Linux is a CUDA build: a later ``pip install transformers``
that wants another torch version would silently replace the ROCm build. The
guard is a constraints file pinning the installed torch family and Triton,
wired where each installer looks without being asked:

- pip reads ``<venv>/pip.conf`` (its "site" configuration) for every run
  inside the venv, activated or not, so ``[install] constraint = FILE`` there
  always applies;
- uv reads no per-venv configuration, so ``bin/activate`` exports
  ``UV_CONSTRAINT`` (and ``deactivate`` removes it), together with the plan's
  environment variables (``HSA_OVERRIDE_GFX_VERSION`` ...).

A conflicting request then fails with a resolution error naming torch,
instead of swapping the build.
"""

from __future__ import annotations

import configparser
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import DataError
from rocmkit.packages import COMPANIONS, TRITON_DISTRIBUTIONS, parse_pin
from rocmkit.plan import Plan
from rocmkit.planschema import FIX, IDENTIFIER
from rocmkit.util.atomicio import write_text_atomic

CONSTRAINTS_NAME = "rocmkit-constraints.txt"
BEGIN = "# >>> rocmkit guard >>>"
END = "# <<< rocmkit guard <<<"

# Distributions whose build must match the installed torch.
GUARDED = ("torch", *COMPANIONS, *TRITON_DISTRIBUTIONS)
# And JAX's: jax, jaxlib and the GPU plugin and PJRT pinned to one version (a later
# `pip install flax optax` must not move jaxlib or swap the plugin), and PyTorch/XLA.
GUARDED_JAX = re.compile(r"^(jax|jaxlib|jax-(rocm|cuda)[0-9]+-(plugin|pjrt)|torch-xla)$")


def is_guarded(project: str) -> bool:
    return project in GUARDED or bool(GUARDED_JAX.match(project))


@dataclass(frozen=True, kw_only=True)
class GuardFiles:
    constraints: Path
    pip_conf: Path
    activate: Path

    def all(self) -> tuple[Path, ...]:
        return (self.constraints, self.pip_conf, self.activate)


def guard_files(prefix: Path) -> GuardFiles:
    return GuardFiles(
        constraints=prefix / CONSTRAINTS_NAME,
        pip_conf=prefix / "pip.conf",
        activate=prefix / "bin" / "activate",
    )


def pins_for(plan: Plan) -> list[str]:
    """The ``name==version`` pins of the plan's torch family and Triton, of its jax family, and of
    the ``--with`` libraries whose native code is tied to this torch build (xformers, flash-attn)."""
    pins: list[str] = []
    seen: set[str] = set()
    tied = tuple(p.requirement for p in plan.with_packages if p.pins_torch and p.how != "index")
    for req in (*plan.requirements, *((plan.triton,) if plan.triton else ()), *tied):
        pin = parse_pin(req)
        if pin and (is_guarded(pin.project) or req in tied) and pin.project not in seen:
            seen.add(pin.project)
            pins.append(str(pin))
    return pins


def installed_view(plan: Plan, left_out: tuple[str, ...]) -> Plan:
    """``plan`` as it was really installed: without the companions left out (--no-companions, or
    no reachable source had them). The guard pins only those: a pin of a torchvision that is not
    there makes every later install that pulls torchvision (timm) unresolvable."""
    return plan.without(left_out)


def constraints_text(plan: Plan, left_out: tuple[str, ...] = ()) -> str:
    """The constraints file. ``left_out``: the plan's companions this install did not put in
    (named in a comment, not pinned: a pin no reachable source satisfies would make every later
    install that pulls the package unresolvable)."""
    header = (
        f"# Written by `rocmkit install`: keeps this environment's {_what(plan)} build.\n"
        f"# backend {plan.backend}; to change it, run `rocmkit install` again "
        "(or remove this file's lines to lift the guard).\n"
        "# A package that cannot be installed beside these pins needs a version built for this torch:\n"
        "# `rocmkit install --with PKG` finds one, or builds it against this torch (no build isolation).\n"
    )
    if left_out:
        header += (
            f"# Left out by this install, so not pinned: {', '.join(left_out)}. Add them from the plan's "
            "index (`rocmkit install` again once it answers), never from another source.\n"
        )
    return header + "".join(pin + "\n" for pin in pins_for(plan))


def _what(plan: Plan) -> str:
    return {"jax": "jax", "torch+jax": "torch and jax", "torch-xla": "torch and torch-xla"}.get(plan.framework, "torch")


# A pip.conf is a few lines; what is larger is not one.
MAX_PIP_CONF = 1024 * 1024


def read_pip_conf(path: Path) -> configparser.ConfigParser:
    """The venv's ``pip.conf`` parsed (empty when absent); :class:`DataError` (one line, the fix)
    for one that is not an INI file pip could read, too big, or not UTF-8."""
    from rocmkit.util.safeload import read_text

    parser = configparser.ConfigParser(interpolation=None)
    if not path.is_file():
        return parser
    fix = f"fix {path} (pip refuses it too) or move it away, then run again"
    try:
        parser.read_string(read_text(path, str(path), max_bytes=MAX_PIP_CONF), source=str(path))
    except DataError as exc:
        raise DataError(exc.message, fix) from None
    except (configparser.Error, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{path} is not a pip configuration (an INI file): {first[:200]}", fix) from None
    return parser


def _pip_conf_text(path: Path, constraints: Path) -> str:
    parser = read_pip_conf(path)
    if not parser.has_section("install"):
        parser.add_section("install")
    parser.set("install", "constraint", str(constraints))
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def _activate_block(constraints: Path, env: dict[str, str]) -> str:
    # deactivate is wrapped so that UV_CONSTRAINT (and the plan's variables) leave with the venv.
    # Names are checked here too, not only when a plan is loaded: a name goes into the
    # script as code, and `A=1; touch /tmp/x; B` would run on `source activate`.
    bad = [k for k in env if not IDENTIFIER.match(k)]
    if bad:
        raise DataError(f"the plan's env sets {bad[0][:60]!r}, which is not a variable name", FIX)
    quoted = shlex.quote(str(constraints))
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
    unsets = "".join(f"        unset {k}\n" for k in sorted(env))
    plan_note = "# The plan's environment (`rocmkit resolve` says why):\n" if env else ""
    return f"""{BEGIN}
# uv reads no per-venv config; this keeps `uv pip install` from swapping torch, and a
# source build from compiling against another torch (build constraints).
export UV_CONSTRAINT={quoted}
export UV_BUILD_CONSTRAINT={quoted}
{plan_note}{exports}if command -v deactivate >/dev/null 2>&1; then
    # activate has just (re)defined deactivate: wrap that definition.
    eval "_rocmkit_$(declare -f deactivate)"
    deactivate () {{
        if [ "${{UV_CONSTRAINT:-}}" = {quoted} ]; then unset UV_CONSTRAINT; fi
        if [ "${{UV_BUILD_CONSTRAINT:-}}" = {quoted} ]; then unset UV_BUILD_CONSTRAINT; fi
{unsets}        _rocmkit_deactivate "$@"
        if [ "${{1:-}}" != "nondestructive" ]; then unset -f _rocmkit_deactivate 2>/dev/null; fi
    }}
fi
{END}
"""


def _strip_block(text: str) -> str:
    start = text.find(BEGIN)
    if start < 0:
        return text
    end = text.find(END, start)
    if end < 0:
        return text
    return text[:start] + text[end + len(END) :].lstrip("\n")


def write_guard(prefix: Path, plan: Plan, left_out: tuple[str, ...] = ()) -> GuardFiles:
    """Write (or rewrite) the guard of the venv at ``prefix`` for ``plan`` (as installed:
    :func:`installed_view`; ``left_out`` is named in a comment)."""
    files = guard_files(prefix)
    write_text_atomic(files.constraints, constraints_text(plan, left_out))
    write_text_atomic(files.pip_conf, _pip_conf_text(files.pip_conf, files.constraints))
    if files.activate.is_file():
        text = _strip_block(files.activate.read_text())
        write_text_atomic(
            files.activate, text.rstrip("\n") + "\n\n" + _activate_block(files.constraints, plan.env)
        )
    return files


def remove_guard(prefix: Path) -> bool:
    """Lift a guard written earlier (``--no-guard`` on a guarded venv: stale pins would
    block every later install that needs the new torch). Returns whether one was there."""
    files = guard_files(prefix)
    found = files.constraints.exists()
    files.constraints.unlink(missing_ok=True)
    if files.pip_conf.is_file():
        parser = read_pip_conf(files.pip_conf)
        if parser.get("install", "constraint", fallback=None) == str(files.constraints):
            found = True
            parser.remove_option("install", "constraint")
            if not parser.items("install"):
                parser.remove_section("install")
            if parser.sections():
                out = io.StringIO()
                parser.write(out)
                write_text_atomic(files.pip_conf, out.getvalue())
            else:
                files.pip_conf.unlink()
    if files.activate.is_file():
        text = files.activate.read_text()
        stripped = _strip_block(text)
        if stripped != text:
            found = True
            write_text_atomic(files.activate, stripped.rstrip("\n") + "\n")
    return found
