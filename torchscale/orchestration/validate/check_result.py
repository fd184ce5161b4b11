"""What a check returns, built by the checks; the document `validate --json` prints is
contracts/schema/validate_report.py (imported from here by the checks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import CheckResult as CheckResult
from torchscale.contracts.schema.validate_report import CheckStatus as CheckStatus
from torchscale.contracts.schema.validate_report import Measurement as Measurement
from torchscale.contracts.schema.validate_report import ValidateReport as ValidateReport

if TYPE_CHECKING:
    from torchscale.orchestration.launch.failure import CellFailure

# worst first: a verdict over several GPUs, ranks or figures is its worst one's
SEVERITY = (
    CheckStatus.FAIL,
    CheckStatus.WARN,
    CheckStatus.PASS,
    CheckStatus.INFO,
    CheckStatus.SKIP,
)


def worst(statuses: Sequence[CheckStatus]) -> CheckStatus:
    """The worst of `statuses` by SEVERITY (SKIP when there are none)."""
    return next((status for status in SEVERITY if status in statuses), CheckStatus.SKIP)


def status_counts(checks: Sequence[CheckResult]) -> dict[CheckStatus, int]:
    """How many checks ended in each status: the report's `counts`, from which `ok` follows."""
    return {status: sum(c.status is status for c in checks) for status in CheckStatus}


def passed(id: str, title: str, detail: str, **data: Any) -> CheckResult:
    return CheckResult(id=id, title=title, status=CheckStatus.PASS, detail=detail, data=data)


def warned(id: str, title: str, detail: str, hint: str, **data: Any) -> CheckResult:
    return CheckResult(
        id=id, title=title, status=CheckStatus.WARN, detail=detail, hint=hint, data=data
    )


def failed(id: str, title: str, detail: str, hint: str, **data: Any) -> CheckResult:
    return CheckResult(
        id=id, title=title, status=CheckStatus.FAIL, detail=detail, hint=hint, data=data
    )


def skipped(id: str, title: str, detail: str, hint: str = "", **data: Any) -> CheckResult:
    return CheckResult(
        id=id, title=title, status=CheckStatus.SKIP, detail=detail, hint=hint, data=data
    )


def found(
    id: str,
    title: str,
    status: CheckStatus,
    findings: Sequence[Finding],
    hint: str = "",
    **data: Any,
) -> CheckResult:
    """A check whose verdict is its findings; `detail` is their words today, for the readers
    that show a check as text (the console renders the findings themselves)."""
    detail = "; ".join(wording.say(f) for f in findings)
    return CheckResult(
        id=id,
        title=title,
        status=status,
        detail=detail,
        hint=hint,
        data=data,
        findings=list(findings),
    )


def wrote_nothing(
    id: str, title: str, ranks: str, failure: CellFailure | None, workdir: Path
) -> CheckResult:
    """The FAIL of a launch whose ranks wrote no result: why, and where their logs are."""
    why = failure.exception if failure is not None and failure.exception else "no result"
    detail = f"the {ranks} ranks wrote nothing: {why}"
    return failed(id, title, detail, f"each rank's log is under {workdir / 'ranks'}")
