"""One way for a check to build its result, so each return states only what differs.

A result leaves out its name and level: ``@check`` stamps the check's own on it
(``rocmkit.doctor.registry``), so a check names itself once, in its decorator."""

from __future__ import annotations

from rocmkit.doctor.result import CheckResult, Figure, Status


def result(
    status: Status,
    message: str,
    remedy: str | None = None,
    *,
    figures: tuple[Figure, ...] = (),
    backend: str | None = None,
    **details: object,
) -> CheckResult:
    """A check's result; keyword arguments other than ``figures`` and ``backend`` are its details."""
    return CheckResult(
        status=status,
        message=message,
        remedy=remedy,
        figures=figures,
        backend=backend,
        details=dict(details),
    )
