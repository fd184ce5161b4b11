"""The batch per device that fills a GPU, estimated before anything runs.

Used by `batch_sizes: auto` (plan/build.py) and by `torchscale config init` (config/starter.py), so
both size batches by one rule: the rule, its margin and why it is DDP's at one rank are in
docs/configuration.md, "batch_sizes: auto"; activations are counted on the meta device
(rank/models/activation_count.py). Imports nothing heavy: `config init` answers without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.contracts.wording.spell import GIB, as_set, gb, gib, pct_whole

MEMORY_BUDGET = 0.80  # of one GPU's memory: the allocator's slack, other processes
CUDA_CONTEXT_BYTES = 1 * GIB
ACTIVATION_MARGIN = 1.5
BYTES_PER_PARAMETER = {"adamw": 16, "sgd": 12}
AUTOCAST_COPY_BYTES = 2  # per parameter: autocast's 16-bit weight copies, saved for backward
CPU_BATCH = 8  # CPU ranks: nothing to fill (host memory is not what limits a CPU benchmark)


@dataclass(frozen=True)
class BatchFit:
    """A batch per device and why: the figures it was sized from, in one line."""

    batch: int
    basis: str


def autocasts(precision: str) -> bool:
    """Whether a cell of `precision` runs under 16-bit autocast (bf16, amp)."""
    return precision in ("bf16", "amp")


def activation_bytes(fp32: int, bf16: int, precision: str) -> int:
    """The per-sample activation count for a cell's precision: bf16 for bf16 cells, else
    fp32 (an upper bound for amp, whose residual stream stays fp32)."""
    return bf16 if precision == "bf16" else fp32


def fitting_batch(
    memory_bytes: int,
    parameters: int,
    activation_per_sample: float,
    *,
    precision: str,
    optimizer: str = "adamw",
    limit: int = 4096,
) -> BatchFit:
    """The largest power of two (1 to `limit`) whose estimated peak fits the budget."""
    copies = AUTOCAST_COPY_BYTES if autocasts(precision) else 0
    static = parameters * (BYTES_PER_PARAMETER[optimizer] + copies)
    per_sample = activation_per_sample * ACTIVATION_MARGIN
    budget = memory_bytes * MEMORY_BUDGET - CUDA_CONTEXT_BYTES - static

    def fits(batch: int) -> bool:
        return batch * per_sample <= budget

    batch = 1
    while batch * 2 <= limit and fits(batch * 2):
        batch *= 2
    if not fits(batch):
        why = "even 1 does not fit the estimate (a cell may run out of memory: oom)"
    elif batch * 2 > limit and fits(batch * 2):
        why = f"capped by memory.max_batch_limit {limit}"
    else:
        why = "the largest power of two that fits"
    return BatchFit(
        batch,
        f"{why}: {pct_whole(MEMORY_BUDGET)} of {gib(memory_bytes)} less "
        f"{gib(CUDA_CONTEXT_BYTES)} CUDA context and {gb(static)} weights, "
        f"gradients, {optimizer} state{' and autocast copies' if copies else ''}, "
        f"at {gb(per_sample, 3)} per sample "
        f"({gb(activation_per_sample, 3)} saved for backward x{as_set(ACTIVATION_MARGIN)})",
    )
