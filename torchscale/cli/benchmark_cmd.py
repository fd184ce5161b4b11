"""`torchscale benchmark`: expand the config into cells and run each under torchrun."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, stderr, stdout
from torchscale.cli.options import SetOverrides, VerbosityFlag
from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.config.schema import BenchConfig
    from torchscale.plan import PlannedCell
    from torchscale.results.schema import CellResult
    from torchscale.results.store import ResultStore

STATUS_STYLE = {
    "ok": "green",
    "skipped": "dim",
    "failed": "bold red",
    "oom": "bold red",
    "timeout": "bold red",
}
# torchrun start-up seen on 2 cores: ~5 s plus ~1.5 s per extra rank (docs/methodology.md)
LAUNCH_BASE_S = 5.0
LAUNCH_PER_RANK_S = 1.5


def _machine() -> tuple[int, int]:
    import torch

    from torchscale.validate.checks_system import usable_cores

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return gpus, usable_cores()


def _estimate_s(config: BenchConfig, plan: list[PlannedCell]) -> tuple[float, str]:
    runnable = [p for p in plan if p.skip_reason is None]
    launch = sum(LAUNCH_BASE_S + LAUNCH_PER_RANK_S * p.cell.world_size for p in runnable)
    m = config.measurement
    if m.duration_s is not None:
        windows = m.repeats + (1 if m.comm_overhead else 0)
        return launch + len(runnable) * windows * m.duration_s, "launch + timed windows"
    return launch, "launch overhead only: step times are unknown until measured"


def _print_plan(
    config: BenchConfig, plan: list[PlannedCell], store_root: Path, cpu_cores: int
) -> None:
    from torchscale.results.store import ResultStore
    from torchscale.sweep import cell_command

    store = ResultStore(store_root)
    for i, planned in enumerate(plan, 1):
        cell = planned.cell
        stdout.print(f"[bold]{i}. {escape(cell.cell_id)}[/]")
        if planned.skip_reason:
            stdout.print(f"   [dim]skip: {escape(planned.skip_reason)}[/]")
            continue
        command = cell_command(config, cell, store, os.environ, cpu_cores)
        stdout.print(f"   argv: {escape(shlex.join(command.argv))}")
        env = " ".join(f"{k}={v}" for k, v in sorted(command.env_overrides.items()))
        stdout.print(
            f"   env:  {escape(env)} (+ inherited, minus RANK/MASTER_*/PET_*/TORCHELASTIC_*)"
        )
        for warning in planned.warnings:
            stdout.print(f"   [yellow]warn: {escape(warning)}[/]")
    seconds, basis = _estimate_s(config, plan)
    runnable = sum(p.skip_reason is None for p in plan)
    stdout.print(
        f"{runnable} cell(s) to run, {len(plan) - runnable} skipped; estimated "
        f">= {seconds:.0f} s ({basis}); each cell is killed after "
        f"{config.launcher.cell_timeout_s:g} s"
    )


def _cell_lines(result: CellResult) -> list[str]:
    """The published per-cell lines: throughput, latency, warnings."""
    if result.status != "ok":
        reason = (result.error or {}).get("reason", "")
        return [f"> [{'SKIP' if result.status == 'skipped' else 'FAIL'}] {result.status}: {reason}"]
    thr, steps = result.throughput, result.step_time
    assert thr is not None and steps is not None
    unit = "img/sec" if result.model_kind == "vision" else "samples/sec"
    lines = [
        f"> [INFO] Average Throughput: {thr.samples_per_s:,.0f} {unit}"
        + (f" ({thr.tokens_per_s:,.0f} tokens/sec)" if thr.tokens_per_s else ""),
        f"> [INFO] Iteration Latency: {steps.p50 * 1e3:.1f}ms (p95 {steps.p95 * 1e3:.1f}ms)",
    ]
    comm = result.communication
    if comm and comm.comm_overhead is not None:
        lines.append(f"> [INFO] Exposed communication: {comm.comm_overhead:.0%} of step time")
    lines += [f"> [WARN] {w}" for w in result.warnings]
    return lines


def _fmt(value: object, spec: str, scale: float = 1.0) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return format(float(value) * scale, spec)  # type: ignore[arg-type]


def _print_tables(table: object) -> None:
    import pandas as pd
    from rich import box
    from rich.table import Table

    assert isinstance(table, pd.DataFrame)
    columns = (
        "world",
        "batch",
        "prec/strat",
        "samples/s",
        "/device",
        "p50|p95 ms",
        "scaling",
        "comm",
        "MFU",
        "peak MiB",
        "status",
    )
    for model, rows in table.groupby("model_label", sort=False):
        t = Table(title=f"{model}", title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
        for col in columns:
            t.add_column(
                col,
                justify="left" if col in ("status", "prec/strat") else "right",
                no_wrap=True,
                min_width=len(col),
            )
        for _, r in rows.iterrows():
            gpu_mem = r["peak_allocated_bytes"]
            mem = r["peak_rss_bytes"] if gpu_mem is None or gpu_mem != gpu_mem else gpu_mem
            t.add_row(
                str(r["world_size"]),
                str(r["batch_size"]),
                f"{r['precision']}/{r['strategy']}",
                _fmt(r["samples_per_s"], ",.0f"),
                _fmt(r["samples_per_s_per_device"], ",.0f"),
                f"{_fmt(r['step_p50_s'], '.1f', 1e3)}|{_fmt(r['step_p95_s'], '.1f', 1e3)}",
                _fmt(r["scaling_efficiency"], ".0%"),
                _fmt(r["comm_overhead"], ".0%"),
                _fmt(r["mfu"], ".1%"),
                _fmt(mem, ",.0f", 2**-20),
                f"[{STATUS_STYLE.get(str(r['status']), '')}]{r['status']}[/]",
            )
        stdout.print(t)
    stdout.print(
        "peak MiB: CUDA peak allocated on GPUs, process peak RSS on CPU; comm: exposed "
        "communication share of a step (DDP no_sync method); '-': not measurable here "
        "(reasons in cells/*.json 'unavailable')"
    )


@handle_errors
def benchmark(
    config_file: Annotated[
        Path, typer.Option("--config", "-c", help="Benchmark config (YAML).", show_default=False)
    ],
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Results go to OUTPUT_DIR/<experiment>.")
    ] = Path("./results"),
    overrides: SetOverrides = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (argv, env, skips); run nothing.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Skip cells already ok for the same definition.")
    ] = False,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop at the first failed cell.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Run throughput/latency tests across model x batch x GPU count x precision."""
    from torchscale.config import load_config
    from torchscale.plan import Machine, build_plan
    from torchscale.results.store import ResultStore

    Verbosity.override(verbose)
    config = load_config(config_file, overrides or [])
    if config.launcher.kind != "local":
        raise UsageError("launcher.kind 'slurm' is not implemented yet; use 'local' (one node)")
    gpus, cores = _machine()
    plan = build_plan(config, Machine(gpu_count=gpus, cpu_cores=cores))
    store = ResultStore.for_experiment(output_dir, config.experiment_name)
    if dry_run:
        _print_plan(config, plan, store.root, cores)
        return
    exit_code = _run(config, plan, store, cores, resume, fail_fast)
    raise typer.Exit(exit_code)


def _run(
    config: BenchConfig,
    plan: list[PlannedCell],
    store: ResultStore,
    cores: int,
    resume: bool,
    fail_fast: bool,
) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from torchscale.results.summary import summary_table
    from torchscale.sweep import SweepHooks, run_sweep
    from torchscale.worker.environment import capture_environment

    store.write_environment(capture_environment())
    quiet = Verbosity.quiet()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        disable=quiet,
        transient=True,
    )
    task = progress.add_task("cells", total=len(plan))

    def on_start(planned: PlannedCell, index: int, total: int, will_launch: bool) -> None:
        cell = planned.cell
        if will_launch and not quiet:
            unit = "GPUs" if cell.device == "cuda" else "CPU ranks"
            progress.console.print(
                f"> Running {escape(cell.model.display_name)} on {cell.world_size} {unit} "
                f"(Batch {cell.batch_size}, {cell.precision}, {cell.strategy})..."
            )

    def on_done(result: CellResult, reused: bool) -> None:
        progress.advance(task)
        if quiet and result.status in ("ok", "skipped"):
            return
        if reused:
            progress.console.print(
                f"> [INFO] {escape(result.cell_id)}: ok in a previous run (--resume), not rerun"
            )
            return
        for line in _cell_lines(result):
            style = "yellow" if "[WARN]" in line else ("red" if "[FAIL]" in line else "")
            progress.console.print(f"[{style}]{escape(line)}[/]" if style else escape(line))

    with progress:
        outcome = run_sweep(
            config,
            plan,
            store,
            os.environ,
            cores,
            resume=resume,
            fail_fast=fail_fast,
            hooks=SweepHooks(on_start, on_done),
        )
    if outcome.results:
        _print_tables(summary_table(outcome.results))
    failures = outcome.failures
    stdout.print(
        f"results: {escape(str(store.root))} ({len(outcome.results)} cell(s), "
        f"{len(failures)} failed)"
    )
    if outcome.stopped_early:
        stdout.print("[yellow]--fail-fast: stopped at the first failure[/]")
    return 1 if failures else 0
