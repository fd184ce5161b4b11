"""What a user's step holds besides its time: its FLOPs and the bytes its optimizers keep.

FLOPs: the job's own second optimizer step (a warm-up step, never measured: counting runs
Python at every op) runs under `StepFlops`, a dispatch mode that only counts: each op is run
as called and its result returned untouched, then torch's own FLOP formulas
(`torch.utils.flop_counter.flop_registry`, FlopCounterMode's) are applied to its shapes. No
module hooks (FlopCounterMode's module tracker adds autograd nodes around every module), no
RNG draw, no change to a tensor: the job computes what it would have. A formula that raises
stops the count (the step still runs); nothing it raises reaches the job. FLOPs are kept per
the matmul inputs' dtype, so the host picks the peak the job's own arithmetic runs at.

Bytes: of the parameters, gradients and optimizer state every optimizer the job stepped
holds on this rank (a DTensor shard's local bytes under FSDP2), as the worker counts a cell's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchscale.rank.tensor_bytes import static_bytes

COUNTED_STEP = 2  # the first step the probe sees whole: it decides at step 1's end
CONV_OPS = ("convolution", "_convolution", "convolution_backward")


def _first_dtype(args: Iterable[Any]) -> str:
    for arg in args:
        if isinstance(arg, torch.Tensor):
            return str(arg.dtype).removeprefix("torch.")
    return "other"


class StepFlops(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Counts one step's FLOPs by the inputs' dtype (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        from torch.utils.flop_counter import flop_registry

        self.registry = flop_registry
        self.by_dtype: dict[str, float] = {}
        self.conv = 0.0
        self.error: str | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.error is None:
            try:
                packet = func._overloadpacket
                formula = self.registry.get(packet)
                if formula is not None:
                    flops = float(formula(*args, **kwargs, out_val=out))
                    dtype = _first_dtype(args)
                    self.by_dtype[dtype] = self.by_dtype.get(dtype, 0.0) + flops
                    if packet.__name__ in CONV_OPS:
                        self.conv += flops
            except Exception as exc:  # the count stops; the op's result is the job's
                self.error = f"{type(exc).__name__}: {exc}"
        return out

    def record(self) -> dict[str, Any]:
        """The measurement's fields: the step's FLOPs, or why none."""
        total = sum(self.by_dtype.values())
        if self.error is not None:
            figures = {"error": self.error, "step": COUNTED_STEP}
            failed = {"code": "unavailable.own_job_flop_count_failed", "figures": figures}
            return {"flops_note": failed}
        if total <= 0:
            return {"flops_note": {"code": "unavailable.no_flops_counted", "figures": {}}}
        by_dtype = {k: v for k, v in self.by_dtype.items() if v > 0}
        return {"flops_per_step": total, "flops_by_dtype": by_dtype, "conv_flops": self.conv}


def compiled() -> bool:
    """torch.compile made a graph in this process: the counted step would run outside it."""
    dynamo = sys.modules.get("torch._dynamo.utils")
    if dynamo is None:
        return False
    try:
        return bool(dynamo.counters["stats"]["unique_graphs"])
    except Exception:  # private API: assume compiled, never count outside compiled code
        return True


def not_counted(code: str) -> dict[str, Any]:
    return {"flops_note": {"code": code, "figures": {"step": COUNTED_STEP}}}


def optimizer_facts(optimizers: list[Any]) -> dict[str, Any]:
    """The measurement's static bytes and parameter count (every element, DTensors whole) of
    the parameters the job's optimizers train."""
    seen: dict[int, torch.Tensor] = {}
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            for p in group["params"]:
                seen.setdefault(id(p), p)
    params = list(seen.values())
    if not params:
        return {}
    return {
        "static": static_bytes(params, optimizers),
        "parameters": sum(int(p.numel()) for p in params),
        "sharded": any(hasattr(p, "to_local") for p in params),  # FSDP2's DTensors
    }
