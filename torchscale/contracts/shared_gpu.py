"""Several ranks on one GPU (`launcher.ranks_per_gpu`): where a cell's ranks sit, and the
one name by which the launch tells a rank how many share its GPU.

A lent node with one GPU can then run the multi-rank CUDA paths (DDP, FSDP2, TP and their
hybrid) end to end. The ranks talk over gloo, which copies CUDA tensors through host memory:
NCCL refuses two ranks on one device. Such a cell measures torchscale's CUDA paths, not a
multi-GPU job: it is marked (`CellIdentity.ranks_per_gpu`, the warning `SHARED_GPU`) and
never ranked, compared or scaled with cells that had a GPU per rank (docs/first-gpu-run.md).
"""

from __future__ import annotations

from collections.abc import Mapping

RANKS_PER_GPU_ENV = "TORCHSCALE_RANKS_PER_GPU"
# the mark a shared cell's result and plan carry (worded in contracts/wording/cell_warnings.py)
SHARED_GPU = "warning.shared_gpu"
# why the plan skips a shared cell (worded in contracts/wording/plan.py)
NCCL_SHARED_GPU = "plan.nccl_shared_gpu"
GLOO_CUDA_P2P = "plan.gloo_cuda_p2p"


def gpus_for(ranks: int, ranks_per_gpu: int) -> int:
    """GPUs `ranks` ranks of a node take at most `ranks_per_gpu` a GPU."""
    return -(-ranks // max(1, ranks_per_gpu))


def gpu_index(local_rank: int, ranks_per_gpu: int) -> int:
    """The visible GPU a rank uses: consecutive local ranks fill one GPU before the next
    (ranks 0-1 on GPU 0, 2-3 on GPU 1 with two a GPU), so a TP group of adjacent ranks
    shares one where it can."""
    return local_rank // max(1, ranks_per_gpu)


def ranks_per_gpu_from(env: Mapping[str, str] | None, default: int = 1) -> int:
    """The launch's ranks per GPU from a rank's environment; 1 where unset or unreadable
    (one rank a GPU, as every launch without the setting)."""
    text = (env or {}).get(RANKS_PER_GPU_ENV, "")
    return int(text) if text.isdigit() and int(text) > 0 else default
