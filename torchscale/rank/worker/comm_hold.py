"""How long a DDP communication hook holds a rank's gradient collectives before launching them.

A rank whose hook sleeps, compresses or waits before it hands DDP the future of its all-reduce
is late at every collective, yet no phase timer sees it: the others wait for it exactly as long
as it waits in its own hook, so every rank's backward and grad-sync wait come out equal. The
only per-rank trace of it is the time spent inside the hook itself, which this module adds up.

The plug-in registers its hook on the DDP wrapper (`ModelBundle.ddp_comm_hook`); `timed_hooks`
hands it the wrapper with `register_comm_hook` replaced, on that instance only, by one that
registers the same hook inside a wrapper that adds the hook's own wall time (the call to its
return, host clock) to a running tally. The phase recorder reads the tally at its step edges
and at the last gradient, the way it reads the CPU clock (worker/phases.py). The tally is a
running sum, so windows, warm-up and no_sync steps need no resetting: only differences are read.

On CUDA the hook's host time is what delays the launch of its collective on the host; a hook
that enqueues slow device work instead is not counted here (the traces see it as kernels).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

HOOK_TIMED = "the plug-in's ddp_comm_hook registered (the time it holds each launch is timed)"


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
