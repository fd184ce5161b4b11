"""Entry point of every rank: `python -m torchscale.worker --spec CELL.json` under torchrun.

Rank 0 gathers every rank's measurements (outside the timed windows) and writes the cell's
result and per-step records atomically. Under torchelastic's @record, an exception in any rank
lands in the error file the sweep reads to name the root cause (and to tell an OOM).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from torchscale.atomic import write_text_atomic
from torchscale.models import parameter_count
from torchscale.worker.aggregate import CellFacts, aggregate
from torchscale.worker.environment import capture_environment
from torchscale.worker.measure import RankMeasurement, measure
from torchscale.worker.peaks import peak_tflops
from torchscale.worker.spec import WorkerSpec
from torchscale.worker.trainer import Trainer

INIT_TIMEOUT = timedelta(minutes=10)


def _device(spec: WorkerSpec) -> torch.device:
    if spec.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")


def _facts(spec: WorkerSpec, trainer: Trainer) -> CellFacts:
    if trainer.device.type == "cuda":
        name = torch.cuda.get_device_name(trainer.device)
        peak, note = peak_tflops(name, spec.precision, torch.backends.cuda.matmul.allow_tf32)
    else:
        name, peak, note = "cpu", None, "MFU is defined against GPU peak FLOP/s; none on CPU"
    return CellFacts(
        parameters=parameter_count(trainer.bundle.model),
        model_kind=trainer.bundle.kind,
        tokens_per_sample=trainer.bundle.tokens_per_sample,
        device_name=name,
        peak_tflops=peak,
        peak_note=note,
        environment=capture_environment(),
        fused_optimizer=trainer.fused_optimizer,
        channels_last=trainer.channels_last,
    )


def _step_records(measurements: list[RankMeasurement]) -> str:
    lines = []
    for m in sorted(measurements, key=lambda r: r.rank):
        for repeat, window in enumerate(m.windows):
            for step, seconds in enumerate(window.step_s):
                lines.append(
                    {
                        "rank": m.rank,
                        "window": "sync",
                        "repeat": repeat,
                        "step": step,
                        "time_s": seconds,
                    }
                )
        if m.no_sync is not None:
            for step, seconds in enumerate(m.no_sync.step_s):
                lines.append(
                    {
                        "rank": m.rank,
                        "window": "no_sync",
                        "repeat": 0,
                        "step": step,
                        "time_s": seconds,
                    }
                )
    return "".join(json.dumps(line) + "\n" for line in lines)


def run(spec: WorkerSpec) -> None:
    device = _device(spec)
    kwargs: dict[str, Any] = {"backend": spec.backend, "timeout": INIT_TIMEOUT}
    if spec.backend == "nccl":
        kwargs["device_id"] = device
    dist.init_process_group(**kwargs)
    try:
        trainer = Trainer.build(spec, device)
        mine = measure(trainer, socket.gethostname())
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, mine)
        if dist.get_rank() == 0:
            result = aggregate(spec, gathered, _facts(spec, trainer))
            write_text_atomic(spec.steps_path, _step_records(gathered))
            write_text_atomic(spec.result_path, result.model_dump_json(indent=2))
        dist.barrier()
    finally:
        dist.destroy_process_group()


@record
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="torchscale benchmark worker (one rank)")
    parser.add_argument("--spec", required=True, help="cell description (JSON)")
    args = parser.parse_args(argv)
    spec = WorkerSpec.model_validate_json(Path(args.spec).read_text(encoding="utf-8"))
    run(spec)


if __name__ == "__main__":
    main()
