"""What a check returns, built by the checks; the document `validate --json` prints is
contracts/schema/validate_report.py (imported from here by the checks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


Said = Finding | Sequence[Finding]


def _stated(said: Said) -> list[Finding]:
    """A finding or findings, stored as codes and figures; a sentence is refused (the words
    are made when shown)."""
    if isinstance(said, str):
        raise TypeError(f"a check states findings, not a sentence: {said!r}")
    return [said] if isinstance(said, Finding) else list(said)


def check(
    id: str, title: str, status: CheckStatus, detail: Said, hint: Said = (), **data: Any
) -> CheckResult:
    """A check's verdict: what was found and how to fix it, as findings."""
    return CheckResult(
        id=id, title=title, status=status, findings=_stated(detail), fix=_stated(hint), data=data
    )


def passed(id: str, title: str, detail: Said, **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.PASS, detail, **data)


def warned(id: str, title: str, detail: Said, hint: Said, **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.WARN, detail, hint, **data)


def failed(id: str, title: str, detail: Said, hint: Said, **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.FAIL, detail, hint, **data)


def skipped(id: str, title: str, detail: Said, hint: Said = (), **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.SKIP, detail, hint, **data)


def found(
    id: str,
    title: str,
    status: CheckStatus,
    findings: Sequence[Finding],
    hint: Said = (),
    **data: Any,
) -> CheckResult:
    """A check whose verdict is its findings (worded when shown)."""
    return check(id, title, status, findings, hint, **data)


def not_measured(why: Finding | None) -> Finding:
    """Why a figure has none: the rank's reason, else that it was not measured."""
    return why if why is not None else Finding(code="perf.not_measured")


def wrote_nothing(
    id: str, title: str, ranks: str, failure: CellFailure | None, workdir: Path
) -> CheckResult:
    """The FAIL of a launch whose ranks wrote no result: why, and where their logs are."""
    why = failure.exception if failure is not None and failure.exception else "no result"
    nothing = Finding(code="validate.wrote_nothing", figures={"ranks": ranks, "why": why})
    logs = Finding(code="validate.fix_rank_logs", figures={"where": str(workdir / "ranks")})
    return failed(id, title, nothing, logs)
