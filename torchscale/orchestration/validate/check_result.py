"""What a check returns and what `validate --json` prints (schema-versioned)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from torchscale.contracts.errors import ResultsError
from torchscale.contracts.versioned import read_json, version_problem

# 2: `level`, `sku`, `measurements` (perf and burn figures, one row per check and GPU),
#    `measured_peaks`, `fail_on`, and the INFO status (measured, with nothing to compare to)
# 3: the `workload` level (its steps are checks; `folder` says where it left everything)
SCHEMA_VERSION = 3
Level = Literal["basic", "perf", "burn", "workload"]


class CheckStatus(str, Enum):
    PASS = "PASS"  # noqa: S105
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    INFO = "INFO"  # measured, with no reference to judge it by (an unknown SKU, a CPU)


# worst first: a verdict over several GPUs, ranks or figures is its worst one's
SEVERITY = (
    CheckStatus.FAIL,
    CheckStatus.WARN,
    CheckStatus.PASS,
    CheckStatus.INFO,
    CheckStatus.SKIP,
)


def status_counts(checks: Sequence[CheckResult]) -> dict[CheckStatus, int]:
    """How many checks ended in each status: the report's `counts`, from which `ok` follows."""
    return {status: sum(c.status is status for c in checks) for status in CheckStatus}


class CheckResult(BaseModel):
    """One check: a verdict, what was seen, and how to fix it when it is not a PASS."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="stable identifier, e.g. 'nccl'")
    title: str = Field(description="short human name")
    status: CheckStatus
    detail: str = Field(description="what was found")
    hint: str = Field(default="", description="how to fix it (empty on PASS)")
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable facts")


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


class Measurement(BaseModel):
    """One measured figure of `--level perf` or `burn` for one GPU (or the node), beside the
    value expected for this SKU, their ratio and the verdict the documented threshold gives.
    A figure that could not be measured has `value` None and says why in `unavailable`."""

    model_config = ConfigDict(extra="forbid")

    check: str = Field(description="stable id, e.g. 'matmul.bf16', 'memory.triad', 'h2d'")
    title: str = Field(description="short human name, e.g. 'matmul bf16'")
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
    detail: str = Field(default="", description="the evidence, one sentence")
    unavailable: str | None = Field(default=None, description="why there is no value")
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable extras")


class ValidateReport(BaseModel):
    """The whole `torchscale validate --json` document."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["torchscale.validate"] = "torchscale.validate"
    schema_version: Literal[3] = 3  # bump with SCHEMA_VERSION when the document changes
    torchscale_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    hostname: str
    device: Literal["cuda", "cpu"] = Field(description="the path that was validated")
    quick: bool = Field(description="true when the live smoke test was skipped")
    ok: bool = Field(description="true when no check failed (exit code 0)")
    counts: dict[CheckStatus, int]
    verdict: str = Field(description="one-paragraph conclusion for a person")
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


def read_validate_report(path: Path) -> ValidateReport:
    """A stored `validate --json` document of any schema version, as the current model:
    version 1 had no level or measurements (a basic run). ResultsError with one line when
    `path` is not one."""
    data, problem = read_json(path)
    if problem is None:
        problem = version_problem(data, "torchscale.validate", "validate report", SCHEMA_VERSION)
    if problem is not None:
        raise ResultsError(f"{path}: {problem}")
    upgraded = {**data, "schema_version": SCHEMA_VERSION}
    try:
        return ValidateReport.model_validate(upgraded)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = f"{where}: {first['msg']}"
        raise ResultsError(f"{path}: not a valid validate report: {why}") from None
