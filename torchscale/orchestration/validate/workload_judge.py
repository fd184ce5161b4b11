"""The verdicts of `validate --level workload`: one CheckResult per step, from what the step
left (cell results, the max-batch search, the profiles, the collective sweep, the report).
Pure: the runner (torchscale/interfaces/api/workload.py) hands over what ran.

A step PASSes when its path worked end to end and its figures are possible; it FAILs when the
path broke (the reason and where to look), and WARNs when it ran but a figure is outside what
the path can give on a healthy node. These are not performance targets: the cells are seconds
long, so only figures that are wrong by a wide margin are judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.cell import Status
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    failed,
    passed,
    skipped,
    warned,
)

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.comm_result import CommResult
    from torchscale.orchestration.memory.max_batch_result import MaxBatchResult
    from torchscale.orchestration.profiling.session import ProfiledCell

# MFU of GPT-2 124M at batch 8 in bf16: 16-17 % eager on one H100 (docs/measured.md). A short
# cell of it below MFU_FLOOR is a GPU far from its clocks (throttled, shared, a wrong peak); above
# MFU_CEILING no dense training step goes, so the FLOP count or the peak is wrong
MFU_FLOOR = 0.04
MFU_CEILING = 0.75
MFU_SOURCE = "GPT-2 124M, batch 8, bf16: 16-17 % eager on one H100 (docs/measured.md)"

LOOK = "the cell's JSON and logs are in {where}"


def _info(id: str, title: str, detail: str, **data: object) -> CheckResult:
    return CheckResult(id=id, title=title, status=CheckStatus.INFO, detail=detail, data=data)


def _label(result: CellResult) -> str:
    return f"{result.cell.strategy} at batch {result.cell.batch_size}"


def judge_cell(result: CellResult, compiled: bool, where: Path, step: str = "cell") -> CheckResult:
    """One short cell: it ran, and its throughput and MFU are possible figures. The plan puts
    each strategy where the planner runs it, so a skipped cell is a fault of the plan."""
    cell = result.cell
    mode = "compiled" if compiled else "eager"
    id_ = f"{step}.{cell.strategy}.{mode}"
    title = f"{cell.strategy} {mode} ({cell.world_size} x {cell.device})"
    if step != "cell":
        title = f"{step}: {title}"
    if result.status is Status.SKIPPED:
        why = result.error.reason if result.error else "skipped"
        return failed(
            id_,
            title,
            f"the planner skipped it: {why}",
            "the workload level planned a cell that cannot run: please report it",
        )
    if result.status is not Status.OK:
        why = result.error.reason if result.error else str(result.status)
        return failed(id_, title, f"{result.status}: {why}", LOOK.format(where=where))
    throughput = result.throughput
    if throughput is None:
        return warned(id_, title, "it ran but measured no throughput", LOOK.format(where=where))
    rate = f"{throughput.samples_per_s:.3g} samples/s"
    mfu = result.compute.mfu if result.compute else None
    if cell.device != "cuda":
        return passed(id_, title, f"{rate}; MFU: no CPU peak to judge against", mfu=mfu)
    if mfu is None:
        why = (result.unavailable or {}).get("mfu", "no peak FLOP/s known for this GPU")
        return passed(id_, title, f"{rate}; MFU not judged: {why}")
    text = f"{rate}, MFU {mfu:.0%}"
    if mfu > MFU_CEILING:
        return failed(
            id_,
            title,
            f"{text}: above {MFU_CEILING:.0%}, no dense training step reaches it",
            "the FLOP count or the GPU's peak is wrong: please report it with the cell's JSON",
            mfu=mfu,
        )
    if cell.strategy != "ddp":
        # the reference is DDP's: a tensor-parallel split of 768-wide matmuls or a
        # pipeline's bubble lowers MFU for reasons of its own
        return passed(id_, title, f"{text} (the floor is judged on ddp only)", mfu=mfu)
    if mfu < MFU_FLOOR:
        return warned(
            id_,
            title,
            f"{text}: below {MFU_FLOOR:.0%} ({MFU_SOURCE})",
            "check clocks and throttling (nvidia-smi -q -d PERFORMANCE) and that no other "
            "process shares the GPU",
            mfu=mfu,
        )
    return passed(id_, title, text, mfu=mfu)


def judge_unplaced(unplaced: Mapping[str, str]) -> list[CheckResult]:
    """A strategy the node should hold that no world size up to the node's runs."""
    return [
        failed(
            f"cell.{strategy.replace(' ', '.')}",
            strategy,
            f"no world size on this node runs it: {why}",
            "the planner refuses every shape of it here: please report it",
        )
        for strategy, why in unplaced.items()
    ]


def judge_compile(eager: Sequence[CellResult], compiled: Sequence[CellResult]) -> CheckResult:
    """Compiled against eager, strategy by strategy: reported, not judged (seconds-long cells
    on a node being proven say nothing reliable about compile's gain)."""
    rates = {
        r.cell.strategy: r.throughput.samples_per_s
        for r in eager
        if r.status is Status.OK and r.throughput
    }
    parts = []
    for result in compiled:
        base = rates.get(result.cell.strategy)
        if result.status is Status.OK and result.throughput and base:
            parts.append(f"{result.cell.strategy} {result.throughput.samples_per_s / base:.2f}x")
    if not parts:
        return skipped("compile.ratio", "compiled / eager", "no strategy ran both ways")
    return _info("compile.ratio", "compiled / eager", "throughput " + ", ".join(parts))


def judge_max_batch(results: Sequence[MaxBatchResult], skipped_why: str | None) -> CheckResult:
    title = "max-batch search"
    if skipped_why is not None:
        return skipped("max_batch", title, skipped_why)
    if not results:
        return failed("max_batch", title, "the search left no result", "see the sweep's log")
    bad = [r for r in results if r.status != "ok"]
    if bad:
        return failed(
            "max_batch", title, f"{bad[0].label}: {bad[0].reason}", "see max_batch/ in the folder"
        )
    one = results[0]
    probes = len(one.probes)
    if one.limit_reached:
        answer = f"fits up to the limit tried, {one.limit} ({probes} probes)"
    else:
        answer = f"largest batch {one.max_batch} ({probes} probes)"
    return passed("max_batch", title, answer, max_batch=one.max_batch)


def judge_oom(
    result: CellResult | None, skipped_why: str | None, recovered: bool | None
) -> CheckResult:
    """The cell that cannot fit must end `oom`, with the rank and the exception, and the
    cells after it must still run (`recovered`: None when none ran after it)."""
    title = "deliberate out-of-memory"
    if skipped_why is not None:
        return skipped("oom", title, skipped_why)
    if result is None:
        return failed("oom", title, "the cell left no result", "see oom/ in the folder")
    if result.status is not Status.OOM:
        why = result.error.reason if result.error else "it ran"
        return failed(
            "oom",
            title,
            f"a batch that cannot fit ended {result.status}: {why}",
            "the out-of-memory classification missed it: please report it with oom/",
        )
    rank = result.error.root_cause_rank if result.error else None
    where = f"on rank {rank}" if rank is not None else "with no rank named"
    if recovered is False:
        return failed(
            "oom",
            title,
            f"classified out of memory {where}, but the next cells failed",
            "memory was not released after the failure: see the next cells' errors",
        )
    after = "; the cells after it ran" if recovered else ""
    return passed("oom", title, f"classified out of memory {where}{after}")


def judge_profile(tool: str, profiled: ProfiledCell) -> CheckResult:
    """A profile must leave an analysis with every rank's steps, its compute and, with several
    ranks, matched collectives; on GPUs, kernels."""
    id_, title = f"profile.{tool}", f"profile ({tool})"
    if profiled.result.status is not Status.OK:
        why = profiled.result.error.reason if profiled.result.error else str(profiled.result.status)
        return failed(
            id_,
            title,
            f"the profiled run {profiled.result.status}: {why}",
            f"see {profiled.directory}",
        )
    analysis = profiled.analysis
    if analysis is None:
        return failed(
            id_,
            title,
            f"no analysis: {profiled.analysis_error}",
            f"the traces are in {profiled.directory}",
        )
    world = profiled.result.cell.world_size
    problems = []
    if analysis.ranks_analysed < world:
        problems.append(f"{analysis.ranks_analysed} of {world} ranks analysed")
    if not any(r.steps for r in analysis.ranks):
        problems.append("no complete step in the traces")
    if not any(r.compute_us for r in analysis.ranks):
        problems.append("no compute in the traces")
    if profiled.result.cell.device == "cuda" and not analysis.top_kernels:
        problems.append("the profiler produced no GPU kernels")
    if world > 1 and analysis.matched_collectives == 0:
        problems.append("no collective matched across ranks")
    if problems:
        return failed(id_, title, "; ".join(problems), f"the traces are in {profiled.directory}")
    step = f"step {analysis.cycle_us / 1000:.3g} ms" if analysis.cycle_us else "no step time"
    collectives = f", {analysis.matched_collectives} collectives matched" if world > 1 else ""
    diagnosis = "" if analysis.diagnosis is not None else "; no diagnosis"
    detail = f"{analysis.ranks_analysed} ranks, {step}{collectives}{diagnosis}"
    if analysis.diagnosis is None:
        why = analysis.unavailable.get("diagnosis", "")
        return warned(id_, title, detail, why or "the traces gave no step model")
    return passed(id_, title, detail)


def judge_nsys_absent(why: str) -> CheckResult:
    return skipped("profile.nsys", "profile (nsys)", why)


def judge_comm(results: Sequence[CommResult], skipped_why: str | None) -> CheckResult:
    from torchscale.orchestration.comm.from_config import comm_failed

    title = "collective sweep"
    if skipped_why is not None:
        return skipped("comm", title, skipped_why)
    if not results:
        return failed("comm", title, "the sweep left no result", "see comm/ in the folder")
    bad = [r for r in results if comm_failed(r)]
    if bad:
        rows = [row for row in bad[0].rows if row.status == "failed"]
        why = f"{len(rows)} row(s) failed" if rows else f"the sweep ended {bad[0].status}"
        if not rows and bad[0].status == "ok":
            why = f"the bandwidth gate {bad[0].gate}"
        if (bad[0].wrong_total or 0) > 0:
            why = f"{bad[0].wrong_total} wrong element(s)"
        return failed("comm", title, why, "see comm/ in the folder")
    one = results[0]
    ops = sorted({row.op for row in one.rows})
    best = max((row.busbw_gbps or 0.0 for row in one.rows), default=0.0)
    return passed(
        "comm",
        title,
        f"{', '.join(ops)}: {len(one.rows)} sizes checked, busbw up to "
        f"{best:.3g} GB/s ({one.backend})",
    )


def judge_telemetry(results: Sequence[CellResult]) -> CheckResult:
    """On GPUs every measured cell carries NVML power and SM clock, and says when it was
    throttled; on CPU the process figures are all there is (psutil)."""
    title = "telemetry"
    measured = [r for r in results if r.status is Status.OK]
    if not measured:
        return skipped("telemetry", title, "no cell was measured")
    missing = [r for r in measured if r.telemetry is None]
    if missing:
        why = (missing[0].unavailable or {}).get("telemetry", "no telemetry block")
        return warned(
            "telemetry",
            title,
            f"{_label(missing[0])}: {why}",
            "see docs/telemetry.md, 'When a figure is missing'",
        )
    if measured[0].cell.device != "cuda":
        return _info("telemetry", title, "CPU: process CPU and memory sampled (no NVML)")
    blind = [r for r in measured if r.telemetry and r.telemetry.power_w_mean is None]
    if blind:
        ranks = blind[0].telemetry.ranks if blind[0].telemetry else []
        why = next((v for rank in ranks for k, v in rank.unavailable.items() if "power" in k), "")
        return warned(
            "telemetry",
            title,
            f"{_label(blind[0])}: no NVML power ({why})",
            "check that pynvml (nvidia-ml-py) is installed and sees the GPUs",
        )
    throttled = [r for r in measured if r.telemetry and r.telemetry.throttled]
    if throttled:
        reasons = (
            ", ".join(throttled[0].telemetry.throttle_reasons) if throttled[0].telemetry else ""
        )
        return warned(
            "telemetry",
            title,
            f"{_label(throttled[0])} throttled: {reasons}",
            "nvidia-smi -q -d PERFORMANCE shows why; cooling or a power cap",
        )
    power = max(r.telemetry.power_w_mean or 0.0 for r in measured if r.telemetry)
    return passed("telemetry", title, f"NVML sampled every cell; up to {power:.0f} W")


def judge_report(written: Sequence[Path]) -> CheckResult:
    missing = [p.name for p in written if not p.is_file()]
    if not written or missing:
        return failed(
            "report",
            "report",
            f"not written: {', '.join(missing) or 'any format'}",
            "run `torchscale report -s FOLDER/runs` to see why",
        )
    return passed("report", "report", f"written: {', '.join(p.name for p in written)}")
