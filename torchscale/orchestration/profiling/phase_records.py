"""The `rank<k>.phases.json` a profiled rank writes beside its trace
(torchscale/rank/worker/capture.py), read once per file for whoever needs it: the capture
overhead (its step times) and the trace analysis (its waits for a CPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchscale.contracts.worker_spec import phases_name


def read_phase_record(directory: Path, rank: int) -> dict[str, Any] | None:
    """Rank `rank`'s record in `directory`; None when it is absent, unreadable or not a
    record (traces of other jobs have none)."""
    try:
        record = json.loads((directory / phases_name(rank)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None
