"""``rocmkit.report/1`` as JSON: the machine, the plan, every result, versions, timestamps."""

from __future__ import annotations

import json

from rocmkit.doctor.result import Report


def render(report: Report) -> str:
    # default=str: an in-process check may leave a Path or a numpy number in its details;
    # the report must still be written.
    return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
