"""A plan as a uv project's configuration: ``[[tool.uv.index]]`` and ``[tool.uv.sources]``.

uv cannot pick "the torch for this GPU" by itself inside a project (its ``--torch-backend`` is for
``uv pip`` only): a project names the index of each torch package. Each index the plan uses gets an
explicit entry (``explicit = true``: only the packages pinned to it come from it, so nothing else
is taken from PyTorch's index by accident), and torch, torchvision, torchaudio, the Triton
distribution and the ``--with`` libraries served by that index are pinned to it on Linux (the
marker keeps macOS and Windows on PyPI, where PyTorch's Linux indexes serve nothing for them).
``rocmkit install --project DIR`` writes them into ``DIR/pyproject.toml`` keeping its formatting.
"""

from __future__ import annotations

import re
from typing import Any

from rocmkit.errors import UsageError
from rocmkit.packages import requirement_name
from rocmkit.plan import Plan

LINUX = "sys_platform == 'linux'"
# The PyTorch packages a plan pins to its index.
TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


def index_name(plan: Plan, url: str) -> str:
    """``pytorch-rocm7-2`` for the plan's own index; a name from the URL for others."""
    if plan.index_urls and url == plan.index_urls[0]:
        base = str(plan.backend)
    else:
        base = url.rstrip("/").rsplit("/", 1)[-1] or "index"
    return "pytorch-" + re.sub(r"[^A-Za-z0-9]+", "-", base).strip("-").lower()


def uv_project_tables(plan: Plan) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, str]]]]:
    """The ``[[tool.uv.index]]`` entries and the ``[tool.uv.sources]`` table for ``plan``."""
    if not plan.index_urls:
        raise UsageError("the plan names no index (a plan without one cannot pin packages to it)")
    main = plan.index_urls[0]
    names = {main: index_name(plan, main)}
    pinned: dict[str, str] = {}
    for req in (*plan.requirements, *((plan.triton,) if plan.triton else ())):
        name = requirement_name(req)
        if name is not None and (name in TORCH_FAMILY or req == plan.triton):
            pinned[name] = main
    for package in plan.with_packages:
        if package.how == "wheel" and package.index_url == main:
            pinned[package.name] = main
    indexes = [{"name": names[main], "url": main, "explicit": True}]
    sources = {name: [{"index": names[url], "marker": LINUX}] for name, url in sorted(pinned.items())}
    return indexes, sources


def project_dependencies(plan: Plan) -> list[str]:
    """What the project must depend on directly for its sources to apply: uv honours
    ``[tool.uv.sources]`` for direct dependencies only, so torch's Triton (which torch requires)
    would otherwise be looked for on PyPI alone; and the ``--with`` packages asked for."""
    deps: list[str] = []
    if plan.triton:
        deps.append(f"{plan.triton} ; {LINUX}")
    for package in plan.with_packages:
        if package.how == "wheel" and plan.index_urls and package.index_url == plan.index_urls[0]:
            deps.append(f"{package.requirement} ; {LINUX}")
        elif package.how != "source":
            deps.append(package.requirement)
    return deps


def uv_project_text(plan: Plan) -> str:
    """The tables as TOML text, to paste into a pyproject.toml."""
    indexes, sources = uv_project_tables(plan)
    lines = [f"# rocmkit: backend {plan.backend}, torch {plan.torch_version or '?'} (rocmkit resolve --format uv-project)"]
    deps = project_dependencies(plan)
    if deps:
        lines.append("# [project] dependencies also needs (sources apply to direct dependencies only):")
        lines += [f'#   "{d}",' for d in deps]
    for entry in indexes:
        lines += ["[[tool.uv.index]]", f'name = "{entry["name"]}"', f'url = "{entry["url"]}"', "explicit = true", ""]
    lines.append("[tool.uv.sources]")
    for name, items in sources.items():
        inner = ", ".join(f'{{ index = "{i["index"]}", marker = "{i["marker"]}" }}' for i in items)
        lines.append(f"{name} = [{inner}]")
    return "\n".join(lines) + "\n"


def _holds(data: dict[str, Any], indexes: list[dict[str, Any]], sources: dict[str, Any], deps: list[str]) -> bool:
    uv = data.get("tool", {}).get("uv", {})
    have = uv.get("index", [])
    listed = {requirement_name(str(d)) for d in data.get("project", {}).get("dependencies", [])}
    return (
        all(entry in have for entry in indexes)
        and all(uv.get("sources", {}).get(name) == items for name, items in sources.items())
        and ("project" not in data or all(requirement_name(d) in listed for d in deps))
    )


def apply_to_pyproject(text: str, plan: Plan) -> str:
    """``text`` (a pyproject.toml) with the plan's index and sources in ``[tool.uv]``, the rest kept
    as written (comments, order, spacing). An index of the same name is replaced; sources of the
    plan's packages are replaced, other sources kept."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except (TOMLKitError, ValueError, RecursionError) as exc:
        raise UsageError(f"pyproject.toml is not valid TOML: {exc}", "fix the file, then run again") from None
    indexes, sources = uv_project_tables(plan)
    deps = project_dependencies(plan)
    if _holds(doc.unwrap(), indexes, sources, deps):
        return text  # written before: byte for byte as it is
    project = doc.get("project")
    if project is not None:
        listed = project.get("dependencies")
        if listed is None:
            listed = tomlkit.array()
            project["dependencies"] = listed
        have = {requirement_name(str(d)) for d in listed}
        for dep in deps:
            if requirement_name(dep) not in have:
                listed.append(dep)
    tool = doc.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        doc["tool"] = tool
    uv = tool.get("uv")
    if uv is None:
        uv = tomlkit.table()
        tool["uv"] = uv
    existing = uv.get("index")
    if existing is None:
        existing = tomlkit.aot()
        uv["index"] = existing
    ours = {e["name"] for e in indexes}
    kept = [dict(e) for e in existing if e.get("name") not in ours]
    new = tomlkit.aot()
    for entry in (*indexes, *kept):
        row = tomlkit.table()
        for key, value in entry.items():
            row[key] = value
        new.append(row)
    uv["index"] = new
    pins = uv.get("sources")
    if pins is None:
        pins = tomlkit.table()
        uv["sources"] = pins
    for name, items in sources.items():
        array = tomlkit.array()
        for item in items:
            inline = tomlkit.inline_table()
            inline.update(item)
            array.append(inline)
        pins[name] = array
    return tomlkit.dumps(doc)
