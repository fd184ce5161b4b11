"""`validate --level perf`: what this node can really do, beside what its SKU should do.

One torchrun of the `perf` rank program (rank/programs/perf.py) measures matmul, memory, host
links (validate/host_links.py) and GPU-to-GPU copies; then `comm`'s own sweep (comm/planning.py)
measures bus bandwidth, stored in the experiment's comm/. What each figure is, and the phases a
stopped run keeps (`finished_phases`, `merge_phases`): docs/validate.md ('What `perf`
measures', 'Progress and what a stopped run keeps'). `judge_perf` judges each figure against
the detected SKU (validate/reference.py); `perf_checks` sums them up per check for the table.
Planning and judging are pure; `run_perf` runs the two launches.
"""

from __future__ import annotations

import socket
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from torchscale.contracts import host
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.schema.perf import P2PMatrix, PeakResult, PerfRun, PerfSpec, RankPerf
from torchscale.contracts.versioned import read_model
from torchscale.contracts.wording.validate_measured import all_of, phase_words
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.torchrun import spec_launch
from torchscale.orchestration.validate.check_context import Device
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    Measurement,
    not_measured,
    worst,
    wrote_nothing,
)
from torchscale.orchestration.validate.host_links import (
    ALL_AT_ONCE_CHECKS,
    ALONE_CHECKS,
    all_at_once_row,
    annotate_alone,
)
from torchscale.orchestration.validate.host_links import TITLES as HOST_TITLES
from torchscale.orchestration.validate.node_peers import judge_with_peers
from torchscale.orchestration.validate.reference import expected_for, judge, sku_for

RESULT_FILE = "perf.json"
PERF_DIR = "perf"  # in the experiment: one folder per run, <host>-<time>
PHASES_DIR = "phases"  # in a run's folder: NN-<phase>.json, each a PerfRun of that phase alone
GPU_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
CPU_DTYPES = ("fp32", "bf16", "fp16")  # tf32 and fp8 are GPU formats: not measured on CPU
# the most a dtype's search may take (it stops sooner once it has converged: matmul_peak.py)
GPU_MATMUL_BUDGET_S = 20.0
CPU_MATMUL_BUDGET_S = 3.0
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
# a few sizes, the largest in the bandwidth regime: 1 MiB, 16 MiB, 256 MiB on GPUs; gloo on a
# 2-core CPU saturates far below that, and bigger sizes only cost time
GPU_BUSBW_BYTES = (1 << 20, 1 << 28, 16)
CPU_BUSBW_BYTES = (1 << 16, 1 << 22, 8)


@dataclass(frozen=True)
class PerfPlan:
    """The perf launch as data: what `--dry-run` would show."""

    spec: PerfSpec
    nproc: int
    omp_num_threads: int
    timeout_s: float


@dataclass
class PerfOutcome:
    """What `--level perf` adds to the report."""

    measurements: list[Measurement] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    measured_peaks: dict[str, float] = field(default_factory=dict)
    sku: str | None = None


def plan_perf(
    device: Device,
    gpu_count: int,
    cpu_cores: int,
    workdir: Path,
    matmul_budget_s: float | None = None,
) -> PerfPlan:
    """One rank per GPU; one rank using every core on a CPU node (the CPU is one device)."""
    gpu = device == "cuda"
    dtypes = GPU_DTYPES if gpu else CPU_DTYPES
    budget = matmul_budget_s or (GPU_MATMUL_BUDGET_S if gpu else CPU_MATMUL_BUDGET_S)
    spec = PerfSpec(
        device=device,
        dtypes=list(dtypes),
        matmul_budget_s=budget,
        result_path=str(workdir / RESULT_FILE),
        phase_dir=str(workdir / PHASES_DIR),
    )
    # the search may overrun its budget by one probe per dtype; the rest takes about a minute
    timeout = budget * len(dtypes) * 2 + 300.0
    return PerfPlan(spec, max(gpu_count, 1) if gpu else 1, 1 if gpu else cpu_cores, timeout)


# --- judging ----------------------------------------------------------------------------------


def _row(
    check: str,
    title: str,
    gpu: int | None,
    device_name: str,
    value: float | None,
    unit: str,
    unavailable: Finding | None = None,
    higher_is_better: bool = True,
    **data: object,
) -> Measurement:
    """One figure beside its SKU's expected value, ratio and verdict (SKIP, saying why, where
    there is no figure)."""
    if value is not None:
        expected = expected_for(device_name, check)
        status, ratio, finding = judge(check, value, expected, higher_is_better=higher_is_better)
    else:
        expected, ratio, finding = None, None, not_measured(unavailable)
        status = CheckStatus.SKIP
    return Measurement(
        check=check,
        title=title,
        gpu=gpu,
        value=value,
        unit=unit,
        higher_is_better=higher_is_better,
        expected=expected.value if expected else None,
        expected_source=expected.source if expected else None,
        ratio=ratio,
        status=status,
        finding=finding,
        data=dict(data),
    )


def _matmul_row(peak: PeakResult, gpu: int | None) -> Measurement:
    title = f"matmul {peak.dtype}"
    check = f"matmul.{peak.dtype}"
    if peak.suspect:  # above the spec sheet: a timing bug, never a headline
        return Measurement(
            check=check,
            title=title,
            gpu=gpu,
            value=None,
            unit="TFLOP/s",
            status=CheckStatus.FAIL,
            finding=peak.suspect,
            data={"best_tflops": peak.best_tflops, "best_shape": peak.best_shape},
        )
    reason = peak.unavailable
    if reason is None and peak.best_tflops is None and peak.notes:
        reason = Finding(code="validate.all", figures=all_of(peak.notes))
    return _row(
        check,
        title,
        gpu,
        peak.device_name,
        peak.headline_tflops,
        "TFLOP/s",
        reason,
        best_shape=list(peak.best_shape) if peak.best_shape else None,
        probes=len(peak.probes),
        notes=[note.model_dump() for note in peak.notes],
    )


BANDWIDTH_TITLES = {"memory.copy": "memory copy", "memory.triad": "memory triad", **HOST_TITLES}


def _p2p_rows(matrix: P2PMatrix, device_name: str) -> list[Measurement]:
    if matrix.unavailable:
        return [_row("p2p.bw", "GPU to GPU", None, device_name, None, "GB/s", matrix.unavailable)]
    rows = []
    for pair in matrix.pairs:
        title = f"GPU {pair.src} to {pair.dst}"
        bandwidth = _row("p2p.bw", title, pair.src, device_name, pair.gbps, "GB/s")
        latency = _row(
            "p2p.latency",
            title + " latency",
            pair.src,
            device_name,
            pair.latency_us,
            "us",
            higher_is_better=False,
        )
        for row in (bandwidth, latency):
            row.data.update(src=pair.src, dst=pair.dst, peer_access=pair.peer_access)
            rows.append(row)
    return rows


def _rank_bandwidth_rows(run: PerfRun, rank: RankPerf, gpu: int | None) -> list[Measurement]:
    """A rank's bandwidth figures: host copies alone judged against the link, all at once
    reported beside the topology (validate/host_links.py), the rest judged as they are."""
    rows = []
    for result in rank.bandwidth:
        if result.check in ALL_AT_ONCE_CHECKS:
            everyone = [b for r in run.ranks for b in r.bandwidth if b.check == result.check]
            direction = result.check.split(".")[0]
            alone = next((b for b in rank.bandwidth if b.check == direction), None)
            rows.append(all_at_once_row(result, gpu, everyone, alone, run.host_topology))
            continue
        row = _row(
            result.check,
            BANDWIDTH_TITLES.get(result.check, result.check),
            gpu,
            rank.device_name,
            result.gbps,
            "GB/s",
            result.unavailable,
            bytes_per_call=result.bytes_per_call,
        )
        if result.check in ALONE_CHECKS:
            row = annotate_alone(row, run.host_topology, result.link)
        rows.append(row)
    return rows


def judge_perf(run: PerfRun, device: Device) -> list[Measurement]:
    """Every rank's figures as judged rows; `gpu` is the GPU index (on CPU: None, the node).
    A GPU's matmul figures are judged against its SKU and its node's other GPUs, with the
    node's power limits (validate/node_peers.py)."""
    rows: list[Measurement] = []
    for rank in sorted(run.ranks, key=lambda r: r.rank):
        gpu = rank.rank if device == "cuda" else None
        mine = [_matmul_row(peak, gpu) for peak in rank.matmul]
        mine += _rank_bandwidth_rows(run, rank, gpu)
        uuid = {"uuid": rank.uuid} if rank.uuid else {}
        rows.extend(row.model_copy(update={"data": row.data | uuid}) for row in mine)
    if run.p2p is not None:
        name = run.ranks[0].device_name if run.ranks else ""
        rows.extend(_p2p_rows(run.p2p, name))
    if device != "cuda":
        return rows
    return judge_with_peers(
        rows,
        {rank.rank: rank.device_name for rank in run.ranks},
        {rank.rank: rank.power_limit for rank in run.ranks},
    )


def busbw_rows(result: CommResult, device_name: str, stored: str) -> list[Measurement]:
    """Per collective, its out-of-place bus bandwidth (nccl-tests' headline placement; in place
    where that is all there is) at the largest size measured, the bandwidth regime; the other
    rows stay in the stored comm run."""
    rows = []
    for op in COLLECTIVES:
        rows_of_op = [r for r in result.rows if r.op == op]
        placements = {r.placement for r in rows_of_op}
        # all_reduce runs in place in torch.distributed: it has no out-of-place rows
        placement = "out-of-place" if "out-of-place" in placements else "in-place"
        mine = [r for r in rows_of_op if r.placement == placement]
        measured = [r for r in mine if r.status == "ok" and r.busbw_gbps is not None]
        title = f"busbw {op}"
        if not measured:
            reasons = sorted({r.reason for r in mine if r.reason})
            why = Finding(
                code="perf.busbw_not_measured",
                figures={
                    "op": op,
                    "reasons": reasons,
                    "error": result.error,
                    "status": result.status,
                },
            )
            rows.append(_row(f"busbw.{op}", title, None, device_name, None, "GB/s", why))
            continue
        top = max(measured, key=lambda r: r.size_bytes)
        wrong = sum(r.wrong or 0 for r in mine)
        row = _row(
            f"busbw.{op}",
            title,
            None,
            device_name,
            top.busbw_gbps,
            "GB/s",
            size_bytes=top.size_bytes,
            ranks=result.world_size,
            comm_run=stored,
        )
        if wrong:  # a fast collective that computes wrong sums is a broken one
            row.status = CheckStatus.FAIL
            row.finding = Finding(
                code="perf.wrong_sums", figures={"wrong": wrong, "comm_run": stored}
            )
        rows.append(row)
    return rows


def _fix(status: CheckStatus, culprit: Measurement) -> list[Finding]:
    """What to do about a WARN or FAIL: the worst row's own fix where it has one (a GPU
    lagging its peers, a whole node below its SKU), else where to look."""
    if status not in (CheckStatus.WARN, CheckStatus.FAIL):
        return []
    code = culprit.data.get("fix") or (
        "perf.fix_fail" if status is CheckStatus.FAIL else "perf.fix_warn"
    )
    return [Finding(code=str(code))]


def _summary(mine: Sequence[Measurement], culprit: Measurement, units: str) -> list[Finding]:
    """A check's line over its GPUs: the figure (or their spread) and the worst GPU's evidence."""
    values = [r.value for r in mine if r.value is not None]
    first = mine[0]
    inner = (first if len(values) <= 1 else culprit).finding
    if not values:
        return [inner] if inner is not None else []
    figures: dict[str, object] = {
        "unit": first.unit,
        "finding": inner.model_dump() if inner is not None else None,
    }
    if len(values) == 1:
        return [Finding(code="perf.one_figure", figures=figures | {"value": values[0]})]
    figures |= {
        "count": len(values),
        "units": units,
        "low": min(values),
        "high": max(values),
        "median": statistics.median(values),
        "gpu": culprit.gpu,
        "title": culprit.title,
    }
    return [Finding(code="perf.spread", figures=figures)]


def perf_checks(rows: Sequence[Measurement], units: str) -> list[CheckResult]:
    """One table line per check: its worst verdict over the GPUs, their spread, the worst
    GPU's evidence. `units` names what a row's gpu index is ('GPU' or 'rank')."""
    checks: list[CheckResult] = []
    by_check: dict[str, list[Measurement]] = {}
    for row in rows:
        by_check.setdefault(row.check, []).append(row)
    for check, mine in by_check.items():
        status = worst([r.status for r in mine])
        first = mine[0]
        culprit = next((r for r in mine if r.status is status), first)
        title = first.title
        if check.startswith("p2p."):
            title = "GPU to GPU " + ("bandwidth" if check == "p2p.bw" else "latency")
        checks.append(
            CheckResult(
                id=f"perf_{check.replace('.', '_')}",
                title=title,
                status=status,
                findings=_summary(mine, culprit, units),
                fix=_fix(status, culprit),
                data={"check": check, "rows": len(mine)},
            )
        )
    return checks


def measured_peaks(rows: Sequence[Measurement]) -> dict[str, float]:
    """TFLOP/s per dtype, the median over the node's GPUs of what each reached (only figures
    that passed the spec-sheet guard): what MFU against the measured peak divides by."""
    peaks: dict[str, list[float]] = {}
    for row in rows:
        if row.check.startswith("matmul.") and row.value is not None:
            peaks.setdefault(row.check.removeprefix("matmul."), []).append(row.value)
    return {dtype: statistics.median(values) for dtype, values in peaks.items()}


# --- running ----------------------------------------------------------------------------------


def perf_folder(experiment_dir: Path, now: datetime | None = None) -> Path:
    """Where one perf run keeps its spec, its ranks' logs, its phases and perf.json."""
    moment = now or datetime.now(timezone.utc)
    return experiment_dir / PERF_DIR / f"{socket.gethostname()}-{moment.strftime('%Y%m%d-%H%M%S')}"


def phase_title(stem: str) -> str:
    """'03-matmul-bf16' -> 'matmul bf16'; 'host-h2d' -> 'host to device'."""
    name = stem.split("-", 1)[1] if stem[:2].isdigit() else stem
    kind, _, what = name.partition("-")
    return HOST_TITLES.get(what, what) if kind == "host" else f"{kind} {what}".strip()


def planned_phases(spec: PerfSpec) -> list[str]:
    """The phases' titles in the order the ranks run them (rank/programs/perf.py)."""
    names = [f"matmul-{dtype}" for dtype in spec.dtypes]
    if spec.memory:
        names += ["memory-copy", "memory-triad"]
    if spec.host_link:
        names += ["host-h2d", "host-d2h"]
    return [phase_title(name) for name in names]


def finished_phases(folder: Path) -> list[tuple[str, PerfRun]]:
    """The phases a perf run's ranks finished, in order, each with its figures (a file that
    cannot be read is left out: rank 0 writes them atomically, so none is half written)."""
    found = []
    for path in sorted((folder / PHASES_DIR).glob("*.json")):
        run = read_model(PerfRun, path)
        if run is not None:
            found.append((phase_title(path.stem), run))
    return found


def merge_phases(phases: Sequence[PerfRun]) -> PerfRun | None:
    """The finished phases as one run, as perf.json would hold them (None: no phase)."""
    if not phases:
        return None
    ranks: dict[int, RankPerf] = {}
    for phase in phases:
        for rank in phase.ranks:
            mine = ranks.setdefault(
                rank.rank, rank.model_copy(update={"matmul": [], "bandwidth": []})
            )
            mine.matmul += rank.matmul
            mine.bandwidth += rank.bandwidth
    return PerfRun(world_size=phases[-1].world_size, ranks=[ranks[r] for r in sorted(ranks)])


def phase_line(title: str, run: PerfRun) -> str:
    """A finished phase in a line: its figure (the spread over ranks), or why it has none."""
    peaks = [peak for rank in run.ranks for peak in rank.matmul]
    bandwidths = [b for rank in run.ranks for b in rank.bandwidth]
    if peaks:
        values = [p.best_tflops for p in peaks if p.best_tflops is not None]
        first = peaks[0]
        if not values:
            notes = Finding(code="validate.all", figures=all_of(first.notes))
            return phase_words(title, why=first.unavailable or (notes if first.notes else None))
        return phase_words(title, values, "TFLOP/s", len(first.probes), first.elapsed_s)
    values = [b.gbps for b in bandwidths if b.gbps is not None]
    if values:
        return phase_words(title, values, "GB/s")
    return phase_words(title, why=next((b.unavailable for b in bandwidths if b.unavailable), None))


@dataclass
class PhaseWatch:
    """Reports each phase the ranks finish, once, as `log` lines, and the phase now running
    as `progress` text; polled while the launch runs."""

    planned: list[str]  # the phases' titles, in order (`planned_phases`)
    folder: Path
    progress: Callable[[str], None] | None
    log: Callable[[str], None] | None
    reported: int = 0

    def poll(self) -> bool:
        """Report the phases finished since the last poll; whether perf.json is written."""
        finished = finished_phases(self.folder)
        for title, run in finished[self.reported :]:
            if self.log is not None:
                self.log(phase_line(title, run))
        if len(finished) > self.reported and self.progress is not None:
            done = len(finished)
            left = self.planned[done:]
            now = f"{left[0]} ({done + 1}/{len(self.planned)})" if left else "writing the figures"
            self.progress(f"perf: {now}")
        self.reported = max(self.reported, len(finished))
        return (self.folder / RESULT_FILE).is_file()


def run_measurements(
    plan: PerfPlan, base_env: Mapping[str, str], workdir: Path, watch: PhaseWatch | None = None
) -> tuple[PerfRun | None, CheckResult | None]:
    """The perf launch; (figures, None) or (None, the FAIL saying why there are none).
    `watch` is polled while it runs (and once after)."""
    spec, spec_path = plan.spec, workdir / "perf-spec.json"
    command = spec_launch(
        "perf", spec, spec.device, spec_path, plan.nproc, base_env, plan.omp_num_threads
    )
    finished = watch.poll if watch is not None else None
    try:
        attempt = run_attempt(
            command, plan.timeout_s, lambda: read_model(PerfRun, workdir / RESULT_FILE), finished
        )
    finally:  # the phases that ended since the last poll, however the launch ended
        if watch is not None:
            watch.poll()
    if attempt.written is not None:
        return attempt.written, None
    failure = attempt.launch_failure
    return None, wrote_nothing("perf_run", "Perf measurements", "measurement", failure, workdir)


def run_busbw(
    device: Device, experiment_dir: Path, base_env: Mapping[str, str], gpu_count: int
) -> tuple[CommResult | None, Finding | None]:
    """`comm`'s sweep of the four collectives on every GPU (2 gloo ranks on CPU); (result,
    None) or (None, why it was not run)."""
    from torchscale.contracts.errors import TorchScaleError
    from torchscale.orchestration.comm.planning import CommOptions, plan_comm
    from torchscale.orchestration.comm.sweep_launch import run_comm_launch
    from torchscale.orchestration.plan.nodes import Machine

    if device == "cuda" and gpu_count < 2:
        return None, Finding(code="perf.busbw_too_few_gpus", figures={"count": gpu_count})
    low, high, factor = GPU_BUSBW_BYTES if device == "cuda" else CPU_BUSBW_BYTES
    options = CommOptions(
        ops=",".join(COLLECTIVES),
        min_bytes=low,
        max_bytes=high,
        step_factor=factor,
        device=device,
        name=experiment_dir.name,
    )
    try:
        machine = Machine(gpu_count=gpu_count, cpu_cores=host.usable_cores())
        plan = plan_comm(options, machine, experiment_dir, base_env)
        return run_comm_launch(plan.launch, plan.request), None
    except (OSError, TorchScaleError) as exc:
        return None, Finding(code="perf.busbw_not_run", figures={"error": str(exc)})


def judged(run: PerfRun, device: Device) -> PerfOutcome:
    """The figures of a perf launch (whole, or the phases a stopped one finished) judged and
    summed up per check, without the collective sweep's."""
    return _summed(PerfOutcome(judge_perf(run, device), sku=_sku(run)), device)


def _summed(outcome: PerfOutcome, device: Device) -> PerfOutcome:
    """`outcome` with its rows summed up per check and its measured peaks."""
    outcome.checks += perf_checks(outcome.measurements, "GPU" if device == "cuda" else "rank")
    outcome.measured_peaks = measured_peaks(outcome.measurements)
    return outcome


def _sku(run: PerfRun) -> str | None:
    """The SKU the ranks measured; their device names where they differ."""
    names = {r.device_name for r in run.ranks}
    sku = sku_for(next(iter(names))) if len(names) == 1 else None
    return sku or ", ".join(sorted(names)) or None


def kept_run(folder: Path) -> PerfRun | None:
    """What a perf run left in `folder`: perf.json when every phase ran, else the finished
    phases merged (None: nothing finished)."""
    whole = read_model(PerfRun, folder / RESULT_FILE)
    if whole is not None:
        return whole
    return merge_phases([run for _, run in finished_phases(folder)])


def run_perf(
    device: Device,
    gpu_count: int,
    cpu_cores: int,
    experiment_dir: Path,
    base_env: Mapping[str, str],
    *,
    matmul_budget_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
    workdir: Path | None = None,
) -> PerfOutcome:
    """Measure, judge and sum up. Everything the launch writes stays in `workdir` (default: a
    new `perf_folder` of the experiment); `progress` hears what runs now, `log` each phase as
    it starts or ends."""
    workdir = workdir or perf_folder(experiment_dir)
    workdir.mkdir(parents=True, exist_ok=True)
    plan = plan_perf(device, gpu_count, cpu_cores, workdir, matmul_budget_s)
    phases = planned_phases(plan.spec)
    units = "GPU" if device == "cuda" else "rank"
    if progress:
        progress(f"perf: {phases[0]} (1/{len(phases)})" if phases else "perf")
    if log:
        log(f"perf: {plan.nproc} {units}(s), {len(phases)} phases, kept in {workdir}")
    watch = PhaseWatch(phases, workdir, progress, log)
    run, failure = run_measurements(plan, base_env, workdir, watch)
    if run is None:
        assert failure is not None
        outcome = PerfOutcome(checks=[failure])
    else:
        outcome = PerfOutcome(judge_perf(run, device), sku=_sku(run))
    for hear in (progress, log):
        if hear:
            hear("perf: collective bus bandwidth (comm sweep)")
    name = run.ranks[0].device_name if run is not None and run.ranks else ""
    result, why = run_busbw(device, experiment_dir, base_env, gpu_count)
    if result is None:
        outcome.measurements += [
            _row(f"busbw.{op}", f"busbw {op}", None, name, None, "GB/s", why) for op in COLLECTIVES
        ]
    else:
        stored = f"comm/{result.id}.json"
        outcome.measurements += busbw_rows(result, name, stored)
    return _summed(outcome, device)
