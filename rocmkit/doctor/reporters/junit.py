"""JUnit XML for CI dashboards: one testsuite per check group, one testcase per result.

``fail`` becomes ``<failure>``, ``error`` (could not run) ``<error>``, ``skip``
``<skipped>``; a warning passes but keeps its message in ``<system-out>`` so
dashboards that show output can surface it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from rocmkit.doctor.result import CheckResult, Report, Status


def _text(r: CheckResult) -> str:
    lines = [r.message]
    if r.remedy:
        lines.append(f"remedy: {r.remedy}")
    lines.extend(f"{f.name} = {f.value:g} {f.unit}" for f in r.figures)
    for line in r.details.get("stderr_tail", ()) or r.details.get("traceback", ()):
        lines.append(str(line))
    return "\n".join(lines)


def render(report: Report) -> str:
    groups: dict[str, list[CheckResult]] = defaultdict(list)
    for r in report.results:
        groups[r.name.split(".", 1)[0]].append(r)
    root = ET.Element(
        "testsuites",
        name="rocmkit doctor",
        tests=str(len(report.results)),
        failures=str(sum(r.status is Status.FAIL for r in report.results)),
        errors=str(sum(r.status is Status.ERROR for r in report.results)),
        skipped=str(sum(r.status is Status.SKIP for r in report.results)),
        time=f"{sum(r.duration_s for r in report.results):.3f}",
    )
    for group, results in groups.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"rocmkit.doctor.{group}",
            tests=str(len(results)),
            failures=str(sum(r.status is Status.FAIL for r in results)),
            errors=str(sum(r.status is Status.ERROR for r in results)),
            skipped=str(sum(r.status is Status.SKIP for r in results)),
            time=f"{sum(r.duration_s for r in results):.3f}",
            timestamp=report.started_at,
            hostname=report.hostname,
        )
        for r in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"rocmkit.doctor.{group}",
                name=r.name,
                time=f"{r.duration_s:.3f}",
            )
            if r.status is Status.FAIL:
                ET.SubElement(case, "failure", message=r.message, type="fail").text = _text(r)
            elif r.status is Status.ERROR:
                ET.SubElement(case, "error", message=r.message, type="error").text = _text(r)
            elif r.status is Status.SKIP:
                ET.SubElement(case, "skipped", message=r.message)
            elif r.status is Status.WARN:
                ET.SubElement(case, "system-out").text = f"WARNING: {_text(r)}"
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="status", value=r.status.value)
            ET.SubElement(props, "property", name="level", value=str(r.level))
            if r.backend:
                ET.SubElement(props, "property", name="backend", value=r.backend)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
