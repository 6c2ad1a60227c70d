"""A Plan as text: the human summary and a pip/uv requirements file."""

from __future__ import annotations

import shlex

from rocmkit.plan import SCHEMA, Plan, WithPackage


def requirements_text(plan: Plan, closure: tuple[str, ...] = ()) -> str:
    """A requirements file that pip (``-r``) and uv (``uv pip install -r``) both read; with
    ``closure`` (``resolve --closure``), every package the install puts in, pinned."""
    lines = [f"# {SCHEMA}: backend {plan.backend}, channel {plan.channel}"]
    if plan.torch_version:
        lines[0] += f", torch {plan.torch_version}"
    if plan.jax_version:
        lines[0] += f", jax {plan.jax_version}"
    if plan.python:
        lines.append(f"# for Python {plan.python}")
    for key, value in plan.env.items():
        lines.append(f"# set before running: export {key}={shlex.quote(value)}")
    if plan.index_urls:
        lines.append(f"--index-url {plan.index_urls[0]}")
        lines += [f"--extra-index-url {url}" for url in plan.index_urls[1:]]
    lines += list(closure or plan.requirements)
    for package in plan.with_packages:
        if package.how == "source":
            # pip reads no per-requirement build options: say how to build it instead.
            lines.append(f"# {package.requirement}: build it against this torch: {source_build_command(package)}")
        elif not closure:
            lines.append(package.requirement)
    return "\n".join(lines) + "\n"


def source_build_command(package: WithPackage) -> str:
    """The command that builds a ``--with`` package against the environment's torch."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in package.build_env.items())
    head = f"pip install {' '.join(shlex.quote(r) for r in package.build_requires)} && " if package.build_requires else ""
    return f"{head}{env + ' ' if env else ''}pip install --no-build-isolation {shlex.quote(package.requirement)}"


def summary_text(plan: Plan, closure: tuple[str, ...] = (), closure_from: tuple[str, ...] = ()) -> str:
    what = f"torch {plan.torch_version}" if plan.torch_version else ", ".join(plan.requirements[:1])
    if plan.framework == "jax":
        what = f"jax {plan.jax_version}"
    elif plan.framework == "torch+jax":
        what += f" + jax {plan.jax_version}"
    elif plan.framework == "torch-xla":
        what = f"torch-xla {plan.jax_version or plan.torch_version}"
    out = [f"Plan: {what} (backend {plan.backend}, channel {plan.channel}, Python {plan.python or '?'})", ""]
    out.append("Requirements:")
    out += [f"  {r}" for r in plan.requirements]
    out.append("Index:")
    out += [f"  {u}" for u in plan.index_urls]
    if plan.fallback:
        out.append("Fallback (installed instead if the index answers without the planned build):")
        out += [f"  {r}" for r in plan.fallback]
    if plan.env:
        out.append("Environment (set before running Python):")
        out += [f"  export {k}={shlex.quote(v)}" for k, v in plan.env.items()]
    if plan.unsupported_gpus:
        out.append("GPUs that will not work with this plan:")
        out += [f"  - {g}" for g in plan.unsupported_gpus]
    if plan.with_packages:
        out.append("With:")
        for package in plan.with_packages:
            how = {"wheel": "prebuilt wheel", "source": "built here against this torch", "index": "from the indexes"}
            out.append(f"  {package.requirement}  ({how.get(package.how, package.how)})")
            if package.build_env:
                out.append("    build with " + " ".join(f"{k}={shlex.quote(v)}" for k, v in package.build_env.items()))
    if closure:
        where = ", ".join(closure_from) or "the plan's indexes"
        out.append(f"Closure (everything the install puts in, as uv resolves it from {where}):")
        out += [f"  {c}" for c in closure]
    if plan.reasons:
        out.append("Why:")
        out += [f"  - {r}" for r in plan.reasons]
    if plan.warnings:
        out.append("Warnings:")
        out += [f"  ! {w}" for w in plan.warnings]
    out += ["", "Install with uv:", f"  {plan.uv_command()}", "Install with pip:", f"  {plan.pip_command()}"]
    from rocmkit.util.redact import has_credentials

    if any(has_credentials(u) for u in plan.index_urls):
        # The token is shown nowhere: these lines are for the eye, `rocmkit install` sends it.
        out.append(
            "  (the index's token is masked as ***: `rocmkit install` passes it to pip/uv in their "
            "environment; by hand, put it in ~/.netrc or PIP_INDEX_URL / UV_INDEX)"
        )
    if plan.with_packages:
        names = ",".join(p.requirement for p in plan.with_packages)
        out += [
            "Then the --with packages (source builds against this torch, all under the guard):",
            f"  rocmkit install --venv V --with {names}",
        ]
    return "\n".join(out) + "\n"
