"""Run every check in order and assemble the report. No check can crash the command."""

from __future__ import annotations

import os
import socket
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from torchscale import __version__
from torchscale.contracts.finding import Finding
from torchscale.contracts.signals import Terminated
from torchscale.contracts.wording.spell import limit_s
from torchscale.orchestration.validate import (
    checks_gpu,
    checks_gpu_settings,
    checks_nvlink,
    checks_software,
    checks_system,
)
from torchscale.orchestration.validate.check_context import Device, ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    Measurement,
    ValidateReport,
    failed,
    skipped,
    status_counts,
)
from torchscale.orchestration.validate.checks_gpu import identified
from torchscale.orchestration.validate.checks_software import torch_build
from torchscale.orchestration.validate.smoke import check_smoke

Check = Callable[[ValidateContext], CheckResult]
REPORT_BUG = Finding(code="validate.fix_report_bug", figures={"with_json": True})

CHECKS: tuple[Check, ...] = (
    checks_software.check_python,
    checks_software.check_torch,
    checks_system.check_cpu,
    checks_gpu.check_cuda,
    checks_gpu.check_gpus,
    checks_gpu.check_driver,
    checks_gpu.check_cuda_compat,
    checks_software.check_nccl,
    checks_software.check_gloo,
    checks_software.check_torchrun,
    checks_software.check_nsys,
    checks_software.check_compile,
    checks_nvlink.check_p2p,
    checks_nvlink.check_nvlink,
    checks_nvlink.check_fabric,
    checks_gpu_settings.check_gpu_settings,
    checks_gpu.check_ecc,
    checks_gpu.check_persistence,
    checks_gpu.check_throttle,
    checks_system.check_shm,
    checks_system.check_open_files,
    checks_system.check_infiniband,
    checks_software.check_env,
    checks_system.check_disk,
)


def _guarded(check: Check, ctx: ValidateContext) -> CheckResult:
    """Run one check; an unexpected exception becomes a FAIL naming the check, not a crash."""
    try:
        return check(ctx)
    except Exception as exc:
        name = check.__name__.removeprefix("check_")
        return crashed(name, name, exc, "the check itself crashed")


def _no_gpu(ctx: ValidateContext, results: list[CheckResult]) -> Finding:
    """Why torch sees no GPU (the figures wording/validate_measured.py words), and whether the
    CPU path's smoke test passed."""
    torch = ctx.torch.module
    smoke_ok = [r for r in results if r.id.startswith("smoke_") and r.status is CheckStatus.PASS]
    figures: dict[str, object] = {
        "cpu_works": any(r.data.get("spec", {}).get("device") == "cpu" for r in smoke_ok)
    }
    if torch is None:
        figures["torch_error"] = str(ctx.torch.error)
    else:
        if torch_build(torch) == "CPU-only":
            figures["cpu_only_torch"] = str(torch.__version__)
        if not ctx.nvml.ok:
            figures["nvml_error"] = str(ctx.nvml.error)
        figures["driver_lists_none"] = ctx.nvml.ok and not ctx.nvml.gpus
    return Finding(code="validate.no_gpu", figures=figures)


# what a second GPU would check: peer access, the settings GPUs agree on, the GPU-to-GPU copy
# and every collective's busbw
BETWEEN_GPUS = ("p2p", "gpu_settings", "perf_p2p_", "perf_busbw_")
NCCL_BETWEEN_GPUS = "NCCL between GPUs"


def verdict_basis(ctx: ValidateContext, results: list[CheckResult]) -> Finding:
    """The conclusion a person reads first, as a code and its figures. On one GPU the node is
    never called ready for distributed training: what only a second GPU checks is named."""
    if ctx.device == "cuda" and ctx.torch.cuda_gpu_count == 0:
        return _no_gpu(ctx, results)
    failures = [r.title for r in results if r.status is CheckStatus.FAIL]
    if failures:
        return Finding(code="validate.not_ready", figures={"failed": failures})
    figures: dict[str, object] = {
        "quick": ctx.quick,
        "warns": [r.title for r in results if r.status is CheckStatus.WARN],
    }
    if ctx.device == "cuda" and ctx.torch.cuda_gpu_count == 1:
        skipped_between = [
            r.title
            for r in results
            if r.status is CheckStatus.SKIP and r.id.startswith(BETWEEN_GPUS)
        ]
        figures["unchecked"] = [*skipped_between, NCCL_BETWEEN_GPUS]
        return Finding(code="validate.ready_one_gpu", figures=figures)
    figures["path"] = "GPU (NCCL)" if ctx.device == "cuda" else "CPU (gloo)"
    return Finding(code="validate.ready", figures=figures)


def is_ok(counts: Mapping[CheckStatus, int], fail_on: str) -> bool:
    """Exit 0 or not: no FAIL, and with `--fail-on warn` no WARN either (INFO and SKIP never
    block: they are no verdict on the node)."""
    blocking = (CheckStatus.FAIL, CheckStatus.WARN) if fail_on == "warn" else (CheckStatus.FAIL,)
    return not any(counts.get(status, 0) for status in blocking)


@dataclass(frozen=True)
class Kept:
    """What a stopped validation leaves: the perf phases that finished (their titles, in
    order) and the folder they lie in (None: the level measures nothing)."""

    phases: list[str] = field(default_factory=list)
    folder: Path | None = None


StopHook = Callable[[ValidateReport | None, Kept], None]


def run_validation(
    ctx: ValidateContext,
    base_env: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    log: Callable[[str], None] | None = None,
    on_stop: StopHook | None = None,
) -> ValidateReport:
    """Run all checks (then the smoke test unless quick) and build the report. `progress`
    hears what runs now (each check), `log` each phase as it starts or ends (a line in a
    log). Stopped (Ctrl-C, SIGTERM, SIGHUP) while it measures, it calls `on_stop` with the
    report of what finished (None when nothing did) and what was kept, then lets the stop
    go on."""
    results: list[CheckResult] = []
    now = ["the node checks"]

    def step(text: str) -> None:
        now[0] = text
        if progress:
            progress(text)

    line: Callable[[str], None] = log or (lambda text: None)
    line(f"validate: {len(CHECKS)} node checks")
    for check in CHECKS:
        step(check.__name__.removeprefix("check_"))
        results.append(_guarded(check, ctx))
    step("smoke test")
    if not ctx.quick:
        line("validate: smoke test (torchrun)")
    env = dict(os.environ if base_env is None else base_env)
    try:
        results.extend(check_smoke(ctx, env))
    except Exception as exc:
        error = {"error": f"{type(exc).__name__}: {exc}"}
        detail = Finding(code="validate.smoke_not_run", figures=error)
        results.append(
            failed("smoke", "Smoke test", detail, Finding(code="validate.fix_report_bug"))
        )
    measurements: list[Measurement] = []
    peaks: dict[str, float] = {}
    sku: str | None = None
    folder: Path | None = None
    try:
        if ctx.level != "basic":
            from torchscale.orchestration.validate.perf import perf_folder

            folder = perf_folder(ctx.experiment_dir or ctx.output_dir / "standalone")
            sku = _measure(ctx, env, results, measurements, peaks, step, line, folder)
        if ctx.nvlink_counts:  # the links' error counters again, after the load (NVML still up)
            results.append(_guarded(checks_nvlink.check_nvlink_errors, ctx))
    except (KeyboardInterrupt, Terminated) as stop:
        if on_stop is not None:
            how = stop.name if isinstance(stop, Terminated) else "Ctrl-C"
            on_stop(*_stopped(ctx, results, folder, f"stopped by {how} during {now[0]}"))
        raise
    finally:
        ctx.close()
    return _report(ctx, results, measurements, peaks, sku)


def _report(
    ctx: ValidateContext,
    results: list[CheckResult],
    measurements: list[Measurement],
    peaks: dict[str, float],
    sku: str | None,
    verdict: Finding | None = None,
) -> ValidateReport:
    return report_of(
        ctx.device,
        results,
        verdict or verdict_basis(ctx, results),
        ctx.fail_on,
        quick=ctx.quick,
        level=ctx.level,
        sku=sku,
        measurements=measurements,
        measured_peaks=peaks,
    )


def report_of(
    device: Device,
    checks: list[CheckResult],
    verdict: Finding,
    fail_on: Literal["fail", "warn"],
    **fields: Any,
) -> ValidateReport:
    """The report of `checks` made here and now, with their counts and whether they pass by
    `fail_on` (every level's, the workload level's too)."""
    counts = status_counts(checks)
    return ValidateReport(
        torchscale_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
        device=device,
        ok=is_ok(counts, fail_on),
        counts=counts,
        verdict_basis=verdict,
        checks=checks,
        fail_on=fail_on,
        **fields,
    )


def _stopped(
    ctx: ValidateContext, results: list[CheckResult], folder: Path | None, why: str
) -> tuple[ValidateReport | None, Kept]:
    """The report of what a stopped run finished (the checks, and the perf phases judged as
    a whole run's are), with a FAIL saying where it stopped; None when no phase finished."""
    from torchscale.orchestration.validate.perf import finished_phases, judged, kept_run

    if folder is None:
        return None, Kept()
    kept = Kept([title for title, _ in finished_phases(folder)], folder)
    run = kept_run(folder)
    if run is None:
        return None, kept
    outcome = judged(run, ctx.device)
    figures = {"why": why, "phases": kept.phases, "folder": str(folder)}
    again = Finding(code="validate.fix_run_again")
    stop = failed("stopped", "stopped", Finding(code="validate.stopped", figures=figures), again)
    verdict = Finding(code="validate.not_judged", figures={"why": why})
    checks = [*results, *outcome.checks, stop]
    peaks = outcome.measured_peaks
    return _report(ctx, checks, outcome.measurements, peaks, outcome.sku, verdict), kept


def _measure(
    ctx: ValidateContext,
    env: dict[str, str],
    results: list[CheckResult],
    measurements: list[Measurement],
    peaks: dict[str, float],
    progress: Callable[[str], None],
    log: Callable[[str], None],
    folder: Path,
) -> str | None:
    """`--level perf` and `burn`: their checks appended to `results`, their figures to
    `measurements`; the SKU measured, or None. A crash is a FAIL naming it, never a traceback."""
    from torchscale.contracts import host

    gpus = ctx.torch.cuda_gpu_count  # 0 without torch
    if ctx.torch.module is None:
        results.append(skipped("perf", "Measured capability", Finding(code="validate.needs_torch")))
        return None
    if ctx.device == "cuda" and gpus == 0:
        hint = Finding(code="validate.fix_perf_cpu")
        why = Finding(code="validate.perf_no_gpu")
        results.append(skipped("perf", "Measured capability", why, hint))
        return None
    sku = None
    try:
        from torchscale.orchestration.validate.perf import run_perf

        outcome = run_perf(
            ctx.device,
            gpus,
            host.usable_cores(),
            ctx.experiment_dir or ctx.output_dir / "standalone",
            env,
            matmul_budget_s=ctx.matmul_budget_s,
            progress=progress,
            log=log,
            workdir=folder,
        )
        results.extend(outcome.checks)
        measurements.extend(identified(outcome.measurements, ctx.nvml))
        peaks.update(outcome.measured_peaks)
        sku = outcome.sku
    except Exception as exc:
        results.append(crashed("perf", "Measured capability", exc))
    if ctx.level == "burn":
        progress(f"burn-in for {limit_s(ctx.burn_duration_s)}")
        log(f"burn: sustained load for {ctx.burn_duration_s:g} s")
        try:
            from torchscale.orchestration.validate.burn_in import run_burn

            burn = run_burn(ctx.device, ctx.burn_duration_s, env, gpus)
            results.extend(burn.checks)
            measurements.extend(burn.measurements)
        except Exception as exc:
            results.append(crashed("burn", "Burn-in", exc))
    return sku


def crashed(
    id: str,
    title: str,
    exc: Exception,
    what: str = "could not run",
    hint: Finding = REPORT_BUG,
    **data: Any,
) -> CheckResult:
    """A FAIL naming the exception and the line that raised it."""
    where = traceback.extract_tb(exc.__traceback__)[-1]
    figures = {
        "what": what,
        "error": f"{type(exc).__name__}: {exc}",
        "file": Path(where.filename).name,
        "line": where.lineno,
    }
    return failed(id, title, Finding(code="validate.crashed", figures=figures), hint, **data)
