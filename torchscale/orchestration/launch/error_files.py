"""Reading torchelastic error files, and telling a rank's exception from torchrun's own
(docs/troubleshooting.md, 'A reason ends in "torchrun itself failed ..."').

A node's error file (TORCHELASTIC_ERROR_FILE) normally holds a copy of the first failed rank's.
When torchrun failed itself (its agent re-raises the parse error of a rank's file that exists
but does not parse, or it lost the rendezvous store) the file holds torchrun's exception with
torchrun's own call stack, and the rank's exception must come from the ranks' own files
(failure.py). The call stack tells the two apart: every stack torchrun records runs through its
launcher (`torch/distributed/run.py`, `torch/distributed/launcher/api.py`); a rank's never
does. A file that does not parse is no error at all here: a symptom, never a root cause.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.versioned import read_json_object

# a frame of torchrun's own process: its entry point or the launcher it calls
_TORCHRUN_FRAME = re.compile(
    r'File "[^"]*[/\\]torch[/\\]distributed[/\\](?:run\.py|launcher[/\\]api\.py)"'
)
# what torchrun logs when a rank's error file exists but does not parse (torch 2.x's
# ProcessFailure), followed by that file's path
UNREADABLE_REPLY = re.compile(r"Failed to parse reply file: (?P<path>\S+)")


@dataclass(frozen=True)
class RecordedError:
    """One error file: the exception's last line ("RuntimeError: ..."), and whether torchrun
    raised it itself rather than copying a rank's."""

    exception: str
    by_torchrun: bool = False


def read_recorded_error(path: Path) -> RecordedError | None:
    """The error recorded in a torchelastic error file; None when it is missing, empty, torn or
    holds no message."""
    data = read_json_object(path)
    message = data.get("message") if data is not None else None
    callstack = ""
    if isinstance(message, dict):
        extra = message.get("extraInfo")
        if isinstance(extra, dict):
            callstack = str(extra.get("py_callstack") or "")
        message = message.get("message")
    lines = str(message).strip().splitlines() if message else []
    return RecordedError(lines[-1], bool(_TORCHRUN_FRAME.search(callstack))) if lines else None


def read_error_file(path: Path) -> str | None:
    """The exception line ("RuntimeError: ...") from a torchelastic error file."""
    recorded = read_recorded_error(path)
    return recorded.exception if recorded else None


def node_errors(error_file: Path) -> list[RecordedError]:
    """The errors recorded by this launch's torchrun(s): `error_file`, then those of the other
    nodes of a Slurm step or Kubernetes job (node k writes error-node<k>.json,
    torchscale/orchestration/schedulers/slurm/node.py)."""
    paths = [error_file]
    with contextlib.suppress(OSError):
        paths += sorted(error_file.parent.glob(f"{error_file.stem}-node*{error_file.suffix}"))
    return [e for e in (read_recorded_error(p) for p in paths) if e]


def unreadable_replies(log: str) -> list[str]:
    """The rank error files torchrun said it could not parse, as its log names them."""
    return [match["path"] for match in UNREADABLE_REPLY.finditer(log)]
