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

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
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


def said(code: str, **figures: Any) -> Finding:
    """A step's finding or fix (contracts/wording/validate_workload.py words it)."""
    return Finding(code=f"workload.{code}", figures=figures)


def _reason(why: Finding | str | None) -> Any:
    """A reason as a figure: a code's figures, or the words it is given in."""
    return why.model_dump() if isinstance(why, Finding) else why


def _look(where: Path) -> Finding:
    return said("fix_look", where=str(where))


def _info(id: str, title: str, detail: Finding | list[Finding], **data: Any) -> CheckResult:
    return check(id, title, CheckStatus.INFO, detail, **data)


def _label(result: CellResult) -> str:
    return f"{result.cell.strategy} at batch {result.cell.batch_size}"


def machinery_only(result: CellResult) -> bool:
    """FSDP at world 1: FSDP2's hooks and DTensors with nothing to shard, proven not judged."""
    return shards_nothing(result.cell.strategy, result.cell.world_size)


def _ended(result: CellResult) -> dict[str, Any] | None:
    """Its error as a finding among a check's figures (worded by its code), or None."""
    return result.error.finding.model_dump(mode="json") if result.error else None


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
        skip = said("cell_skipped", why=_ended(result))
        return failed(id_, title, skip, said("fix_report_plan"))
    if result.status is not Status.OK:
        ended = said("cell_ended", status=str(result.status), why=_ended(result))
        return failed(id_, title, ended, _look(where))
    throughput = result.throughput
    if throughput is None:
        return warned(id_, title, said("no_throughput"), _look(where))
    rate = throughput.samples_per_s
    mfu = result.compute.mfu if result.compute else None
    if machinery_only(result):
        unranked = fsdp_on_one()
        findings = [said("rate", samples_per_s=rate), unranked, said("mfu_unjudged")]
        return passed(id_, title, findings, mfu=mfu, finding=unranked.model_dump())
    verdict = _judge_figures(result, id_, title, rate, mfu)
    if cell.strategy == "ddp" and cell.world_size == 1:  # no wrapper: no peer to average with
        return verdict.model_copy(update={"findings": [*verdict.findings, said("no_wrapper")]})
    return verdict


def _judge_figures(
    result: CellResult, id_: str, title: str, rate: float, mfu: float | None
) -> CheckResult:
    """A cell that ran: its MFU against what the path can give."""
    cell = result.cell
    if cell.device != "cuda":
        return passed(
            id_, title, [said("rate", samples_per_s=rate), said("mfu_no_cpu_peak")], mfu=mfu
        )
    if mfu is None:
        why = (result.unavailable or {}).get("mfu", "no peak FLOP/s known for this GPU")
        return passed(
            id_, title, [said("rate", samples_per_s=rate), said("mfu_unknown", why=_reason(why))]
        )
    figures = {"samples_per_s": rate, "mfu": mfu}
    if mfu > MFU_CEILING:
        above = said("mfu_above", ceiling=MFU_CEILING, **figures)
        return failed(id_, title, above, said("fix_report_peak"), mfu=mfu)
    if cell.strategy != "ddp":
        # the reference is DDP's: a tensor-parallel split of 768-wide matmuls or a
        # pipeline's bubble lowers MFU for reasons of its own
        return passed(id_, title, said("mfu_ddp_floor", **figures), mfu=mfu)
    if mfu < MFU_FLOOR:
        below = said("mfu_below", floor=MFU_FLOOR, source=MFU_SOURCE, **figures)
        return warned(id_, title, below, said("fix_clocks"), mfu=mfu)
    return passed(id_, title, said("mfu", **figures), mfu=mfu)


def judge_unplaced(unplaced: Mapping[str, str]) -> list[CheckResult]:
    """A strategy the node should hold that no world size up to the node's runs."""
    return [
        failed(
            f"cell.{strategy.replace(' ', '.')}",
            strategy,
            said("unplaced", why=why),
            said("fix_planner_refuses"),
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
    parts: list[Finding] = []
    slower: list[str] = []
    data: dict[str, object] = {"method": gains.METHOD}
    for result in compiled:
        before = base.get(result.cell.strategy)
        if result.status is not Status.OK or not result.throughput or before is None:
            continue
        strategy = result.cell.strategy
        gain = gains.compile_gain(cell_row(result), cell_row(before))
        if gain is None:
            parts.append(said("compile_unjudged", strategy=strategy))
            continue
        parts.append(said("compile_gain", strategy=strategy, gain=gain.model_dump()))
        data[strategy] = gain.model_dump()
        if gains.slower(gain):
            slower.append(strategy)
    if not parts:
        return skipped("compile.ratio", "compiled / eager", said("compile_none"))
    if slower:
        hint = said("fix_compile_slower", strategies=slower)
        return warned("compile.ratio", "compiled / eager", parts, hint, **data)
    return _info("compile.ratio", "compiled / eager", parts, **data)


def judge_max_batch(results: Sequence[MaxBatchResult], skipped_why: Finding | None) -> CheckResult:
    title = "max-batch search"
    if skipped_why is not None:
        return skipped("max_batch", title, skipped_why)
    if not results:
        return failed(
            "max_batch", title, said("no_result", what="the search"), said("fix_sweep_log")
        )
    bad = [r for r in results if r.status != "ok"]
    if bad:
        why = said("max_batch_failed", label=bad[0].label, **_search_failed(bad[0]))
        return failed("max_batch", title, why, said("fix_see_folder", sub="max_batch/"))
    one = results[0]
    answer = said(
        "max_batch",
        limit_reached=one.limit_reached,
        max_batch=one.max_batch,
        limit=one.limit,
        memory_used=one.memory_utilisation,
        probes=len(one.probes),
        estimate=max_batch_estimate(one) if one.limit_reached else None,
    )
    return passed("max_batch", title, answer, max_batch=one.max_batch, limit=one.limit)


def _search_failed(result: MaxBatchResult) -> dict[str, Any]:
    """Why the search has no answer: its finding, and a failed probe's own reason (evidence)."""
    finding = result.finding
    given = None
    if finding is not None and finding.code == "max_batch.probe_failed":
        failed = [
            p
            for p in result.probes
            if p.outcome == "failed" and p.batch == finding.figures["batch"]
        ]
        given = (failed[-1].reason if failed else None) or "no reason"
    return {"why": finding.model_dump() if finding else None, "given": given}


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
    result: CellResult | None, skipped_why: Finding | None, recovered: bool | None
) -> CheckResult:
    """The cell that cannot fit must end `oom`, with the rank and the exception, and the
    cells after it must still run (`recovered`: None when none ran after it)."""
    title = "deliberate out-of-memory"
    if skipped_why is not None:
        return skipped("oom", title, skipped_why)
    if result is None:
        return failed("oom", title, said("no_result", what="the cell"), _in_folder("oom/"))
    if result.status is not Status.OOM:
        missed = said("oom_missed", status=str(result.status), why=_ended(result))
        return failed("oom", title, missed, said("fix_oom_missed"))
    rank = result.error.root_cause_rank if result.error else None
    if recovered is False:
        return failed("oom", title, said("oom_not_released", rank=rank), said("fix_oom_release"))
    return passed("oom", title, said("oom_classified", rank=rank, recovered=bool(recovered)))


def _in_folder(sub: str) -> Finding:
    return said("fix_see_folder", sub=sub)


def judge_profile(tool: str, profiled: ProfiledCell) -> CheckResult:
    """A profile must leave an analysis with every rank's steps, its compute and, with several
    ranks, matched collectives; on GPUs, kernels."""
    id_, title = f"profile.{tool}", f"profile ({tool})"
    traces = said("fix_traces", where=str(profiled.directory))
    if profiled.result.status is not Status.OK:
        ran = said(
            "profile_run_failed", status=str(profiled.result.status), why=_ended(profiled.result)
        )
        return failed(id_, title, ran, said("fix_see", where=str(profiled.directory)))
    analysis = profiled.analysis
    if analysis is None:
        return failed(id_, title, said("profile_no_analysis", why=profiled.analysis_error), traces)
    world = profiled.result.cell.world_size
    problems = []
    if analysis.ranks_analysed < world:
        problems.append(said("ranks_unanalysed", analysed=analysis.ranks_analysed, world=world))
    if not any(r.steps for r in analysis.ranks):
        problems.append(said("no_step"))
    if not any(r.compute_us for r in analysis.ranks):
        problems.append(said("no_compute"))
    if profiled.result.cell.device == "cuda" and not analysis.top_kernels:
        problems.append(said("no_kernels"))
    if world > 1 and analysis.matched_collectives == 0:
        problems.append(said("no_matched"))
    if problems:
        return failed(id_, title, problems, traces)
    from torchscale.offline.results.profile_figures import compile_mode

    detail = said(
        "profiled",
        ranks=analysis.ranks_analysed,
        mode=compile_mode(profiled.result),
        step=profile_step(analysis),
        world=world,
        collectives=analysis.matched_collectives,
        diagnosed=analysis.diagnosis is not None,
    )
    if analysis.diagnosis is None:
        why = analysis.unavailable.get("diagnosis")
        return warned(id_, title, detail, said("fix_no_step_model", why=_reason(why)))
    return passed(id_, title, detail)


def profile_step(analysis: ProfileAnalysis) -> dict[str, Any]:
    """The figures of the profile's step as its diagnosis heads it (worded by
    wording/workload_checks.step_words): 'step 19.7 ms untraced (traced 34.8 ms, +76 % under
    the profiler)' where the profiler slowed the traced steps beyond the noise, 'step 34.8 ms
    traced, +76 % over the untraced' where only the traces have a split, else the traced step."""
    from torchscale.offline.analysis.diagnosis.inflation import inflation_of, uncleared_inflation

    diagnosis = analysis.diagnosis
    step_s = diagnosis.step_s.value if diagnosis is not None else None
    inflation = inflation_of(diagnosis) if diagnosis is not None else None
    if diagnosis is not None and step_s is not None and inflation is None:
        unclear = uncleared_inflation(diagnosis)
        if unclear is not None and unclear.value is not None:  # the same caveat as its split
            return {"kind": "unclear", "step_ms": step_s * 1e3, "added": unclear.value}
        return {"kind": "plain", "step_ms": step_s * 1e3}
    if diagnosis is None or step_s is None or inflation is None or inflation.value is None:
        cycle = profile_figures.cycle_us(analysis)
        return {"kind": "plain", "step_ms": cycle / 1000} if cycle else {"kind": "none"}
    figures = {"step_ms": step_s * 1e3, "added": inflation.value}
    if diagnosis.source == "traces":
        return {"kind": "traced", **figures}
    return {"kind": "untraced", "traced_ms": step_s * (1 + inflation.value) * 1e3, **figures}


def judge_nsys_absent(why: Finding) -> CheckResult:
    return skipped("profile.nsys", "profile (nsys)", why)


def judge_comm(results: Sequence[CommResult], skipped_why: Finding | None) -> CheckResult:
    from torchscale.orchestration.comm.from_config import comm_failed

    title = "collective sweep"
    if skipped_why is not None:
        return skipped("comm", title, skipped_why)
    if not results:
        return failed("comm", title, said("no_result", what="the sweep"), _in_folder("comm/"))
    bad = [r for r in results if comm_failed(r)]
    if bad:
        rows = [row for row in bad[0].rows if row.status == "failed"]
        why = said(
            "comm_failed",
            wrong=bad[0].wrong_total or 0,
            rows=len(rows),
            status=bad[0].status,
            gate=bad[0].gate,
        )
        return failed("comm", title, why, _in_folder("comm/"))
    one = results[0]
    best = max((row.busbw_gbps or 0.0 for row in one.rows), default=0.0)
    ops = sorted({row.op for row in one.rows})
    return passed(
        "comm",
        title,
        said("comm_passed", ops=ops, sizes=len(one.rows), busbw_gbps=best, backend=one.backend),
    )


def judge_telemetry(results: Sequence[CellResult]) -> CheckResult:
    """On GPUs every measured cell carries NVML power and SM clock, and says when it was
    throttled; on CPU the process figures are all there is (psutil)."""
    title = "telemetry"
    measured = [r for r in results if r.status is Status.OK]
    if not measured:
        return skipped("telemetry", title, said("no_measured_cell"))
    missing = [r for r in measured if r.telemetry is None]
    if missing:
        why = (missing[0].unavailable or {}).get("telemetry", "no telemetry block")
        none = said("no_telemetry", label=_label(missing[0]), why=_reason(why))
        return warned("telemetry", title, none, said("fix_telemetry_docs"))
    if measured[0].cell.device != "cuda":
        return _info("telemetry", title, said("cpu_telemetry"))
    blind: dict[str, Any] = {
        _label(r): _power_gap(r)
        for r in measured
        if r.telemetry and r.telemetry.power_w_mean is None
    }
    unread = {label: why for label, why in blind.items() if not _not_measurable(why)}
    if unread:
        label, why = next(iter(unread.items()))
        return warned("telemetry", title, said("no_power", label=label, why=why), said("fix_nvml"))
    throttled = [r for r in measured if r.telemetry and r.telemetry.throttled]
    if throttled:
        telemetry = throttled[0].telemetry
        reasons = list(telemetry.throttle_reasons) if telemetry else []
        hot = said("throttled", label=_label(throttled[0]), reasons=reasons)
        return warned("telemetry", title, hot, said("fix_throttled"))
    powers = [r.telemetry.power_w_mean for r in measured if r.telemetry]
    power = max((p for p in powers if p is not None), default=None)
    first, gap = next(iter(blind.items()), (None, None))
    # windows too short for the power figures: the level's cells are seconds long
    return passed(
        "telemetry", title, said("power", watts=power, blind=len(blind), label=first, why=gap)
    )


# windows too short for NVML's averages or its energy counter (contracts/gpu_clocks.py)
NOT_MEASURABLE = ("unavailable.nvml_longest_window", "unavailable.nvml_windows")


def _not_measurable(why: Any) -> bool:
    return isinstance(why, dict) and why.get("code") in NOT_MEASURABLE


def _power_gap(result: CellResult) -> Any:
    """Why a GPU cell has no power figure, as a figure: its ranks' reason ('not measurable:
    ...' where the windows were too short to judge, anything else where NVML did not answer)."""
    ranks = result.telemetry.ranks if result.telemetry else []
    stored = (result.unavailable or {}).get("telemetry.power_w_mean")
    return next(
        (_reason(v) for rank in ranks for k, v in rank.unavailable.items() if "power" in k),
        _reason(stored) if stored is not None else "no reason recorded",
    )


def judge_report(written: Sequence[Path]) -> CheckResult:
    missing = [p.name for p in written if not p.is_file()]
    if not written or missing:
        return failed(
            "report", "report", said("report_missing", missing=missing), said("fix_report_cmd")
        )
    return passed("report", "report", said("report_written", written=[p.name for p in written]))


def workload_verdict(device: str, world: int, checks: Sequence[CheckResult]) -> Finding:
    """The level's one-line answer: what was proven on this node, and on one GPU what was
    not (a DDP wrapper, sharding and NCCL need a second device)."""
    bad = [c.title for c in checks if c.status is CheckStatus.FAIL]
    path = "GPU (NCCL)" if device == "cuda" else "CPU (gloo)"
    if bad:
        return said("not_proven", path=path, failed=bad)
    warns = [c.title for c in checks if c.status is CheckStatus.WARN]
    return said("works", path=path, world=world, warns=warns)
