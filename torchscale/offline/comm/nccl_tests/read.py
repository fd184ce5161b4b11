"""The entry points: an nccl-tests output file, text or `-J` JSON, or its text or JSON already
in memory, read, checked and returned as one CommResult.
"""

from __future__ import annotations

import re
from pathlib import Path

from torchscale.contracts.errors import UsageError, describe_os_error
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.offline.comm.nccl_tests.json_scan import scan_json
from torchscale.offline.comm.nccl_tests.result import build_result, convert, usable_runs
from torchscale.offline.comm.nccl_tests.text_scan import scan_text


def read_nccl_tests(path: Path, op: str | None = None, run_id: str | None = None) -> CommResult:
    """Read an nccl-tests output file, text or `-J` JSON (told apart by the first character).
    `op` names the test when the file does not (older text output); `run_id` defaults to
    "nccl-tests-<file stem>"."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {describe_os_error(exc)}") from None
    text = data.decode("utf-8", errors="replace")
    rid = run_id or default_run_id(path)
    if text.lstrip().startswith("{"):
        return parse_json(text, op=op, source_name=str(path), run_id=rid)
    return parse_text(text, op=op, source_name=str(path), run_id=rid)


def parse_text(text: str, *, op: str | None, source_name: str, run_id: str) -> CommResult:
    """nccl-tests' stdout (one run, or several printed one after another) as one CommResult."""
    runs = scan_text(text, source_name)
    usable, skipped = usable_runs(runs, source_name)
    converted = [convert(run, op, source_name) for run in usable]
    return build_result(runs, usable, converted, skipped, source_name, run_id)


def parse_json(text: str, *, op: str | None, source_name: str, run_id: str) -> CommResult:
    """The JSON nccl-tests writes with `-J/--output_file` as a CommResult."""
    run = scan_json(text, source_name)
    usable, skipped = usable_runs([run], source_name)
    converted = [convert(run, op, source_name)]
    return build_result([run], usable, converted, skipped, source_name, run_id)


def default_run_id(path: Path) -> str:
    """A run id from the file's name, in the characters a file name always allows."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-.")
    return f"nccl-tests-{stem or 'import'}"
