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
from typing import TYPE_CHECKING, Any

from torchscale.contracts import wording
from torchscale.contracts.cell import Status
from torchscale.contracts.wording import validate as shown
from torchscale.contracts.wording.max_batch import reason_words
from torchscale.contracts.wording.unavailable import why
from torchscale.contracts.wording.validate import percent, three, watts
from torchscale.offline.analysis import compile_gain as gains
from torchscale.offline.analysis.ranking import fsdp_on_one, shards_nothing
from torchscale.offline.results import profile_figures
from torchscale.offline.results.frame import cell_row
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    check,
    failed,
    passed,
    skipped,
    warned,
)

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.comm_result import CommResult
    from torchscale.contracts.schema.max_batch import MaxBatchResult
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.orchestration.profiling.session import ProfiledCell

# against MFU_SOURCE (this level's own cells, torch 2.11): a short cell below MFU_FLOOR is a GPU
# far from its clocks (throttled, shared, a wrong peak); above MFU_CEILING no dense training
# step goes, so the FLOP count or the peak is wrong
MFU_FLOOR = 0.04
MFU_CEILING = 0.75
MFU_SOURCE = "GPT-2 124M, batch 8, bf16 on one H100: 24 % eager, 35 % compiled (docs/measured.md)"

NO_WRAPPER = "no wrapper at world 1: DDP needs a peer"

LOOK = "the cell's JSON and logs are in {where}"


def _info(id: str, title: str, detail: str, **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.INFO, detail, **data)


def _label(result: CellResult) -> str:
    return f"{result.cell.strategy} at batch {result.cell.batch_size}"


def machinery_only(result: CellResult) -> bool:
    """FSDP at world 1: FSDP2's hooks and DTensors with nothing to shard, proven not judged."""
    return shards_nothing(result.cell.strategy, result.cell.world_size)


def judge_cell(result: CellResult, compiled: bool, where: Path, step: str = "cell") -> CheckResult:
    """One short cell: it ran, and its throughput and MFU are possible figures. The plan puts
    each strategy where the planner runs it, so a skipped cell is a fault of the plan."""
    cell = result.cell
    mode = "compiled" if compiled else "eager"
    id_ = f"{step}.{cell.strategy}.{mode}"
    title = f"{cell.strategy} {mode} (" + str(cell.world_size) + f" x {cell.device})"
    if step != "cell":
        title = f"{step}: {title}"
    if result.status is Status.SKIPPED:
        why = result.error.reason if result.error else "skipped"
        hint = "the workload level planned a cell that cannot run: please report it"
        return failed(id_, title, f"the planner skipped it: {why}", hint)
    if result.status is not Status.OK:
        why = result.error.reason if result.error else str(result.status)
        return failed(id_, title, f"{result.status}: {why}", LOOK.format(where=where))
    throughput = result.throughput
    if throughput is None:
        return warned(id_, title, "it ran but measured no throughput", LOOK.format(where=where))
    rate = three(throughput.samples_per_s, "samples/s")
    mfu = result.compute.mfu if result.compute else None
    if machinery_only(result):
        unranked = fsdp_on_one()
        detail = f"{rate}; {wording.say(unranked)}; MFU not judged"
        return passed(id_, title, detail, mfu=mfu, finding=unranked.model_dump())
    verdict = _judge_figures(result, id_, title, rate, mfu)
    if cell.strategy == "ddp" and cell.world_size == 1:  # no wrapper: no peer to average with
        return verdict.model_copy(update={"said": f"{shown.detail(verdict)} ({NO_WRAPPER})"})
    return verdict


def _judge_figures(
    result: CellResult, id_: str, title: str, rate: str, mfu: float | None
) -> CheckResult:
    """A cell that ran: its MFU against what the path can give."""
    cell = result.cell
    if cell.device != "cuda":
        return passed(id_, title, f"{rate}; MFU: no CPU peak to judge against", mfu=mfu)
    if mfu is None:
        why = (result.unavailable or {}).get("mfu", "no peak FLOP/s known for this GPU")
        return passed(id_, title, f"{rate}; MFU not judged: {why}")
    text = f"{rate}, MFU {percent(mfu)}"
    if mfu > MFU_CEILING:
        detail = f"{text}: above {percent(MFU_CEILING)}, no dense training step reaches it"
        hint = "the FLOP count or the GPU's peak is wrong: please report it with the cell's JSON"
        return failed(id_, title, detail, hint, mfu=mfu)
    if cell.strategy != "ddp":
        # the reference is DDP's: a tensor-parallel split of 768-wide matmuls or a
        # pipeline's bubble lowers MFU for reasons of its own
        return passed(id_, title, f"{text} (the floor is judged on ddp only)", mfu=mfu)
    if mfu < MFU_FLOOR:
        hint = (
            "check clocks and throttling (nvidia-smi -q -d PERFORMANCE) and that no other "
            "process shares the GPU"
        )
        why = f"{text}: below {percent(MFU_FLOOR)} ({MFU_SOURCE})"
        return warned(id_, title, why, hint, mfu=mfu)
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
    """Compiled against eager, strategy by strategy, by the report's own estimator
    (`analysis.compile_gain`, the same figure the report prints): INFO when compile is faster
    or the interval holds 1, WARN when compiled is slower beyond it, sized or not (a regression
    worth a look).
    FSDP at world 1 is not compared: nothing is sharded, so its step is FSDP2's host work."""
    base = {r.cell.strategy: r for r in eager if r.status is Status.OK and r.throughput}
    parts: list[str] = []
    slower: list[str] = []
    data: dict[str, object] = {"method": gains.METHOD}
    for result in compiled:
        before = base.get(result.cell.strategy)
        if result.status is not Status.OK or not result.throughput or before is None:
            continue
        strategy = result.cell.strategy
        gain = gains.compile_gain(cell_row(result), cell_row(before))
        if gain is None:
            parts.append(f"{strategy}: not judged (no throughput figure)")
            continue
        parts.append(f"{strategy}: {wording.say(gain)}")
        data[strategy] = gain.model_dump()
        if gains.slower(gain):
            slower.append(strategy)
    if not parts:
        return skipped("compile.ratio", "compiled / eager", "no strategy ran both ways")
    detail = "; ".join(parts)
    if slower:
        hint = (
            f"compiled {', '.join(slower)} is slower than eager beyond the repeats' spread: the "
            "cells' rank logs show graph breaks and recompiles"
        )
        return warned("compile.ratio", "compiled / eager", detail, hint, **data)
    return _info("compile.ratio", "compiled / eager", detail, **data)


def judge_max_batch(results: Sequence[MaxBatchResult], skipped_why: str | None) -> CheckResult:
    title = "max-batch search"
    if skipped_why is not None:
        return skipped("max_batch", title, skipped_why)
    if not results:
        return failed("max_batch", title, "the search left no result", "see the sweep's log")
    bad = [r for r in results if r.status != "ok"]
    if bad:
        detail = f"{bad[0].label}: {reason_words(bad[0])}"
        return failed("max_batch", title, detail, "see max_batch/ in the folder")
    one = results[0]
    probes = len(one.probes)
    used = one.memory_utilisation
    share = f" at {percent(used)} of memory" if used is not None else ""
    if one.limit_reached:
        answer = f"fits {one.limit} (the limit tried: 4 x the cells' batch){share}, {probes} probes"
        estimate = max_batch_estimate(one)
        if estimate is not None:
            answer += f"; estimate ~{estimate} from the probes' peaks (linear, not probed)"
    else:
        answer = f"largest batch {one.max_batch}{share}, {probes} probes"
    return passed("max_batch", title, answer, max_batch=one.max_batch, limit=one.limit)


def max_batch_estimate(result: MaxBatchResult) -> int | None:
    """The batch at which the two largest fitting probes' reserved peaks, extended in a line,
    reach the device's memory (2 significant figures); None without two CUDA peaks. A line
    ignores fragmentation near the top, so it is an estimate, said as one."""
    fits = sorted(
        {
            p.batch: p.peak_reserved_bytes
            for p in result.probes
            if p.outcome == "fits" and p.peak_reserved_bytes
        }.items()
    )
    total = result.device_total_bytes
    if len(fits) < 2 or not total:
        return None
    (b1, m1), (b2, m2) = fits[-2], fits[-1]
    if b2 <= b1 or m2 <= m1 or m2 >= total:
        return None
    batch = b2 + (total - m2) * (b2 - b1) / (m2 - m1)
    digits = max(0, len(str(int(batch))) - 2)
    return int(batch // 10**digits * 10**digits)


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
        hint = "the out-of-memory classification missed it: please report it with oom/"
        return failed("oom", title, f"a batch that cannot fit ended {result.status}: {why}", hint)
    rank = result.error.root_cause_rank if result.error else None
    where = f"on rank {rank}" if rank is not None else "with no rank named"
    if recovered is False:
        hint = "memory was not released after the failure: see the next cells' errors"
        detail = f"classified out of memory {where}, but the next cells failed"
        return failed("oom", title, detail, hint)
    after = "; the cells after it ran" if recovered else ""
    return passed("oom", title, f"classified out of memory {where}{after}")


def judge_profile(tool: str, profiled: ProfiledCell) -> CheckResult:
    """A profile must leave an analysis with every rank's steps, its compute and, with several
    ranks, matched collectives; on GPUs, kernels."""
    id_, title = f"profile.{tool}", f"profile ({tool})"
    if profiled.result.status is not Status.OK:
        why = profiled.result.error.reason if profiled.result.error else str(profiled.result.status)
        hint = f"see {profiled.directory}"
        return failed(id_, title, f"the profiled run {profiled.result.status}: {why}", hint)
    analysis = profiled.analysis
    if analysis is None:
        hint = f"the traces are in {profiled.directory}"
        return failed(id_, title, f"no analysis: {profiled.analysis_error}", hint)
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
    from torchscale.offline.results.profile_versions import compile_mode

    step = profile_step(analysis)
    collectives = f", {analysis.matched_collectives} collectives matched" if world > 1 else ""
    diagnosis = "" if analysis.diagnosis is not None else "; no diagnosis"
    ranks = f"{analysis.ranks_analysed} rank{'s' if analysis.ranks_analysed != 1 else ''}"
    detail = f"{ranks}, {compile_mode(profiled.result)}, {step}{collectives}{diagnosis}"
    if analysis.diagnosis is None:
        why = analysis.unavailable.get("diagnosis", "")
        return warned(id_, title, detail, why or "the traces gave no step model")
    return passed(id_, title, detail)


def profile_step(analysis: ProfileAnalysis) -> str:
    """The profile's step as its diagnosis heads it: 'step 19.7 ms untraced (traced 34.8 ms,
    +76 % under the profiler)' where the profiler slowed the traced steps beyond the noise,
    'step 34.8 ms traced, +76 % over the untraced' where only the traces have a split, else
    the traced step."""
    from torchscale.offline.analysis.diagnosis.inflation import inflation_of, uncleared_inflation

    diagnosis = analysis.diagnosis
    step_s = diagnosis.step_s.value if diagnosis is not None else None
    inflation = inflation_of(diagnosis) if diagnosis is not None else None
    if diagnosis is not None and step_s is not None and inflation is None:
        unclear = uncleared_inflation(diagnosis)
        step = three(step_s * 1e3, "ms")
        if unclear is not None and unclear.value is not None:  # the same caveat as its split
            return (
                f"step {step} traced ({percent(unclear.value, True)} over "
                "the untraced step, within the noise of its few traced steps)"
            )
        return f"step {step}"
    if diagnosis is None or step_s is None or inflation is None or inflation.value is None:
        cycle = profile_figures.cycle_us(analysis)
        return f"step {three(cycle / 1000, 'ms')}" if cycle else "no step time"
    added = percent(inflation.value, True)
    step = three(step_s * 1e3, "ms")
    if diagnosis.source == "traces":
        return f"step {step} traced, {added} over the untraced"
    traced = three(step_s * (1 + inflation.value) * 1e3, "ms")
    return f"step {step} untraced (traced {traced}, {added} under the profiler)"


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
    sizes = f"{len(one.rows)} sizes checked, busbw up to {three(best, 'GB/s')} ({one.backend})"
    return passed("comm", title, f"{', '.join(ops)}: {sizes}")


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
        hint = "see docs/telemetry.md, 'When a figure is missing'"
        return warned("telemetry", title, f"{_label(missing[0])}: {why}", hint)
    if measured[0].cell.device != "cuda":
        return _info("telemetry", title, "CPU: process CPU and memory sampled (no NVML)")
    blind = {
        _label(r): _power_gap(r)
        for r in measured
        if r.telemetry and r.telemetry.power_w_mean is None
    }
    unread = {label: why for label, why in blind.items() if not why.startswith(NOT_MEASURABLE)}
    if unread:
        label, why = next(iter(unread.items()))
        hint = "check that pynvml (nvidia-ml-py) is installed and sees the GPUs"
        return warned("telemetry", title, f"{label}: no NVML power ({why})", hint)
    throttled = [r for r in measured if r.telemetry and r.telemetry.throttled]
    if throttled:
        reasons = (
            ", ".join(throttled[0].telemetry.throttle_reasons) if throttled[0].telemetry else ""
        )
        hint = "nvidia-smi -q -d PERFORMANCE shows why; cooling or a power cap"
        return warned("telemetry", title, f"{_label(throttled[0])} throttled: {reasons}", hint)
    powers = [r.telemetry.power_w_mean for r in measured if r.telemetry]
    power = max((p for p in powers if p is not None), default=None)
    said = f"up to {watts(power)}" if power is not None else "no power figure"
    if blind:  # windows too short for the power figures: the level's cells are seconds long
        label, why = next(iter(blind.items()))
        said += f"; {len(blind)} cell(s) without one, as their windows are short ({label}: {why})"
    return passed("telemetry", title, f"NVML sampled every cell; {said}")


NOT_MEASURABLE = "not measurable"


def _power_gap(result: CellResult) -> str:
    """Why a GPU cell has no power figure: its ranks' reason ('not measurable: ...' where the
    windows were too short to judge, anything else where NVML did not answer)."""
    ranks = result.telemetry.ranks if result.telemetry else []
    stored = (result.unavailable or {}).get("telemetry.power_w_mean")
    return next(
        (v for rank in ranks for k, v in rank.unavailable.items() if "power" in k),
        (why(stored) if stored is not None else None) or "no reason recorded",
    )


def judge_report(written: Sequence[Path]) -> CheckResult:
    missing = [p.name for p in written if not p.is_file()]
    if not written or missing:
        hint = "run `torchscale report -s FOLDER/runs` to see why"
        detail = f"not written: {', '.join(missing) or 'any format'}"
        return failed("report", "report", detail, hint)
    return passed("report", "report", f"written: {', '.join(p.name for p in written)}")


ONE_GPU_UNPROVEN = (
    "not exercised on one GPU: the DDP wrapper, sharding, and any collective between devices "
    "(NCCL moved nothing)"
)


def workload_verdict(device: str, world: int, checks: Sequence[CheckResult]) -> str:
    """The level's one-line answer: what was proven on this node, and on one GPU what was
    not (a DDP wrapper, sharding and NCCL need a second device)."""
    bad = [c.title for c in checks if c.status is CheckStatus.FAIL]
    path = "GPU (NCCL)" if device == "cuda" else "CPU (gloo)"
    if bad:
        return f"The {path} training stack is NOT proven on this node: {', '.join(bad)} failed."
    if device == "cuda" and world < 2:
        verdict = f"The training stack works end to end on one GPU; {ONE_GPU_UNPROVEN}."
    else:
        ranks = f"{world} rank{'s' if world != 1 else ''}"
        verdict = f"The {path} training stack works end to end on this node ({ranks})."
    warns = [c.title for c in checks if c.status is CheckStatus.WARN]
    if warns:
        verdict += " Worth a look: " + ", ".join(warns) + "."
    return verdict
