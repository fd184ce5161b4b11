"""A rank's torchelastic error file, written atomically.

torchrun's agent parses a failed rank's error file the moment it sees the rank gone, and a file
that exists but does not parse kills torchrun itself (docs/troubleshooting.md, "torchrun itself
failed"). torchelastic's own `ErrorHandler` truncates the file and then serialises into it, so
a rank stopped with SIGTERM between the two leaves an empty file. Here the same JSON goes to a
temporary file beside it, renamed over it: torchrun sees the previous file or the whole new one.

Every entry point of a rank wraps its `main` in `record_errors` (not torchelastic's bare
`@record`), and `harness.record_error` writes through the same handler.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from torch.distributed.elastic.multiprocessing.errors import ErrorHandler, record

from torchscale.contracts.atomic import write_text_atomic

_P = ParamSpec("_P")
_R = TypeVar("_R")


def error_record(error: BaseException) -> dict[str, object]:
    """What torchelastic's ErrorHandler writes for `error` (the format torchrun parses and
    copies into the node's error file): the "Type: message" line, the traceback, the time."""
    return {
        "message": {
            "message": f"{type(error).__name__}: {error}",
            "extraInfo": {
                "py_callstack": "".join(traceback.format_exception(error)),
                "timestamp": str(int(time.time())),
            },
        }
    }


class AtomicErrorHandler(ErrorHandler):
    """torchelastic's ErrorHandler, but the file appears whole or not at all."""

    def record_exception(self, e: BaseException) -> None:
        path = self._get_error_file_path()  # torchelastic's: TORCHELASTIC_ERROR_FILE, or None
        if path:
            write_text_atomic(path, json.dumps(error_record(e)))


def record_errors(main: Callable[_P, _R]) -> Callable[_P, _R | None]:
    """torchelastic's `@record` with the atomic handler: an exception that leaves `main` lands
    in this rank's error file, for torchrun's Root Cause block and the sweep's classifier."""
    return record(main, error_handler=AtomicErrorHandler())
