"""Version 19 -> 20 of a cell result: a cell the plan skipped stores why as a finding
(`error.skip`, a plan.* or layout.* code) beside its words (`error.reason`). A version 19 or
older skip kept only its words: read as stored (quoted evidence), its `skip` null."""

from __future__ import annotations

from typing import Any


def upgrade_v19(data: dict[str, Any]) -> dict[str, Any]:
    """Nothing to derive: the stored words stay, the code is unknown (null)."""
    return {**data, "schema_version": 20}
