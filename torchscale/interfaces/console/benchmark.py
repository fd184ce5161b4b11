"""What `torchscale benchmark` prints as the run goes (the library's events: cells, data, checks,
forecasts, comm and max-batch runs, profiles, a launcher's jobs) and after it (the tables, the
summary, the dry run's plan, the profiles' analyses): the command hands `BenchmarkPrinter`'s
events to `api.run_benchmark` and prints nothing itself."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from torchscale.contracts import wording
from torchscale.contracts.cell import world_label
from torchscale.contracts.wording.spell import cv, pct_whole, whole_s
from torchscale.interfaces.console.lines import Line, hanging
from torchscale.interfaces.console.streams import (
    Verbosity,
    eta_bar,
    print_error_lines,
    print_lines,
    stderr,
    stdout,
    table_width,
)

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from torchscale.contracts.cell import CellIdentity
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.comm_result import CommResult
    from torchscale.contracts.schema.max_batch import MaxBatchResult
    from torchscale.interfaces.console.live_table import LiveTable
    from torchscale.interfaces.console.progress import SweepProgress
    from torchscale.orchestration.comm.sweep_launch import CommLaunch, CommRequest
    from torchscale.orchestration.forecast_scoring import ForecastCheck
    from torchscale.orchestration.memory.max_batch_runs import SearchGroup
    from torchscale.orchestration.memory.search import ProbeOutcome
    from torchscale.orchestration.plan.planned import Plan, PlannedCell
    from torchscale.orchestration.profiling.session import ProfiledCell
    from torchscale.orchestration.profiling.trigger import Selected
    from torchscale.orchestration.schedulers.api import BenchmarkEvents, BenchmarkRun, LauncherEvent
    from torchscale.rank.data.prepare import DataReady


POSITION_EVERY_S = 60.0  # a log gets the sweep's position at most once a minute


class BenchmarkPrinter:
    """What `torchscale benchmark` prints as the run goes (from the library's events) and
    after it: progress and cell lines on stderr, tables and summaries on stdout. Each running
    line says where the sweep stands (`progress.py`), so a log or CI shows it too."""

    task: TaskID  # the bar's cells, made with it (`progress`)

    def __init__(self, cells: int, plan: Plan | None = None, live: bool = True) -> None:
        from torchscale.interfaces.console.progress import SweepProgress

        self.quiet = Verbosity.quiet()
        self.plan = plan
        estimates = (
            [0.0 if p.skip_reason else plan.estimate([p]).seconds for p in plan.cells]
            if plan is not None
            else None
        )
        self.clock = SweepProgress(cells, estimates)
        # the default output: one live table (-v: every cell's lines, then tables per model);
        # `live=False` (a dry run, which runs no cell) builds none
        self.live: LiveTable | None = None
        if plan is not None and live and Verbosity.level == 0:
            from torchscale.interfaces.console.live_table import LiveTable, live_layout

            width = table_width(stdout) or stdout.width
            self.live = LiveTable(live_layout([p.cell for p in plan.cells], width))
        self.cells = cells
        self.index = 0
        self.running: str | None = None  # the cell a stop would cut short
        self.names: dict[str, str] = {}  # cell id -> 'tiny-gpt2 b4 x2 fp32 ddp'
        self.profiles: SweepProgress | None = None  # the profiles after the sweep
        self.profile_task: TaskID | None = None
        self.results: list[CellResult] = []
        self.position_shown_at = 0.0  # a log's last position line (time.monotonic)

    @cached_property
    def progress(self) -> Progress:
        """The bar and its cells' task, made when first used: a dry run, which runs no cell,
        never imports them."""
        from rich.progress import MofNCompleteColumn

        from torchscale.interfaces.console.progress import eta_text

        # the live table's rows and the bar under them share one stream
        stream = stdout if self.live is not None else stderr
        bar = eta_bar(stream, self.quiet, MofNCompleteColumn())
        self.task = bar.add_task("cells", total=self.cells, eta=eta_text(None))
        return bar

    def stop(self) -> None:
        """The bar gone, where there is one."""
        if "progress" in self.__dict__:
            self.progress.stop()

    def events(self) -> BenchmarkEvents:
        from torchscale.orchestration.schedulers.api import BenchmarkEvents

        return BenchmarkEvents(
            on_cell_start=self.cell_start,
            on_cell_done=self.cell_done,
            on_data=self.data,
            on_forecast=self.forecast,
            on_check=self.check,
            on_sweep_done=self.sweep_done,
            on_comm_start=_comm_started,
            on_comm_done=_comm_done,
            on_max_batch_start=_max_batch_started,
            on_probe=_probed,
            on_max_batch_done=_max_batch_done,
            on_profile_start=self.profile_started,
            on_profile_done=self.profile_done,
            on_warning=self.warning,
            on_launcher_event=self.launcher_event,
        )

    def say(self, markup: str) -> None:
        """Notes, warnings and the profiles' progress, on stderr beside the live table's
        stdout, wrapped at the console's width (COLUMNS), never past it."""
        stderr.print(markup, soft_wrap=False)

    def tell(self, *lines: Line) -> None:
        """Lines as `print_lines` prints them (whole to a pipe, cut with their prefix on a
        terminal), on stderr: how the run goes (data, checks, a launcher's jobs); the live
        table alone is the sweep's stdout."""
        print_lines(stderr, lines)

    def cell_start(self, planned: PlannedCell, index: int, total: int, will_launch: bool) -> None:
        from torchscale.interfaces.console.cells import cell_name, running_line

        self.progress.start()
        self.index = index
        # what a stop cuts short, as its line names it
        self.running = f"cell {index + 1} of {total} ({cell_name(planned.cell)})"
        position = self.clock.start(index, will_launch)
        if self.live is not None:
            self._position(planned, position, will_launch)
        elif will_launch and not self.quiet:
            self.tell(running_line(planned, position))

    def _position(self, planned: PlannedCell, position: str, will_launch: bool) -> None:
        """Where the sweep stands, under the live table: the bar's description on a terminal;
        in a log, a line when a minute has passed since the last one (a short sweep's rows
        say enough)."""
        import time

        from torchscale.interfaces.console.cells import cell_name

        self.progress.update(self.task, description=f"running {cell_name(planned.cell)}")
        now = time.monotonic()
        if self.position_shown_at == 0.0:
            self.position_shown_at = now
        if (
            will_launch
            and not stdout.is_terminal
            and not self.quiet
            and now - self.position_shown_at >= POSITION_EVERY_S
        ):
            self.position_shown_at = now
            print_lines(self.progress.console, [Line("skip", f"  ({position})")])

    def data(self, ready: DataReady) -> None:
        if not self.quiet:
            note = f" ({ready.note})" if ready.note else ""
            self.tell(Line("info", f"> {ready.message}{note}"))

    def forecast(self, check: ForecastCheck) -> None:
        """The forecasts a measured cell scored, a line each (--quiet keeps only problems)."""
        from torchscale.interfaces.console.forecasts import forecast_lines

        lines = forecast_lines(check, self.names.get(check.cell_id, check.cell_id))
        self.tell(*(line for line in lines if not self.quiet or line.level == "warn"))

    def check(self, text: str) -> None:
        if not self.quiet:
            self.tell(Line("info", f"> {text}"))

    def cell_done(self, result: CellResult, reused: bool) -> None:
        from torchscale.contracts.cell import Status
        from torchscale.interfaces.console.cells import cell_lines, cell_name, reused_line

        self.clock.done()
        self.running = None
        self.progress.update(self.task, advance=1, eta=self.clock.eta_after(self.index))
        self.names[result.cell.id] = cell_name(result.cell)
        self.results.append(result)
        if self.quiet and result.status in (Status.OK, Status.SKIPPED):
            return
        if self.live is not None and not self.quiet:
            from torchscale.offline.results.frame import cells_table

            self._print_live(self.live.row(result, cells_table(self.results), reused=reused))
            return
        lines = [reused_line(result)] if reused else cell_lines(result, verbose=Verbosity.level > 0)
        print_lines(self.progress.console, lines)

    def sweep_done(self, run: BenchmarkRun) -> None:
        from torchscale.interfaces.console.sweep_tables import model_tables

        self.stop()
        if self.live is not None and not self.quiet:
            self._live_done(run)
            return
        if run.sweep.table is not None:
            fitted = model_tables(run.sweep.table, stdout.width)
            for table in fitted.tables:
                stdout.print(table)
            stdout.print(escape(fitted.note), soft_wrap=False)
        _sweep_summary(run)

    def _print_live(self, lines: list[Line]) -> None:
        """The live table's lines as laid out (its rows fit the width by leaving columns
        out; cutting them again would break a row in two)."""
        for line in lines:
            self.progress.console.print(line.markup(), soft_wrap=True)

    def _live_done(self, run: BenchmarkRun) -> None:
        """Under the live table: the rows of cells no event reported (a launcher that only
        follows its own jobs: Slurm's reused or skipped cells), its legend, the tables again
        only where a base measured late changed a row's scaling, and where the results are."""
        from torchscale.interfaces.console.sweep_tables import model_tables

        assert self.live is not None
        table = run.sweep.table
        if table is not None:
            for result in run.sweep.results:
                if result.cell.id not in self.live.printed_scaling:
                    self._print_live(self.live.row(result, table))
        if self.live.header_shown:
            self._print_live(self.live.layout.legend())
        changed = self.live.changed_rows(table) if table is not None else []
        if table is not None and changed:
            stdout.print(
                f"scaling of {len(changed)} cell(s) was known only after their row (their "
                "base ran later): the tables with every figure"
            )
            fitted = model_tables(table, stdout.width)
            for drawn in fitted.tables:
                stdout.print(drawn)
        _sweep_summary(run)

    def profile_started(self, selected: Selected, note: str | None, index: int, total: int) -> None:
        """A profiled run begins: which cell, why, and where the profiles stand (profile i/N,
        elapsed, ETA: the mean run so far times the runs left), on stderr like the sweep's
        running lines, with the bar on a terminal."""
        from torchscale.interfaces.console.progress import SweepProgress, eta_text

        if self.profiles is None:
            self.profiles = SweepProgress(total, what="profile")
            self.progress.start()
            self.progress.update(self.task, visible=False)
            self.profile_task = self.progress.add_task("profiles", total=total, eta=eta_text(None))
        position = self.profiles.start(index, will_launch=True)
        if note:
            self.say(f"[cyan]note:[/] {escape(note)}")
        if not self.quiet:
            name = self.names.get(selected.cell_id, selected.cell_id)
            self.say(f"> [PROFILE] {escape(name)}: {escape(selected.reason)} ({position})")

    def profile_done(
        self, selected: Selected, profiled: ProfiledCell, index: int, total: int
    ) -> None:
        if self.profiles is None or self.profile_task is None:
            return
        self.profiles.done()
        self.progress.update(self.profile_task, advance=1, eta=self.profiles.eta_after(index))

    def warning(self, text: str) -> None:
        self.say(f"[yellow]warning:[/] {escape(text)}")

    def launcher_event(self, event: LauncherEvent) -> None:
        """Any launcher's progress, shown by the event's kind alone: what it wrote or submitted
        on stdout (then the progress bar, when it follows the jobs), how its jobs go on
        stderr (left out by --quiet unless a problem), and that it stopped following them."""
        if event.submission is not None:
            for line in event.submission.lines:
                stdout.print(escape(line))
            if event.submission.followed:
                self.progress.start()
        elif event.kind == "detached":
            stderr.print(escape(event.message))
        elif event.kind == "problem" or not self.quiet:
            self.tell(Line("info", event.line(self._cell_name(event.cell_id))))

    def _cell_name(self, cell_id: str | None) -> str | None:
        """'tiny-gpt2 b4 x2 fp32 ddp' for a cell of the plan; None for any other id."""
        from torchscale.interfaces.console.cells import cell_name

        known = {p.cell.id: p.cell for p in self.plan.cells} if self.plan else {}
        return cell_name(known[cell_id]) if cell_id in known else None

    def after(self, run: BenchmarkRun) -> None:
        """What only the finished run can say: what became of a launcher's submission (what
        Kubernetes applied, a dry run's 'nothing submitted'), the dry run's plan, the profiles'
        analyses."""
        from torchscale.interfaces.console.dry_run import plan_lines

        if run.submission is not None and run.submission.closing:
            for text in run.submission.closing:
                stdout.print(escape(text))
        elif run.dry_run:
            for line in plan_lines(run.plan, run.store, os.environ, run.reused):
                stdout.print(line.markup())
        elif run.plan.profiling.enabled and not run.sweep.stopped_early:
            _profiles_done(run)


def _sweep_summary(run: BenchmarkRun) -> None:
    """The lines after the table: where the results are, and why the sweep counts as failed."""
    from torchscale.interfaces.console.cells import sweep_time_line

    # what the run is for, before how long it took; cut to the console's width as the table
    for finding in _purpose(run):
        text = hanging(f"{wording.say(finding)}.", stdout.width)
        stdout.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)
    time_line = sweep_time_line(list(run.sweep.results))
    if time_line is not None:
        stdout.print(escape(time_line))
    stdout.print(
        f"results: {escape(str(run.store.root))} ({len(run.sweep.results)} cell(s), "
        f"{len(run.sweep.failures)} failed)"
    )
    if run.nothing_measured is not None:  # skipped cells are no failures, but only them is
        print_error_lines([run.nothing_measured])
    if run.sweep.stopped_early:
        stdout.print("[yellow]--fail-fast: stopped at the first failure[/]")


def _purpose(run: BenchmarkRun) -> list[Finding]:
    """The report's first line for this run (offline/analysis/run_purpose.py)."""
    from torchscale.offline.analysis.run_purpose import is_path_check, run_purpose

    if run.sweep.table is None:
        return []
    described = run.plan.description
    gpus = [len(r.environment.get("gpus") or []) for r in run.sweep.results if r.environment]
    path_check = is_path_check([described] if described else [])
    node_gpus = max(gpus, default=0) or None
    return run_purpose(run.sweep.table, path_check=path_check, node_gpus=node_gpus)


def _comm_started(request: CommRequest, launch: CommLaunch) -> None:
    if not Verbosity.quiet():
        stderr.print(
            f"> [COMM] {', '.join(request.ops)} on {request.ranks} rank(s) "
            f"({request.backend}), {len(launch.spec.sizes)} size(s) ..."
        )


def _comm_done(result: CommResult, stored: Path) -> None:
    from torchscale.interfaces.console.comm import comm_lines

    for line in comm_lines(result, table_width(stdout)):
        stdout.out(line, highlight=False)
    stdout.print(f"> [COMM] stored: {escape(str(stored))}")


def _max_batch_started() -> None:
    if not Verbosity.quiet():
        stderr.print("> [MEMORY] max batch search: doubling, then bisection, one process per probe")


def _probed(group: SearchGroup, batch: int, outcome: ProbeOutcome) -> None:
    if not Verbosity.quiet():
        failed = outcome.kind == "failed"
        why = f": {wording.say(outcome.reason)}" if failed and outcome.reason else ""
        name = _search_name(group.cell)
        stderr.print(f"> [MEMORY] {escape(name)}: batch {batch} {outcome.kind}{escape(why)}")


def _search_name(searched: CellIdentity | MaxBatchResult) -> str:
    """'gpt2 x2 bf16 fsdp': a max-batch search, named as its cells without batch and hash."""
    world = world_label(searched.world_size)
    return f"{searched.label} {world} {searched.precision} {searched.strategy}"


def _max_batch_done(results: list[MaxBatchResult]) -> None:
    from torchscale.contracts.wording.max_batch import reason_words

    for result in results:
        name = escape(_search_name(result))
        if result.status != "ok" or result.max_batch is None:
            stdout.print(f"> [MEMORY] {name}: no answer ({escape(reason_words(result) or '')})")
            continue
        answer = f"at least {result.max_batch}" if result.limit_reached else str(result.max_batch)
        used = (
            f", memory utilisation {pct_whole(result.memory_utilisation)}"
            if result.memory_utilisation is not None
            else ""
        )
        how = f", {result.how_probed()}" if result.how_probed() else ""
        stdout.print(
            f"> [MEMORY] {name}: max batch per device {answer}{used} "
            f"({len(result.probes)} probes, {whole_s(result.wall_s or 0)}{how})"
        )


def _profiles_done(run: BenchmarkRun) -> None:
    """Each profile's analysis; a profile that failed is reported with its cause and the
    command exits 1 (`BenchmarkRun.exit_code`): the measurements it follows are kept."""
    from torchscale.interfaces.console.cells import cell_name
    from torchscale.interfaces.console.profile import analysis_lines, traced_step_lines
    from torchscale.offline.results.directory_layout import ProfileRun

    names = {r.cell.id: cell_name(r.cell) for r in run.sweep.results}
    settings = run.plan.profiling
    if not run.profiles:
        stdout.print(
            f"> [PROFILE] no cell crossed the profiling thresholds (trigger "
            f"{settings.trigger}: stall {pct_whole(settings.stall_threshold)}, step-time CV "
            f"{cv(settings.variance_threshold)})"
        )
    for selected, profiled in run.profiles:
        if profiled.analysis is None:
            reason = profiled.analysis_error or "no analysis"
            name = names.get(selected.cell_id, selected.cell_id)
            stdout.print(
                f"[yellow]> [PROFILE] {escape(name)}: {escape(reason)} "
                f"({escape(str(profiled.directory))})[/]"
            )
            continue
        # the traced steps' shares are of their own (slower) step, not the sweep's
        traced = traced_step_lines(profiled.result, profiled.analysis)
        lines = analysis_lines(
            profiled.analysis, result=profiled.result, verbose=Verbosity.level > 0
        )
        print_lines(stdout, traced + lines)
        where = ProfileRun(profiled.directory).analysis_path
        stdout.print(f"> [PROFILE] analysis: {escape(str(where))}")
