"""``rocmkit.report/1`` as JSON: the machine, the plan, every result, versions, timestamps."""

from __future__ import annotations

import json

from rocmkit.doctor.result import Report


def render(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False) + "\n"
