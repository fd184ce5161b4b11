"""What `torchscale validate --json` writes (acceptance/<host>.<level>.json): the checks, the
measured figures and the verdict, versioned. Older versions are read by the model itself
(`ValidateReport._upgrade`); the one reader is offline/results/documents.py.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import Field, model_validator

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

VALIDATE_KIND = "torchscale.validate"
# 2: `level`, `sku`, `measurements` (perf and burn figures, one row per check and GPU),
#    `measured_peaks`, `fail_on`, and the INFO status (measured, with nothing to compare to)
# 3: the `workload` level (its steps are checks; `folder` says where it left everything)
# 4: `findings` on a check (its verdict as codes and figures, words made when shown) and
#    `verdict_basis` (what the verdict sentence rests on), `finding` on a measurement (the perf
#    verdict against its SKU); older checks have none
# 5: no sentence where there is a finding: a check's `detail` and `hint` and a measurement's
#    `detail` and `unavailable` are gone, worded when shown from `findings`, `fix` and
#    `finding` (contracts/wording/validate.py, workload_checks.py); `said`/`said_fix` and
#    `verdict` keep the words an older report stored (shown as stored), never written today:
#    the conclusion is `verdict_basis`. A version-4 check with findings drops its detail (it
#    was their words); its hint, a sentence, is kept.
SCHEMA_VERSION = 5
Level = Literal["basic", "perf", "burn", "workload"]


class CheckStatus(str, Enum):
    PASS = "PASS"  # noqa: S105
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    INFO = "INFO"  # measured, with no reference to judge it by (an unknown SKU, a CPU)


class CheckResult(Record):
    """One check: a verdict, what was seen, and how to fix it when it is not a PASS."""

    id: str = Field(description="stable identifier, e.g. 'nccl'")
    title: str = Field(description="short human name (a label, never a sentence)")
    status: CheckStatus
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable facts")
    findings: list[Finding] = Field(
        default_factory=list,
        description="what was found, as codes and figures (schema 4); `detail` is their words",
    )
    fix: list[Finding] = Field(
        default_factory=list,
        description="how to fix it, as codes and figures (schema 5); `hint` is their words",
    )
    said: str = Field(
        default="",
        description="what was found in the words a report before schema 5 stored (shown as "
        "stored); never written today",
    )
    said_fix: str = Field(default="", description="how to fix it, as `said` (shown as stored)")


class Measurement(Record):
    """One measured figure of `--level perf` or `burn` for one GPU (or the node), beside the
    value expected for this SKU, their ratio and the verdict the documented threshold gives.
    A figure that could not be measured has `value` None and its finding says why."""

    check: str = Field(description="stable id, e.g. 'matmul.bf16', 'memory.triad', 'h2d'")
    title: str = Field(description="short human name, e.g. 'matmul bf16' (a label)")
    gpu: int | None = Field(default=None, description="GPU index (CPU: rank); None: the node")
    value: float | None = Field(description="the measured figure in `unit`; None: unavailable")
    unit: str = Field(description="'TFLOP/s', 'GB/s', 'us', ...")
    higher_is_better: bool = True
    expected: float | None = Field(
        default=None, description="what this SKU should reach (see expected_source)"
    )
    expected_source: str | None = Field(
        default=None, description="where `expected` comes from (a citation)"
    )
    ratio: float | None = Field(default=None, description="value / expected")
    status: CheckStatus
    finding: Finding | None = Field(
        default=None,
        description="the evidence as a code and its figures: the verdict against the SKU "
        "(schema 4), or why there is no value (schema 5)",
    )
    said: str = Field(
        default="", description="the evidence in the words a report before schema 5 stored"
    )
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable extras")


class ValidateReport(Record):
    """The whole `torchscale validate --json` document."""

    kind: Literal["torchscale.validate"] = "torchscale.validate"
    schema_version: Literal[5] = 5  # bump with SCHEMA_VERSION when the document changes
    torchscale_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    hostname: str
    device: Literal["cuda", "cpu"] = Field(description="the path that was validated")
    quick: bool = Field(description="true when the live smoke test was skipped")
    ok: bool = Field(description="true when no check failed (exit code 0)")
    counts: dict[CheckStatus, int]
    verdict: str = Field(
        default="",
        description="the conclusion in the words a report before schema 5 stored (shown as "
        "stored); today's is `verdict_basis`",
    )
    checks: list[CheckResult]
    level: Level = Field(
        default="basic", description="basic (seconds), perf, burn, or workload (minutes)"
    )
    sku: str | None = Field(default=None, description="the device model the figures are for")
    measurements: list[Measurement] = Field(
        default_factory=list, description="perf and burn figures, one per check and GPU"
    )
    measured_peaks: dict[str, float] = Field(
        default_factory=dict,
        description="TFLOP/s per dtype this node's GPUs reached (median over its GPUs), "
        "used for MFU against the measured peak",
    )
    fail_on: Literal["fail", "warn"] = Field(
        default="fail", description="the status from which `ok` is false and the exit 1"
    )
    folder: str | None = Field(
        default=None, description="workload: the folder holding everything it ran (schema 3)"
    )
    verdict_basis: Finding | None = Field(
        default=None,
        description="the conclusion as a code and figures (schema 4; from 5 every report's)",
    )

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Versions 1 to 4 read as 5: what they lack has its default (version 1 had no level
        or measurements: a basic run; before 4 no check had findings); their sentences become
        stored words, except where a finding says the same (version 4: then the words are made
        from it)."""
        version = data.get("schema_version") if isinstance(data, dict) else None
        if isinstance(version, int) and 1 <= version < SCHEMA_VERSION:
            checks = [_stored_check(c) for c in data.get("checks", [])]
            rows = [_stored_row(m) for m in data.get("measurements", [])]
            return {
                **data,
                "schema_version": SCHEMA_VERSION,
                "checks": checks,
                "measurements": rows,
            }
        return data


def _stored_check(check: Any) -> Any:
    """A check of a report before 5: its detail is its findings' words where it has findings
    (version 4 wrote them so), else stored words; its hint is stored words."""
    if not isinstance(check, dict):
        return check
    check = dict(check)
    detail, hint = check.pop("detail", ""), check.pop("hint", "")
    if not check.get("findings"):
        check["said"] = detail
    check["said_fix"] = hint
    return check


def _stored_row(row: Any) -> Any:
    """A measurement of a report before 5: its detail is its finding's words where it has one
    that says the same, else stored words (as is why it had no value, which its detail said)."""
    if not isinstance(row, dict):
        return row
    row = dict(row)
    detail, unavailable = row.pop("detail", ""), row.pop("unavailable", None)
    finding = row.get("finding")
    if not finding:
        row["said"] = detail or unavailable or ""
    elif row.get("status") == "FAIL" and row.get("check", "").startswith("busbw."):
        row["said"] = detail  # version 4 may have put wrong sums there, not in its finding
    return row
