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
On CUDA: the device's name, its TF32 settings and the rank's memory peaks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

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


class FlopCount:
    """The count of step COUNTED_STEP's FLOPs over the steps of one rank: started at the end
    of the step before it (a warm-up step with at least one more after it), ended at its own
    end; `facts` is the measurement's record, or why none."""

    def __init__(self) -> None:
        self.mode: Any = None  # the StepFlops mode while the counted step runs
        self.facts: dict[str, Any] = {}

    def step_ended(self, count: int, warmup: int) -> None:
        """At the end of step `count` (of `warmup` warm-up steps): start or end the count."""
        if self.mode is not None:
            self._leave()
        elif count == COUNTED_STEP - 1 and not self.facts:
            if warmup <= COUNTED_STEP:
                self.facts = not_counted("unavailable.own_job_flops_warmup")
            elif compiled():
                self.facts = not_counted("unavailable.own_job_flops_compiled")
            else:
                self.mode = StepFlops()
                self.mode.__enter__()

    def _leave(self) -> None:
        """Leave the counting mode where it is the innermost (a mode the job entered inside
        the step is left first: tried again at the next step's end)."""
        mode = self.mode
        if id(_get_current_dispatch_mode()) != id(mode):  # the innermost: ours to leave
            return
        mode.__exit__(None, None, None)
        self.facts, self.mode = mode.record(), None

    def unfinished(self) -> None:
        """The rank writes before the counted step ended: its count is partial, none kept."""
        if self.mode is None:
            return
        if id(_get_current_dispatch_mode()) == id(self.mode):
            self.mode.__exit__(None, None, None)
        self.mode, self.facts = None, not_counted("unavailable.own_job_flops_unfinished")


def device_facts(device: Any) -> dict[str, Any]:
    """On CUDA, what the host needs to choose the peak MFU divides by: the device's name and
    the TF32 settings; nothing on CPU (`device` None)."""
    if device is None:
        return {}
    from torchscale.rank.worker.tf32_settings import read_tf32_settings

    return {
        "device_name": torch.cuda.get_device_name(device),
        "tf32": asdict(read_tf32_settings()),
    }


def cuda_peaks(device: Any) -> dict[str, int]:
    """The rank's peak allocated and reserved memory on its CUDA device; nothing on CPU."""
    if device is None:
        return {}
    return {
        "peak_allocated": int(torch.cuda.max_memory_allocated(device)),
        "peak_reserved": int(torch.cuda.max_memory_reserved(device)),
    }


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
