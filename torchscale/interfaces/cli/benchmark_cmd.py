"""`torchscale benchmark`: expand the config into cells and run each under torchrun."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from torchscale.contracts.errors import UsageError
from torchscale.contracts.signals import Terminated
from torchscale.interfaces.cli.common import KEPT, handle_errors, stop_exit
from torchscale.interfaces.cli.shared_options import (
    SetOverrides,
    VerbosityFlag,
    takes_dotted_overrides,
)
from torchscale.interfaces.console.streams import Verbosity


@takes_dotted_overrides  # --training.precision=bf16, as the published interface has it
@handle_errors
def benchmark(
    config_file: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Benchmark config (YAML).", show_default=False),
    ] = None,
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
    status_dir: Annotated[
        Path | None,
        typer.Option(
            "--status",
            metavar="DIR",
            help="Show the Slurm jobs of the sweep whose results are in DIR; run nothing.",
        ),
    ] = None,
    cancel_dir: Annotated[
        Path | None,
        typer.Option("--cancel", metavar="DIR", help="Cancel the Slurm jobs of the sweep in DIR."),
    ] = None,
    verbose: VerbosityFlag = None,
) -> None:
    """Run throughput/latency tests across model x batch x GPU count x precision."""
    from torchscale.orchestration.config import load_config

    Verbosity.override(verbose)
    if status_dir is not None or cancel_dir is not None:
        from torchscale.interfaces.cli.slurm_run import cancel_jobs, show_status

        if status_dir is not None and cancel_dir is not None:
            raise UsageError("give --status or --cancel, not both")
        if status_dir is not None:
            raise typer.Exit(show_status(status_dir))
        assert cancel_dir is not None
        raise typer.Exit(cancel_jobs(cancel_dir))
    if config_file is None:
        raise UsageError("--config FILE is needed (or --status DIR / --cancel DIR)")
    config = load_config(config_file, overrides or [])
    if config.launcher.kind in OUTPUT_CHECKED_FIRST:  # the launcher probes it again, as it runs
        from torchscale.offline.results.store import check_output_dir

        check_output_dir(output_dir / config.experiment_name, keep=False)
    # planning imports the library (pandas) and may ask torch for this node's GPUs: seconds
    # that a bad config or output directory is answered without
    from torchscale.interfaces.api import plan_benchmark, run_benchmark
    from torchscale.interfaces.console.benchmark import BenchmarkPrinter

    plan = plan_benchmark(config)
    printer = BenchmarkPrinter(len(plan.cells), plan, live=not dry_run)
    if not dry_run and not Verbosity.quiet():  # a dry run prints them with the plan
        for note in plan.notes:
            printer.say(f"note: {escape(note)}")
    try:
        run = run_benchmark(
            config,
            output_dir,
            resume=resume,
            fail_fast=fail_fast,
            dry_run=dry_run,
            events=printer.events(),
            plan=plan,
        )
    except (Terminated, KeyboardInterrupt) as stop:
        raise stop_exit(stop, KEPT, printer.running) from None
    finally:
        printer.stop()
    printer.after(run)
    raise typer.Exit(run.exit_code)


# the launchers whose run (and dry run) refuses an output directory it cannot write before
# anything else: asked here first, before the seconds of planning, the answer is the same line
OUTPUT_CHECKED_FIRST = ("local", "slurm")
