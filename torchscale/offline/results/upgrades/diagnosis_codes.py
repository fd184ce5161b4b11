"""Result schema 19 -> 20: the diagnosis stores each fact once. A ranked problem's cost was
stored as `cost_pct` beside `cost_share`, a straggler verdict's `host_bound` beside its
`kind`, a disagreeing cross-check's line (`disagreement`) beside the checks it is read from.

The copies are folded where the schema reads them (`Problem._cost_once`,
`StragglerVerdict._host_once`, `Diagnosis._checks_once` in contracts/schema/cell_result.py),
because a profile analysis (analysis.json, schema 9 and older) embeds the same diagnosis and
is read by the same classes; this step only moves the version.
"""

from __future__ import annotations

from typing import Any


def upgrade_v19(data: dict[str, Any]) -> dict[str, Any]:
    """Version 19 -> 20: the diagnosis' copies are dropped as the schema reads it."""
    return {**data, "schema_version": 20}
