"""`validate --level burn`: sustained load on every GPU, judged per GPU with its evidence.

One torchrun of the `burn_in` rank program (rank/programs/burn_in.py: one rank per GPU; 2 gloo
ranks on a CPU node) loads every device for the duration; `judge_burn` (pure) gives each rank
its verdict by the rules of docs/validate.md ('Burn-in'): seeded fingerprints, NVML's error
counters, throughput over time and against its peers. On a CPU node the ranks share the cores
with the machine, so their throughput is reported (INFO), not judged: the fingerprint decides.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.burn_in import BurnRun, BurnSpec, RankBurn
from torchscale.contracts.versioned import read_model
from torchscale.contracts.wording.validate_measured import all_of
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.torchrun import spec_launch
from torchscale.orchestration.validate.check_context import Device
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    Measurement,
    check,
    worst,
    wrote_nothing,
)

RESULT_FILE = "burn.json"
CPU_RANKS = 2
DROP_WARN, DROP_FAIL = 0.10, 0.25  # throughput drop, last third against first third
PEER_WARN, PEER_FAIL = 0.10, 0.25  # below the peers' median
INTERVALS = 10  # a burn is cut into about this many intervals (at least MIN_INTERVAL_S each)
MIN_INTERVAL_S = 0.5
FINGERPRINTS = 5  # fingerprints taken over the burn, besides the first and the last
LAUNCH_MARGIN_S = 180.0  # rendezvous, imports, the last interval, the gather


@dataclass
class BurnOutcome:
    measurements: list[Measurement] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)


def plan_burn(device: Device, gpu_count: int, duration_s: float, workdir: Path) -> BurnSpec:
    """Intervals of duration/10 (at least 0.5 s); big GEMMs on a GPU, small ones on a CPU."""
    interval = max(MIN_INTERVAL_S, duration_s / INTERVALS)
    intervals = max(1, round(duration_s / interval))
    gpu = device == "cuda"
    return BurnSpec(
        device=device,
        duration_s=duration_s,
        interval_s=interval,
        gemm_n=8192 if gpu else 256,
        copy_bytes=(1 << 30) if gpu else (64 << 20),
        fingerprint_every=max(1, intervals // FINGERPRINTS),
        result_path=str(workdir / RESULT_FILE),
    )


# --- judging ----------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def _thirds(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    third = max(1, len(values) // 3)
    return _median(values[:third]), _median(values[-third:])


def fingerprint_faults(ranks: Sequence[RankBurn]) -> dict[int, Finding]:
    """rank -> why its seeded result is wrong (ranks not named agree). A rank whose result
    changed from its own first one is named first; a disagreement with no majority blames
    every rank only when no such change explains it (two GPUs that differ from the start)."""
    faults: dict[int, Finding] = {}
    for one in ranks:
        first = one.fingerprints[0].sha256 if one.fingerprints else None
        changed = [f for f in one.fingerprints if f.sha256 != first]
        if changed:
            faults[one.rank] = Finding(
                code="burn.result_changed", figures={"interval": changed[0].interval}
            )
    for point in sorted({f.interval for r in ranks for f in r.fingerprints}):
        hashes = {r.rank: f.sha256 for r in ranks for f in r.fingerprints if f.interval == point}
        if len(set(hashes.values())) <= 1:
            continue
        top, votes = Counter(hashes.values()).most_common(1)[0]
        if votes * 2 > len(hashes):  # a strict majority names the odd ones out
            differs = Finding(
                code="burn.result_differs", figures={"votes": votes, "interval": point}
            )
            for rank, digest in hashes.items():
                if digest != top:
                    faults.setdefault(rank, differs)
        elif not any(rank in faults for rank in hashes):
            # no majority, and no rank changed from its own first result to explain it
            figures = {"ranks": len(hashes), "interval": point}
            for rank in hashes:
                faults.setdefault(rank, Finding(code="burn.no_majority", figures=figures))
    return faults


def counter_faults(rank: RankBurn) -> tuple[CheckStatus, Finding] | None:
    start, end = rank.counters_start, rank.counters_end
    rose = {k: end[k] - start.get(k, 0) for k in end if end[k] > start.get(k, 0)}
    for key in ("ecc_uncorrected", "remapped_uncorrected", "remap_failure"):
        if key in rose:
            figures = {"counter": key, "by": rose[key]}
            return CheckStatus.FAIL, Finding(code="burn.counter_rose", figures=figures)
    if end.get("remap_pending"):
        return CheckStatus.WARN, Finding(code="burn.remap_pending")
    return None


def _fell(rank: RankBurn, drop: float, after_s: float) -> Finding:
    """TFLOP/s fell, with what the telemetry says about it as figures."""
    figures: dict[str, object] = {"drop": drop, "after_s": after_s}
    first, last = _thirds([i.sm_clock_mhz for i in rank.intervals])
    if first and last and last < first:
        figures |= {"clock_from_mhz": first, "clock_to_mhz": last}
    temperatures = [i.temperature_c for i in rank.intervals if i.temperature_c is not None]
    if temperatures:
        figures["max_temperature_c"] = max(temperatures)
    reasons = sorted({r for i in rank.intervals for r in i.slowdown})
    if reasons:
        figures["slowdown"] = reasons
    return Finding(code="burn.fell", figures=figures)


def judge_rank(
    rank: RankBurn, peers: Sequence[RankBurn], device: Device, faults: Mapping[int, Finding]
) -> tuple[CheckStatus, list[Finding]]:
    """One rank's verdict and its evidence."""
    if rank.rank in faults:
        return CheckStatus.FAIL, [faults[rank.rank]]
    counted = counter_faults(rank)
    if counted is not None and counted[0] is CheckStatus.FAIL:
        return counted[0], [counted[1]]
    series = [i.tflops for i in rank.intervals]
    mine = _median(series)
    if mine is None:
        return CheckStatus.FAIL, [Finding(code="burn.no_interval")]
    if device != "cuda":
        figures = {"tflops": mine, "intervals": len(series)}
        return CheckStatus.INFO, [Finding(code="burn.cpu_not_judged", figures=figures)]
    verdicts: list[tuple[CheckStatus, Finding]] = []
    if counted is not None:
        verdicts.append(counted)
    first, last = _thirds(series)
    if first and last and last < first * (1 - DROP_WARN):
        drop = 1 - last / first
        status = CheckStatus.FAIL if drop > DROP_FAIL else CheckStatus.WARN
        after_s = rank.intervals[-max(1, len(series) // 3)].t_s
        verdicts.append((status, _fell(rank, drop, after_s)))
    medians = [_median([i.tflops for i in p.intervals]) for p in peers if p.rank != rank.rank]
    others = [m for m in medians if m]
    if others:
        reference = statistics.median(others)
        gap = 1 - mine / reference
        if gap > PEER_WARN:
            status = CheckStatus.FAIL if gap > PEER_FAIL and len(others) >= 2 else CheckStatus.WARN
            figures = {"gap": gap, "peer_median": reference}
            verdicts.append((status, Finding(code="burn.below_peers", figures=figures)))
    if not verdicts:
        figures = {"tflops": mine, "intervals": len(series)}
        return CheckStatus.PASS, [Finding(code="burn.steady", figures=figures)]
    return worst([status for status, _ in verdicts]), [finding for _, finding in verdicts]


def _one(evidence: list[Finding]) -> Finding:
    """A rank's evidence as one finding (a measurement has one)."""
    if len(evidence) == 1:
        return evidence[0]
    return Finding(code="validate.all", figures=all_of(evidence))


def judge_burn(run: BurnRun, device: Device) -> BurnOutcome:
    """Per-rank verdicts as measurement rows and check lines, and one line for the node."""
    outcome = BurnOutcome()
    faults = fingerprint_faults(run.ranks)
    unit = "GPU" if device == "cuda" else "rank"
    for rank in sorted(run.ranks, key=lambda r: r.rank):
        status, evidence = judge_rank(rank, run.ranks, device, faults)
        tflops = _median([i.tflops for i in rank.intervals])
        outcome.measurements.append(
            Measurement(check="burn.tflops", title="burn-in GEMM", gpu=rank.rank, value=tflops,
                        unit="TFLOP/s", status=status, finding=_one(evidence),
                        data={"series": [i.tflops for i in rank.intervals]})
        )  # fmt: skip
        copy = _median([i.copy_gbps for i in rank.intervals])
        outcome.measurements.append(
            Measurement(check="burn.copy", title="burn-in copy", gpu=rank.rank, value=copy,
                        unit="GB/s", status=CheckStatus.INFO,
                        finding=Finding(code="burn.copy_median"))
        )  # fmt: skip
        fault = faults.get(rank.rank)
        agree = Finding(code="burn.results_agree", figures={"fingerprints": len(rank.fingerprints)})
        outcome.measurements.append(
            Measurement(check="burn.fingerprint", title="burn-in fingerprint", gpu=rank.rank,
                        value=None, unit="", status=CheckStatus.FAIL if fault else CheckStatus.PASS,
                        finding=fault or agree,
                        data={"sha256": [f.sha256 for f in rank.fingerprints]})
        )  # fmt: skip
        judged = status in (CheckStatus.PASS, CheckStatus.INFO)
        outcome.checks.append(
            check(f"burn_{unit.lower()}{rank.rank}", f"Burn-in {unit} {rank.rank}", status,
                  evidence, [] if judged else [Finding(code="burn.see_docs")])
        )  # fmt: skip
    return outcome


# --- running ----------------------------------------------------------------------------------


def run_burn(
    device: Device,
    duration_s: float,
    base_env: Mapping[str, str],
    gpu_count: int,
    *,
    corrupt_rank: int | None = None,
) -> BurnOutcome:
    """The burn on every GPU (2 CPU ranks), judged; logs kept (and named) only on failure.
    `corrupt_rank`: for the detector's own test (no CLI option sets it)."""
    workdir = Path(tempfile.mkdtemp(prefix="torchscale-burn-"))
    spec = plan_burn(device, gpu_count, duration_s, workdir)
    spec.corrupt_rank = corrupt_rank
    nproc = gpu_count if device == "cuda" else CPU_RANKS
    attempt = run_attempt(
        spec_launch("burn_in", spec, device, workdir / "burn-spec.json", nproc, base_env),
        duration_s + LAUNCH_MARGIN_S,
        lambda: read_model(BurnRun, workdir / RESULT_FILE),
    )
    if attempt.written is None:
        failure = wrote_nothing("burn", "Burn-in", "burn-in", attempt.launch_failure, workdir)
        return BurnOutcome(checks=[failure])
    shutil.rmtree(workdir, ignore_errors=True)
    return judge_burn(attempt.written, device)
