"""What a check returns and what `validate --json` prints (schema-versioned)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Status(str, Enum):
    PASS = "PASS"  # noqa: S105
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"


class CheckResult(BaseModel):
    """One check: a verdict, what was seen, and how to fix it when it is not a PASS."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="stable identifier, e.g. 'nccl'")
    title: str = Field(description="short human name")
    status: Status
    detail: str = Field(description="what was found")
    hint: str = Field(default="", description="how to fix it (empty on PASS)")
    data: dict[str, Any] = Field(default_factory=dict, description="machine-readable facts")


def passed(id: str, title: str, detail: str, **data: Any) -> CheckResult:
    return CheckResult(id=id, title=title, status=Status.PASS, detail=detail, data=data)


def warned(id: str, title: str, detail: str, hint: str, **data: Any) -> CheckResult:
    return CheckResult(id=id, title=title, status=Status.WARN, detail=detail, hint=hint, data=data)


def failed(id: str, title: str, detail: str, hint: str, **data: Any) -> CheckResult:
    return CheckResult(id=id, title=title, status=Status.FAIL, detail=detail, hint=hint, data=data)


def skipped(id: str, title: str, detail: str, hint: str = "", **data: Any) -> CheckResult:
    return CheckResult(id=id, title=title, status=Status.SKIP, detail=detail, hint=hint, data=data)


class ValidateReport(BaseModel):
    """The whole `torchscale validate --json` document."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["torchscale.validate"] = "torchscale.validate"
    schema_version: Literal[1] = 1  # bump with SCHEMA_VERSION when the document changes
    torchscale_version: str
    created_at: str = Field(description="UTC time, ISO 8601")
    hostname: str
    device: Literal["cuda", "cpu"] = Field(description="the path that was validated")
    quick: bool = Field(description="true when the live smoke test was skipped")
    ok: bool = Field(description="true when no check failed (exit code 0)")
    counts: dict[Status, int]
    verdict: str = Field(description="one-paragraph conclusion for a person")
    checks: list[CheckResult]
