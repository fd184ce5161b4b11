"""How long a DDP communication hook holds a rank's gradient collectives before launching them.

No phase timer sees a late launch (every rank's grad-sync wait ends together), so the hook's own
wall time is added up here; docs/methodology.md, "The kind of a straggler", says how it is read.
`timed_hooks` replaces `register_comm_hook` on that DDP instance only. The tally is a running
sum, so windows, warm-up and no_sync steps need no resetting: only differences are read. On CUDA
only the hook's host time is counted; device work it enqueues is seen by the traces as kernels.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

HOOK_TIMED = "timed"  # the plug-in's hook registered, the time it holds each launch timed


class HoldTally:
    """Seconds spent inside the rank's DDP communication hooks so far (a running sum)."""

    __slots__ = ("held_s",)

    def __init__(self) -> None:
        self.held_s = 0.0


def timed_hook(hook: Callable[[Any, Any], Any], tally: HoldTally) -> Callable[[Any, Any], Any]:
    """`hook` with its own time added to `tally`. functools.wraps keeps the hook's signature
    (`inspect.signature` follows `__wrapped__`), which DDP checks against GradBucket and
    Future before it registers a hook."""

    @functools.wraps(hook)
    def timed(state: Any, bucket: Any) -> Any:
        start = time.perf_counter()
        try:
            return hook(state, bucket)
        finally:
            tally.held_s += time.perf_counter() - start

    return timed


def timed_hooks(ddp: Any, tally: HoldTally) -> None:
    """Make every hook registered on `ddp` from now on a timed one (this instance only)."""
    register = ddp.register_comm_hook

    def register_timed(state: object, hook: Callable[[Any, Any], Any]) -> None:
        register(state, timed_hook(hook, tally))

    ddp.register_comm_hook = register_timed
