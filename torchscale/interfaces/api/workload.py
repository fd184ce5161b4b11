"""`run_workload`: what `torchscale validate --level workload` does, in one call (its steps:
docs/first-gpu-run.md; its folder: docs/validate.md). Every step goes through the same
functions as the commands (`run_benchmark`, `run_profile`, `build_report`), so a step that
passes here passes there. Each step's verdict comes from
orchestration/validate/workload_judge.py; it prints nothing."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from torchscale.contracts.errors import TorchScaleError, UsageError
from torchscale.contracts.signals import Terminated
from torchscale.contracts.wording import say
from torchscale.contracts.wording.spell import of
from torchscale.contracts.wording.validate_measured import detail, hint
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    ValidateReport,
    failed,
)
from torchscale.orchestration.validate.workload_plan import NodeFacts, WorkloadPlan

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.orchestration.schedulers.api import BenchmarkRun

__all__ = ["WorkloadRun", "read_node", "run_workload"]

CPU_RANKS = 2  # tp and pp need two ranks; gloo runs them on any CPU
SUMMARY = "summary.md"
RUNS = "runs"  # the cells and profiles: what the report covers
MEMORY = "memory"  # the max-batch search and the deliberate OOM
REPORT_JSON = "validate.json"


@dataclass
class WorkloadRun:
    """What the level left: the report (its checks are the steps) and the folder."""

    plan: WorkloadPlan
    folder: Path
    report: ValidateReport

    @property
    def exit_code(self) -> int:
        return 0 if self.report.ok else 1


@dataclass
class _Steps:
    checks: list[CheckResult] = field(default_factory=list)
    cells: list[CellResult] = field(default_factory=list)


def read_node(device: Literal["cuda", "cpu"]) -> NodeFacts:
    """This node as the plan needs it; UsageError when `cuda` is asked and none is visible."""
    import psutil

    from torchscale.contracts import host
    from torchscale.orchestration.schedulers.local.launcher import machine_here

    nsys = shutil.which("nsys")
    if device == "cuda":
        machine = machine_here(gpu_memory=True)
        if machine.gpu_count == 0:
            raise UsageError(
                "validate --level workload: no CUDA GPU is visible here "
                "(`torchscale validate` says why; --device cpu proves the CPU path)"
            )
        return NodeFacts(
            "cuda",
            machine.gpu_count,
            machine.gpu_memory_bytes,
            machine.gpu_memory_unknown,
            nsys=nsys,
            cpu_cores=machine.cpu_cores,
        )
    memory = psutil.virtual_memory().total + psutil.swap_memory().total
    try:
        mode: int | None = int(Path("/proc/sys/vm/overcommit_memory").read_text().strip())
    except (OSError, ValueError):
        mode = None
    return NodeFacts(
        "cpu", CPU_RANKS, memory, overcommit_mode=mode, nsys=nsys, cpu_cores=host.usable_cores()
    )


def run_workload(
    device: Literal["cuda", "cpu"],
    output_dir: Path | str = "results",
    *,
    name: str = "standalone",
    env: Mapping[str, str] | None = None,
    fail_on: Literal["fail", "warn"] = "fail",
    on_step: Callable[[str], None] | None = None,
    node: NodeFacts | None = None,
    on_stop: Callable[[Path, list[str]], None] | None = None,
) -> WorkloadRun:
    """Run the workload level; everything goes to OUTPUT_DIR/<name>/workload-<host>-<time>/.
    `on_step` hears each step's name before it runs (for a progress display); `node`: the
    facts to plan with (default: read from this node); `on_stop`, when the level is stopped
    (Ctrl-C, SIGTERM, SIGHUP), hears the folder and the steps that had finished, once the
    summary saying where it stopped is written."""
    from torchscale.offline.results.store import check_output_dir
    from torchscale.orchestration.validate.workload_judge import said
    from torchscale.orchestration.validate.workload_plan import plan_workload

    facts = node or read_node(device)
    plan = plan_workload(facts)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = Path(output_dir) / name / f"workload-{socket.gethostname()}-{stamp}"
    check_output_dir(folder)
    ranks_env = dict(os.environ if env is None else env)
    steps = _Steps()
    current = ["planning"]
    finished: list[str] = []  # the steps that ran to their end, in order

    def say(step: str) -> None:
        if current[0] != "planning":
            finished.append(current[0])
        current[0] = step
        if on_step is not None:
            on_step(step)

    try:
        _run_steps(plan, device, folder, ranks_env, steps, say)
    except (KeyboardInterrupt, Terminated) as stop:
        # what finished is on disk already; the summary says where the level stopped
        how = stop.name if isinstance(stop, Terminated) else "Ctrl-C"
        steps.checks.append(
            failed(
                "stopped", "stopped", said("stopped", how=how, step=current[0]), said("fix_again")
            )
        )
        with contextlib.suppress(TorchScaleError):
            _write(folder, _validate_report(device, plan, steps.checks, folder, fail_on), plan)
        if on_stop is not None:
            on_stop(folder, finished)
        raise
    report = _validate_report(device, plan, steps.checks, folder, fail_on)
    _write(folder, report, plan)
    return WorkloadRun(plan, folder, report)


def _run_steps(
    plan: WorkloadPlan,
    device: Literal["cuda", "cpu"],
    folder: Path,
    env: Mapping[str, str],
    steps: _Steps,
    say: Callable[[str], None],
) -> None:
    """Every step in order, each verdict appended to `steps`; a step that cannot run is its
    FAIL and the next one runs (they share nothing but the devices). The cells and profiles
    go to RUNS (what the report covers), the max-batch search and the deliberate OOM to
    MEMORY (a failure on purpose is not one to fix)."""
    runs, memory = folder / RUNS, folder / MEMORY
    say("node checks")
    _guarded(steps, "checks", "node checks", lambda: _node_checks(device, folder))
    eager = {name: _sweep(data, runs, env, steps) for name, data in _announced(plan.eager, say)}
    say("max-batch search")
    fit = _sweep(plan.fit, memory, env, steps)
    say("a batch that cannot fit")
    oom = _sweep(plan.oom, memory, env, steps) if plan.oom is not None else None
    compiled = {
        name: _sweep(data, runs, env, steps) for name, data in _announced(plan.compiled, say)
    }
    judge = functools.partial(_judge_runs, plan, eager, compiled, fit, oom, folder, steps)
    _guarded(steps, "judge", "verdicts", judge)
    for tool in plan.profile_tools:
        say(f"profile ({tool})")
        profiled = functools.partial(_profiled, plan, tool, runs, env)
        _guarded(steps, f"profile.{tool}", f"profile ({tool})", profiled)
    if plan.nsys_skipped is not None:
        from torchscale.orchestration.validate.workload_judge import judge_nsys_absent

        steps.checks.append(judge_nsys_absent(plan.nsys_skipped))
    say("report")
    _guarded(steps, "report", "report", lambda: [_report(runs, folder)])
    # compiled kernels are rebuilt from the code on the next run and would make the folder
    # too large to attach (Triton's cubins on GPUs): they go once everything has run
    for cache in folder.glob("*/*/compile_cache"):
        shutil.rmtree(cache, ignore_errors=True)


def _announced(
    sweeps: Mapping[str, dict[str, object]], say: Callable[[str], None]
) -> Iterator[tuple[str, dict[str, object]]]:
    for name, data in sweeps.items():
        say(f"{name} cells")
        yield name, data


def _guarded(
    steps: _Steps, id: str, title: str, step: Callable[[], list[CheckResult] | None]
) -> None:
    """A step's verdicts into `steps`, or its FAIL: one line for a refusal (a TorchScaleError
    names what to fix), the exception and where for a crash (a bug), never a traceback."""
    from torchscale.orchestration.validate.workload_judge import said

    try:
        steps.checks.extend(step() or [])
    except TorchScaleError as exc:
        steps.checks.append(
            failed(id, title, said("step_refused", error=str(exc)), said("fix_refused"))
        )
    except Exception as exc:
        from torchscale.orchestration.validate.run_checks import crashed

        steps.checks.append(
            crashed(
                id,
                title,
                exc,
                "the step crashed",
                said("fix_report_bug"),
                traceback=traceback.format_exc(),  # in validate.json, for the report
            )
        )


def _node_checks(device: Literal["cuda", "cpu"], folder: Path) -> list[CheckResult]:
    """The basic level's checks without its live probes: the steps below run torchrun and the
    compiler for real, so a broken one shows there with its cause."""
    from torchscale.orchestration.validate.check_context import ValidateContext
    from torchscale.orchestration.validate.run_checks import run_validation

    ctx = ValidateContext(device=device, output_dir=folder, quick=True)
    # the rows that need a look; nsys has its own step (profile (nsys)) below
    look = (CheckStatus.FAIL, CheckStatus.WARN)
    return [c for c in run_validation(ctx).checks if c.status in look and c.id != "nsys"]


def _sweep(
    data: dict[str, object] | None, folder: Path, env: Mapping[str, str], steps: _Steps
) -> BenchmarkRun | None:
    """One benchmark of the plan, as `torchscale benchmark` runs it; a refusal (a missing
    toolchain, a config this torchscale rejects) is that step's FAIL, not the level's end."""
    from torchscale.interfaces.api.benchmark import run_benchmark
    from torchscale.orchestration.config.loader import validate_data

    if data is None:
        return None
    experiment = str(data["experiment_name"])
    ran: list[BenchmarkRun] = []

    def sweep() -> None:
        config = validate_data(dict(data), f"workload {experiment}")
        ran.append(run_benchmark(config, folder, env=env))

    _guarded(steps, f"{experiment}.run", f"{experiment} cells", sweep)
    if not ran:
        return None
    steps.cells.extend(ran[0].sweep.results)
    return ran[0]


def _judge_runs(
    plan: WorkloadPlan,
    eager: Mapping[str, BenchmarkRun | None],
    compiled: Mapping[str, BenchmarkRun | None],
    fit: BenchmarkRun | None,
    oom: BenchmarkRun | None,
    folder: Path,
    steps: _Steps,
) -> None:
    from torchscale.contracts.cell import Status
    from torchscale.orchestration.validate import workload_judge as judge

    def results(runs: Mapping[str, BenchmarkRun | None]) -> list[CellResult]:
        return [r for run in runs.values() if run is not None for r in run.sweep.results]

    for runs, is_compiled in ((eager, False), (compiled, True)):
        steps.checks.extend(
            judge.judge_cell(r, is_compiled, run.store.root)
            for run in runs.values()
            if run is not None
            for r in run.sweep.results
        )
    steps.checks.extend(judge.judge_unplaced(plan.unplaced))
    steps.checks.append(judge.judge_compile(results(eager), results(compiled)))
    if fit is not None:
        steps.checks.extend(
            judge.judge_cell(r, False, fit.store.root, step="fit")
            for r in fit.sweep.results
            if r.status is not Status.OK
        )
        steps.checks.append(judge.judge_max_batch(fit.max_batch, None))
    oom_result = oom.sweep.results[0] if oom and oom.sweep.results else None
    steps.checks.append(
        judge.judge_oom(oom_result, plan.oom_skipped, _recovered(results(compiled)))
    )
    main = eager.get("eager")
    comm_skipped = None if "comm" in plan.eager.get("eager", {}) else judge.said("comm_one_device")
    steps.checks.append(judge.judge_comm(main.comm if main is not None else [], comm_skipped))
    steps.checks.append(judge.judge_telemetry([*results(eager), *results(compiled)]))


def _recovered(after: list[CellResult]) -> bool | None:
    """Whether the devices work again after the OOM: False when a cell that ran after it ran
    out of memory too, True when one ran clean, None when none says (none ran, or they
    failed for reasons of their own, judged in their rows)."""
    from torchscale.contracts.cell import Status

    launched = [r for r in after if r.status is not Status.SKIPPED]
    if any(r.status is Status.OOM for r in launched):
        return False
    return True if any(r.status is Status.OK for r in launched) else None


def _profiled(
    plan: WorkloadPlan, tool: str, folder: Path, env: Mapping[str, str]
) -> list[CheckResult]:
    from torchscale.interfaces.api.profile import ProfileOptions, run_profile
    from torchscale.orchestration.validate.workload_judge import judge_profile

    options = ProfileOptions(**{**plan.profile, "tool": tool, "name": f"profile-{tool}"})
    run = run_profile(options, folder, env=env)
    return [judge_profile(tool, run.profiled)]


def _report(runs: Path, folder: Path) -> CheckResult:
    """The report of the cells and profiles, as `torchscale report -s FOLDER/runs` builds it."""
    from torchscale.interfaces.api.report import build_report
    from torchscale.orchestration.validate.workload_judge import judge_report

    written: list[Path] = []
    for fmt in ("md", "html"):
        run = build_report(runs, fmt, output=folder / f"report.{fmt}")
        if run.outcome.path is not None:
            written.append(run.outcome.path)
    return judge_report(written)


def _validate_report(
    device: Literal["cuda", "cpu"],
    plan: WorkloadPlan,
    checks: list[CheckResult],
    folder: Path,
    fail_on: Literal["fail", "warn"],
) -> ValidateReport:
    from torchscale.orchestration.validate.run_checks import report_of
    from torchscale.orchestration.validate.workload_judge import workload_verdict

    basis = workload_verdict(device, plan.facts.devices, checks)
    return report_of(
        device, checks, basis, fail_on, quick=False, level="workload", folder=str(folder)
    )


def _write(folder: Path, report: ValidateReport, plan: WorkloadPlan) -> None:
    """validate.json and summary.md beside the results (atomically; ResultsError on failure)."""
    from torchscale.contracts.atomic import write_text_atomic
    from torchscale.contracts.errors import ResultsError, describe_os_error

    try:
        write_text_atomic(folder / REPORT_JSON, report.model_dump_json(indent=2))
        write_text_atomic(folder / SUMMARY, summary_markdown(report, plan))
    except OSError as exc:
        raise ResultsError(f"cannot write to {folder}: {describe_os_error(exc)}") from None


def summary_markdown(report: ValidateReport, plan: WorkloadPlan) -> str:
    """The folder's first page: the verdict, then a row per step, worst first."""
    from torchscale.orchestration.validate.check_result import SEVERITY

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    facts = plan.facts
    lines = [
        f"# validate --level workload on {report.hostname}",
        "",
        f"**{say(report.verdict_basis)}**",
        "",
        f"{of(facts.devices, facts.device)}, torchscale {report.torchscale_version}, "
        f"{report.created_at}. The cells are seconds long: a proof that each path works, "
        "not figures to quote. The report of every cell is report.md (and report.html).",
        "",
        "| status | step | what was found | what to do |",
        "|---|---|---|---|",
    ]
    order = {status: i for i, status in enumerate(SEVERITY)}
    for check in sorted(report.checks, key=lambda c: order[c.status]):
        row = [check.status.value, check.title, detail(check), hint(check)]
        lines.append("| " + " | ".join(cell(x) for x in row) + " |")
    if plan.notes:
        lines += ["", "Notes:", *(f"- {note}" for note in plan.notes)]
    return "\n".join(lines) + "\n"
