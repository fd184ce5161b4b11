"""Why a cell did not produce a result: timeout, out of memory, or a rank that raised.

torchrun names the first failing rank in its "Root Cause" block, and the worker's @record writes
that rank's exception to the error file; both are read here, neither is required.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.launch.process import ProcessOutcome

OOM_MARKERS = (
    "OutOfMemoryError",
    "CUDA out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "DefaultCPUAllocator: can't allocate memory",
    "MemoryError",
)
_ROOT_CAUSE_RANK = re.compile(r"Root Cause.*?rank\s*:\s*(\d+)", re.S)


@dataclass(frozen=True)
class CellFailure:
    status: str  # "failed" | "oom" | "timeout"
    reason: str
    root_cause_rank: int | None
    exception: str | None
    log_tail: str

    def as_error(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "root_cause_rank": self.root_cause_rank,
            "exception": self.exception,
            "log_tail": self.log_tail,
        }


def read_error_file(path: Path) -> str | None:
    """The exception line ("RuntimeError: ...") from a torchelastic error file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    if not message:
        return None
    lines = str(message).strip().splitlines()
    return lines[-1] if lines else None


def classify_failure(outcome: ProcessOutcome, error_file: Path, timeout_s: float) -> CellFailure:
    """Turn a cell run that left no result into its status and a one-line reason."""
    log = ""
    with contextlib.suppress(OSError):
        log = outcome.log_path.read_text(encoding="utf-8", errors="replace")
    tail = "\n".join(log.splitlines()[-30:])
    if outcome.timed_out:
        return CellFailure(
            "timeout",
            f"killed after the {timeout_s:g} s cell timeout (hang or far slower than expected)",
            None,
            None,
            tail,
        )
    exception = read_error_file(error_file)
    match = _ROOT_CAUSE_RANK.search(log)
    rank = int(match.group(1)) if match else None
    evidence = exception if exception else log  # the exception itself, when known
    if any(marker in evidence for marker in OOM_MARKERS):
        return CellFailure("oom", f"out of memory: {exception or 'see log'}", rank, exception, tail)
    where = f"rank {rank}" if rank is not None else "a rank"
    reason = (
        f"{where} raised {exception}"
        if exception
        else (f"torchrun exited with {outcome.returncode}")
    )
    return CellFailure("failed", reason, rank, exception, tail)
