"""What `torchscale validate --json` writes (acceptance/<host>.<level>.json): the checks, the
measured figures and the verdict, versioned; the one reader is offline/results/documents.py.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record

VALIDATE_KIND = "torchscale.validate"
# what a version holds: docs/results.md, "Schema versions"; the one upgrade a version change
# ships from the version before it: offline/results/upgrade.py
SCHEMA_VERSION = 6
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
        description="what was found, as codes and figures, worded when shown",
    )
    fix: list[Finding] = Field(
        default_factory=list,
        description="how to fix it, as codes and figures, worded when shown",
    )


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
        description="the evidence as a code and its figures: the verdict against the SKU, or "
        "why there is no value",
    )
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable extras")


class ValidateReport(Record):
    """The whole `torchscale validate --json` document."""

    kind: Literal["torchscale.validate"] = "torchscale.validate"
    schema_version: Literal[6] = 6
    torchscale_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    hostname: str
    device: Literal["cuda", "cpu"] = Field(description="the path that was validated")
    quick: bool = Field(description="true when the live smoke test was skipped")
    ok: bool = Field(description="true when no check failed (exit code 0)")
    counts: dict[CheckStatus, int]
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
        default=None, description="workload: the folder holding everything it ran"
    )
    verdict_basis: Finding = Field(description="the conclusion as a code and figures")
