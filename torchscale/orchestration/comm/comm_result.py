"""The comm result types under the name the report still imports them by; they live in
contracts/schema/comm_result.py (the comm program's ranks write them). Import from there: this
module goes once the report does.
"""

from __future__ import annotations

from torchscale.contracts.schema.comm_result import (
    COMM_KIND,
    COMM_SCHEMA_VERSION,
    CommPair,
    CommResult,
    CommRow,
    OpSummary,
)

__all__ = ["COMM_KIND", "COMM_SCHEMA_VERSION", "CommPair", "CommResult", "CommRow", "OpSummary"]
