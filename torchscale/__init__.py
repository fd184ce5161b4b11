"""torchscale: benchmark, profile and report on PyTorch distributed training."""

__version__ = "0.10.0"


def mark_step() -> None:
    """End a training step for `torchscale profile -- COMMAND` (docs/own-job.md), in a loop
    that steps no torch.optim optimizer: call it once per step. It does nothing in a process
    the probe is not in, and never raises for torchscale's sake (the probe fails open)."""
    import sys

    probe = sys.modules.get("torchscale.rank.own_job.probe")
    if probe is not None:
        probe.mark_step()
