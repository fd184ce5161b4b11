"""The findings of a diagnosis read from point figures (`point_figures`), by the rule those
figures were judged by when they were measured.

Point figures have no interval, so the diagnosis' rule (a cost measurable above noise) cannot
judge them; instead a figure is a finding where it is a share the step can have, in [0, 1],
and at least its threshold: the others wait for the slowest rank `STRAGGLER_MIN` of the step,
communication is exposed `EXPOSED_COMM_MIN`, the input pipeline is waited for
`DATA_WAIT_MIN`. Each finding names its cell in its title and says it has no interval.
"""

from __future__ import annotations

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.schema.cell_result import CellResult, Estimate, Problem
from torchscale.contracts.wording.cell_figures import megabytes_per_s_fixed
from torchscale.contracts.wording.figures import pct as _pct
from torchscale.contracts.wording.figures import seconds
from torchscale.contracts.wording.shapes import cell_title
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.results.upgrades.older_blocks import OlderBlocks

STRAGGLER_MIN = 0.05  # the others' wait for the slowest rank, as a share of the step
EXPOSED_COMM_MIN = 0.10  # communication not hidden behind compute
DATA_WAIT_MIN = 0.10  # waiting for the next batch (input pipeline)
NO_INTERVAL = "point figure, no interval"
TP_ADVICE = (
    "Tensor-parallel collectives sit inside every layer's forward and backward: keep each "
    "tensor-parallel group inside one node (NVLink), or use a smaller tp with more data "
    "parallelism where memory allows."
)

DEVICE_AND_HOST_ADVICE = (
    "its device and host: clocks and throttling on GPUs, other processes and core pinning "
    "(OMP_NUM_THREADS, taskset/numactl) on CPU; then uneven inputs on that rank"
)
PHASE_ADVICE = {
    "data": "its input pipeline: more DataLoader workers, pinned memory, faster storage",
    "forward": DEVICE_AND_HOST_ADVICE,
    "backward": DEVICE_AND_HOST_ADVICE,
    "optimizer": "host-side work in its optimizer step (offload, non-fused optimizer) and its "
    "device",
}


def _seconds(value: float | None) -> str:
    """Seconds as the report writes them (µs / ms / s, three significant figures)."""
    return "-" if value is None else seconds(value)


def cell_words(cell: CellIdentity) -> str:
    """'tiny-mlp b8 x2 fp32 ddp': the cell a point-figure finding is about, as its title says."""
    return cell_title(cell, cell.strategy)


def _finding(title: str, category: str, share: float, evidence: list[str], advice: str) -> Problem:
    return Problem(
        title=title,
        category=category,
        cost_share=Estimate(
            value=share, low=None, high=None, n=1, method=NO_INTERVAL, measurable=True
        ),
        evidence=evidence,
        recommendation=advice,
    )


def straggler_finding(result: CellResult, older: OlderBlocks) -> Problem | None:
    """The slowest rank by compute, where the others wait for it at least `STRAGGLER_MIN` of
    the step (and a share it can have). No injected-delay note: the report marks a straggler
    the run delayed on purpose, for every diagnosis alike."""
    straggler, comm = older.straggler, older.communication
    imbalance = finite(comm.load_imbalance) if comm else None
    if straggler is None or imbalance is None or not STRAGGLER_MIN <= imbalance <= 1.0:
        return None
    rank = straggler.rank
    title = f"{cell_words(result.cell)}: rank {rank} is the straggler"
    evidence = [
        f"compute time ({straggler.basis}): rank {rank} {_seconds(straggler.compute_s)} "
        f"against {_seconds(straggler.others_compute_s)} for the other ranks (median)"
    ]
    if straggler.phase is not None and straggler.gap_s is not None:
        title += f", slow in {straggler.phase}"
        evidence.append(
            f"its {straggler.phase} phase takes {_seconds(straggler.gap_s)} longer than "
            "the other ranks' (phase timers, medians)"
        )
    waits = [
        f"rank {r.rank} {_seconds(r.phases.grad_sync_wait)}"
        for r in result.ranks
        if r.phases is not None and r.phases.grad_sync_wait is not None
    ]
    if waits:
        evidence.append(f"grad-sync wait per step: {', '.join(waits)}")
    evidence.append(f"the other ranks wait for it {_pct(imbalance)} of each step")
    advice = PHASE_ADVICE.get(straggler.phase or "", PHASE_ADVICE["backward"])
    return _finding(title, "straggler", imbalance, evidence, f"Check rank {rank}: {advice}.")


def _comm_advice(result: CellResult) -> str:
    network = (
        "set GLOO_SOCKET_IFNAME to the fast interface"
        if result.cell.backend == "gloo"
        else "check the NCCL transport (NCCL_DEBUG=INFO: NVLink/IB, not sockets)"
    )
    return (
        "Hide or shrink gradient communication: DDP bucket_cap_mb, gradient_as_bucket_view, "
        f"gradient accumulation under no_sync(), a bf16 compression hook; {network}."
    )


def exposed_comm_finding(result: CellResult, older: OlderBlocks) -> Problem | None:
    """Communication not hidden behind the slowest rank's compute, at least
    `EXPOSED_COMM_MIN` of the step (and a share it can have)."""
    comm = older.communication
    share = finite(comm.comm_overhead) if comm else None
    if comm is None or share is None:
        return profiled_comm_finding(result)
    if not EXPOSED_COMM_MIN <= share <= 1.0:
        return None
    evidence = [
        f"median step {_seconds(comm.step_time_s)}, slowest rank's compute "
        f"{_seconds(comm.slowest_compute_s)} (no_sync): "
        f"{_seconds(comm.exposed_comm_s)} of communication is not hidden",
    ]
    imbalance = finite(comm.load_imbalance)
    if imbalance is not None and 0.0 <= imbalance <= 1.0:
        evidence.append(f"load imbalance {_pct(imbalance)} of the step")
    evidence.append(NO_INTERVAL)
    title = f"{cell_words(result.cell)}: exposed communication {_pct(share)} of each step"
    return _finding(title, "exposed_comm", share, evidence, _comm_advice(result))


def profiled_comm_finding(result: CellResult) -> Problem | None:
    """A tensor-parallel cell's exposed transfer in its profiled steps (no no_sync window),
    at least `EXPOSED_COMM_MIN` of the step (and a share it can have)."""
    profiled = result.parallel.profiled_comm if result.parallel is not None else None
    share = finite(profiled.exposed_transfer) if profiled is not None else None
    if profiled is None or share is None or not EXPOSED_COMM_MIN <= share <= 1.0:
        return None
    evidence = [
        f"{profiled.steps} steps profiled after the measured windows ({profiled.scope}): "
        f"{_pct(share)} of the step with a collective running, nothing computing and no peer "
        "waited for",
        NO_INTERVAL,
    ]
    title = f"{cell_words(result.cell)}: exposed communication {_pct(share)} of each step"
    return _finding(title, "exposed_comm", share, evidence, TP_ADVICE)


def data_wait_finding(result: CellResult) -> Problem | None:
    """The step waits for its batch at least `DATA_WAIT_MIN` of the step: the DataLoader or
    the storage under it (never for synthetic data, made on the device once)."""
    data = result.data
    share = finite(data.share) if data else None
    if data is None or data.source == "synthetic" or share is None:
        return None
    if not DATA_WAIT_MIN <= share <= 1.0:
        return None
    evidence = [
        f"{data.source} data: the slowest rank waits {_seconds(data.wait_s)} per "
        f"step for its batch ({_pct(share)} of the median step)",
    ]
    if data.read_bytes_per_s is not None:
        evidence.append(
            f"read {megabytes_per_s_fixed(data.read_bytes_per_s)} over the measured windows"
        )
    workers = f"{data.num_workers} worker(s)" if data.num_workers is not None else "the workers"
    return _finding(
        f"{cell_words(result.cell)}: input pipeline waits {_pct(share)} of each step",
        "data_wait",
        share,
        evidence,
        f"Feed the GPUs faster: more DataLoader workers than {workers}, "
        "pin_memory with non-blocking copies, a larger prefetch_factor, faster or local "
        "storage (copy the dataset to NVMe), or decode and augment on the GPU.",
    )


def point_figure_findings(result: CellResult, older: OlderBlocks) -> list[Problem]:
    """The findings of a result judged by its point figures, most expensive first: the data
    wait, and with two ranks or more the straggler and exposed communication."""
    found = [data_wait_finding(result)]
    if result.cell.world_size >= 2:
        found += [straggler_finding(result, older), exposed_comm_finding(result, older)]
    return sorted((f for f in found if f is not None), key=lambda f: -f.cost_pct)
