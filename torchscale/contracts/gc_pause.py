"""Python's cyclic garbage collector paused for a stretch of work, then as it was.

Two callers need it: a rank's measured windows (a collection inside a step stalls the rank at a
random point) and a report's build (its passes over millions of short-lived objects freed
nothing). Reference counting still frees what dies; only reference cycles wait.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def cyclic_gc_paused(*, collect_first: bool = False) -> Iterator[None]:
    """Automatic collection off inside the block (after one collection when `collect_first`),
    on again after it only if it was on before."""
    was_enabled = gc.isenabled()
    if collect_first:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
