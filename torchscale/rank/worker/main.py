"""Every rank of a cell: `python -m torchscale.rank.worker.main --spec CELL.json` under torchrun.

The cell is a body on the harness of every rank program (rank/worker/harness.py: the process
group, the gather, rank 0's atomic write, the teardown, the error file where the sweep reads
the root cause and tells an OOM). Besides the harness's stages, a cell's rank times its fixed
costs (rank/worker/fixed_costs.py) and, with a profile in the spec, runs the profiled steps
(rank/worker/capture.py) after its measured windows; rank 0 aggregates and writes the result
and the per-step records.
"""

from __future__ import annotations

if __name__ == "__main__":
    # first, before torch (seconds to import): a torchrun that dies from here on takes this
    # rank with it, and one already gone makes it exit now (importing it elsewhere: no effect)
    from torchscale.rank.worker.diagnostics import die_with_torchrun

    die_with_torchrun()

import gc
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import torch

from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import PRECISION_DTYPE, Peak, cell_peak, tf32_off_warning
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.models import parameter_count
from torchscale.rank.worker.capture import capture
from torchscale.rank.worker.cpu_binding import bind_cpu_rank
from torchscale.rank.worker.fixed_costs import (
    CPU_DEVICE_INIT,
    RankFixedCosts,
    process_start_seconds,
)
from torchscale.rank.worker.harness import Group, Join, Program, rank_device, spec_file
from torchscale.rank.worker.measure import measure
from torchscale.rank.worker.measured_peak import read_measured_peak
from torchscale.rank.worker.run_environment import capture_environment
from torchscale.rank.worker.tf32_settings import read_tf32_settings
from torchscale.rank.worker.timing import synchronize
from torchscale.rank.worker.trainer import Trainer

if TYPE_CHECKING:
    from torchscale.rank.worker.aggregate import CellFacts


def _facts(spec: WorkerSpec, trainer: Trainer) -> CellFacts:
    """What rank 0 records besides the measurements: the model, the peak MFU divides by (and
    why that one), and the settings this worker chose that change the figures."""
    from torchscale.rank.worker.aggregate import CellFacts  # scipy, pandas: after the windows

    tf32_record: dict[str, str] | None = None  # no TF32 on CPU
    warnings: tuple[CellWarning, ...] = ()
    if trainer.device.type == "cuda":
        name = torch.cuda.get_device_name(trainer.device)
        tf32 = read_tf32_settings()
        peak = cell_peak(name, spec.cell.precision, trainer.bundle.conv_net, tf32)
        tf32_record = {"matmul": tf32.matmul_source, "conv": tf32.conv_source}
        tf32_off = tf32_off_warning(name, spec.cell.precision, trainer.bundle.conv_net, tf32)
        warnings = (CellWarning.of("other", "warning.tf32_off", tf32_off),) if tf32_off else ()
    else:
        name = "cpu"
        peak = Peak(None, Finding(code="peak.cpu"), None)
    recorded = trainer.settings | {
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "tf32": tf32_record,
    }
    return CellFacts(
        parameters=parameter_count(trainer.bundle.model),
        model_kind=trainer.bundle.kind,
        tokens_per_sample=trainer.bundle.tokens_per_sample,
        device_name=name,
        peak_tflops=peak.tflops,
        peak_note=peak.note,
        environment=capture_environment() | recorded,
        fused_optimizer=trainer.fused_optimizer,
        channels_last=trainer.channels_last,
        peak_basis=peak.basis,
        warnings=warnings,
    )


def mfu_dtype(spec: WorkerSpec, trainer: Trainer) -> str:
    """The dtype whose peak MFU divides by, as `cell_peak` chooses it: fp32 runs on TF32
    units on a GPU where its matmuls (or a conv net's convolutions) may use them."""
    dtype = PRECISION_DTYPE[spec.cell.precision]
    if dtype == "fp32" and trainer.device.type == "cuda":
        tf32 = read_tf32_settings()
        if tf32.matmul or (trainer.bundle.conv_net and tf32.conv):
            return "tf32"
    return dtype


@dataclass
class CellRun:
    """One rank's run of a cell: its spec, rank 0's clock at the start (the host's launcher
    records its own over it, but a Kubernetes job's rank 0 writes the cell with no host process
    after it, and a forecast is scored only by a cell that started after it was made), and the
    fixed costs it times as it goes (`clock`: when the last timed stage ended)."""

    spec: WorkerSpec
    started: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    costs: RankFixedCosts = field(default_factory=RankFixedCosts)
    clock: float = 0.0

    def ready(self, kind: str) -> torch.device:
        """This rank's device, its set-up timed on its own (fixed_costs.device_init_s). On
        CUDA the context is made now (a first allocation), and cuDNN autotuning is switched
        on, as training with fixed shapes runs it (the warm-up absorbs its first-call cost);
        a CPU rank is bound to its cores before any thread starts (gloo's, intra-op)."""
        clock = time.perf_counter()
        device = rank_device(kind)
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
            torch.cuda.init()
            torch.empty(1, device=device)
            torch.cuda.synchronize(device)
            self.costs.device_init_s = time.perf_counter() - clock
        else:
            self.costs.notes["device_init_s"] = CPU_DEVICE_INIT
            bind_cpu_rank()
        self.clock = time.perf_counter()
        return device


DESCRIPTION = "torchscale benchmark worker (one rank)"


def read_cell(argv: Sequence[str] | None) -> CellRun:
    """The cell's spec, and the time from torchrun's start to here (process_start_s)."""
    cell = CellRun(spec_file(WorkerSpec, DESCRIPTION)(argv))
    cell.costs.process_start_s, why = process_start_seconds()
    if why is not None:
        cell.costs.notes["process_start_s"] = why
    return cell


def body(cell: CellRun, group: Group) -> None:
    """Measure the cell on this rank; rank 0 aggregates every rank's measurements (outside
    the timed windows) and writes the result and the per-step records."""
    spec, costs = cell.spec, cell.costs
    group.barrier()  # the first collective: NCCL's communicators exist after it
    costs.process_group_init_s = time.perf_counter() - cell.clock
    clock = time.perf_counter()
    trainer = Trainer.build(spec, group.device)
    synchronize(group.device)
    costs.model_build_s = time.perf_counter() - clock
    # what set-up made (torch's modules, dynamo, the model) lives as long as the rank:
    # kept out of every later collection, so the one at each window's edge scans only the
    # steps' objects (0.16 s a window on 2 CPU cores without this; docs/methodology.md)
    gc.freeze()
    mine = measure(trainer, socket.gethostname())
    costs.warmup_s = mine.fixed.warmup_s
    mine.fixed = costs
    mine.measured_peak = read_measured_peak(
        spec.acceptance_dirs, socket.gethostname(), mfu_dtype(spec, trainer)
    )
    if spec.profile is not None:  # after the measured windows, outside them
        outcome = capture(trainer, spec.profile, group.rank)
        mine.profile_capture_s = outcome.capture_s
        mine.profile_files = outcome.files
        mine.profile_notes = outcome.notes
    elif spec.cell.parallel is not None and spec.cell.parallel.tp > 1:
        from torchscale.rank.worker.comm_probe import probe_rank

        mine.comm_probe = probe_rank(trainer, group.rank)
    trainer.close()  # DataLoader workers: gone before the gather (also at exit, on error)
    gathered = group.gather(mine)
    if group.rank == 0:
        # imported here, after every window: scipy and pandas cost a rank 0.7 s of CPU
        # and 90 MiB at start-up (docs/methodology.md); only rank 0 aggregates
        from torchscale.rank.worker.aggregate import aggregate, step_records

        result = aggregate(spec, gathered, _facts(spec, trainer))
        result.started_at = result.started_at or cell.started
        group.write(spec.steps_path, step_records(gathered))
        group.write(spec.result_path, result.model_dump_json(indent=2))


PROGRAM = Program(
    DESCRIPTION,
    read_cell,
    lambda cell: Join(cell.spec.cell.backend, cell.spec.cell.device, ready=cell.ready),
    body,
)


if __name__ == "__main__":
    from torchscale.rank.worker.harness import main

    main(PROGRAM)
