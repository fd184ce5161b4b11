"""The context every section is built from: the sources flattened into one cells table (with the
experiment each cell came from), the typed results, the profiles, the baseline comparison and
the findings, computed once. Small helpers turn pandas values into the plain numbers the
report model holds (no NaN, no numpy scalars)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from torchscale.contracts.cell import shared_gpus
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.wording.cell_warnings import level_word
from torchscale.contracts.wording.figures import too_wide
from torchscale.contracts.wording.spell import cell_shape, count_of, format_value, ranks_of
from torchscale.interfaces.report.estimates import (
    compact,
    efficiency_kind,
    not_measurable,
    scaled_rate,
    withheld,
)
from torchscale.interfaces.report.model import Column, ReportFinding, Severity, Skipped, ValueFormat
from torchscale.interfaces.report.parts import tables
from torchscale.interfaces.report.parts.tables import records as records
from torchscale.interfaces.report.sources import ProfileEntry, Sources, UnanalysedProfile
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.regressions import (
    RUN_COLUMN,
    Comparison,
    compare,
    pool_runs,
    with_step_repeats,
)
from torchscale.offline.analysis.reliability import (
    LEVELS,
    UNSETTLED,
    on_busy_machine,
    repeat_count,
)
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.experiment import PHASE_STEP_COLUMNS, STEP_COLUMNS
from torchscale.offline.results.frame import COLUMNS, cell_row
from torchscale.offline.results.profile_figures import compile_mode
from torchscale.offline.results.sweep_progress import (
    NO_RESULT,
    CellProgress,
    SweepProgress,
    label_of_cell_id,
    sweep_progress,
)

if TYPE_CHECKING:
    from torchscale.interfaces.report.parts.usable import Usability
    from torchscale.interfaces.report.request import ReportOptions

CELL_COLUMNS = ["experiment", *COLUMNS]
SORT_COLUMNS = [
    *("experiment_order", "model_label", "precision", "strategy", "device", "batch_size"),
    *("world_size", "nodes", "cell_id"),
]
# scaling efficiency: at or above GOOD reads good, below BAD reads bad, warn between
EFFICIENCY_GOOD = 0.9
EFFICIENCY_BAD = 0.7
LIST_LIMIT = 3  # names listed in one line before "and N more"


def integer(value: Any) -> int | None:
    number = finite(value)
    return None if number is None else round(number)


def ranks(count: Any, device: Any) -> str:
    """'8 GPUs', '1 GPU', '2 CPU ranks': what a world size counts, named honestly (a CPU rank
    is one gloo process, never a "GPU")."""
    unit = {"cuda": "GPU", "cpu": "CPU rank"}.get(str(device), "rank")
    return count_of(integer(count), unit)


def rank_unit(devices: Iterable[Any]) -> tuple[str, str]:
    """Column labels for a world size and the batch of one rank: ('GPUs', 'Batch/GPU') where
    every cell ran on GPUs, ('CPU ranks', 'Batch/rank') on CPU, ('Ranks', 'Batch/rank') mixed."""
    found = {str(d) for d in devices}
    if found == {"cuda"}:
        return "GPUs", "Batch/GPU"
    return ("CPU ranks" if found == {"cpu"} else "Ranks"), "Batch/rank"


@dataclass(frozen=True)
class RankUnits:
    """Labels for what a world size counts: ('GPUs', 'Batch/GPU', 'per GPU') on GPUs,
    ('CPU ranks', 'Batch/rank', 'per rank') on CPU (a gloo process is no GPU)."""

    world: str
    batch: str
    per: str

    @property
    def one(self) -> str:
        """What one rank is called in this report's words: 'GPU', or 'rank' on CPU or mixed."""
        return "GPU" if self.world == "GPUs" else "rank"

    @property
    def many(self) -> str:
        """Ranks in this report's words: 'GPUs', 'CPU ranks', or 'ranks' where mixed."""
        return self.world if self.world in ("GPUs", "CPU ranks") else "ranks"


CELLS_DIR = ResultLayout(Path()).cells_dir.name  # cells/: one result file per cell


def unreadable_cells(skipped: Iterable[Skipped], root: Path | None = None) -> int:
    """How many of the skipped inputs are cell result files (`cells/<cell>.json`), those of the
    experiment at `root` only when given: each is a cell the report cannot count as measured,
    so it counts against the headline ("6 of 8 cells readable")."""
    count = 0
    for item in skipped:
        path = Path(item.path)
        if path.suffix != ".json" or path.parent.name != CELLS_DIR:
            continue
        if root is None or path.parent.parent == root:
            count += 1
    return count


def plural(count: int, word: str) -> str:
    """'1 comm run', '2 comm runs'."""
    return count_of(count, word)


def text(value: Any) -> str | None:
    """A non-empty string, or None (None, NaN, '')."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    out = str(value)
    return out or None


def fmt(value: Any, value_format: ValueFormat) -> str:
    """A value as text for a sentence, formatted as the renderers format it."""
    return format_value(value, value_format)


# what `Context.label` and `Context.group_name` read of a cell, and its keys
LABEL_COLUMNS = (
    *("experiment", "cell_id", "model_label", "batch_size", "world_size", "nodes"),
    *("precision", "strategy", "device", RUN_COLUMN),
)


def narrow(frame: pd.DataFrame, *more: str) -> pd.DataFrame:
    """`frame` with the columns a label needs (LABEL_COLUMNS) and `more`, those it has: for a
    section that walks groups of cells, as taking a row or a group out of the whole table
    (~130 columns of mixed types) costs a millisecond each."""
    return frame[[c for c in dict.fromkeys((*LABEL_COLUMNS, *more)) if c in frame.columns]]


def slug(value: str) -> str:
    """A fragment for chart and table ids: lower case, [a-z0-9-]."""
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "x"


T = TypeVar("T")


def present(*items: T | None) -> list[T]:
    """The items that are there, in order: a section's optional blocks (None: not shown)."""
    return [item for item in items if item is not None]


def names(items: Iterable[str], limit: int = LIST_LIMIT) -> str:
    """'a, b, c and 4 more'."""
    listed = list(dict.fromkeys(items))
    head = ", ".join(listed[:limit])
    return f"{head} and {len(listed) - limit} more" if len(listed) > limit else head


def by_reason(
    items: Iterable[tuple[str, str]], what: str, everyone: int | None = None
) -> dict[str, str]:
    """Unavailable items grouped by reason: {'<what> (<cells>)': reason}, one per reason;
    '(all N cells)' when a reason holds for all `everyone` of them."""
    grouped: dict[str, list[str]] = {}
    for label, reason in items:
        grouped.setdefault(reason, []).append(label)
    out = {}
    for reason, labels in grouped.items():
        unique = list(dict.fromkeys(labels))
        which = (
            f"all {everyone} cells" if everyone and len(unique) == everyone > 1 else names(unique)
        )
        out[f"{what} ({which})"] = reason
    return out


def efficiency_severity(
    efficiency: float | None,
    low: float | None = None,
    high: float | None = None,
    *,
    reliable: bool = True,
) -> Severity:
    """Good only for a reliable measurement at or above EFFICIENCY_GOOD that is not above
    linear beyond noise: a super-linear figure, or one above 1 without an interval, asks for a
    look (warn), and a noisy cell earns no check mark."""
    if efficiency is None:
        return "info"
    kind = efficiency_kind(efficiency, low, high)
    if kind in ("super-linear", "above linear"):
        return "warn"
    if efficiency >= EFFICIENCY_GOOD:
        return "good" if reliable else "info"
    return "warn" if efficiency >= EFFICIENCY_BAD else "bad"


def said_level(level: object) -> str | None:
    """A cells-table row's reliability level in words ('noisy'), None where none was judged."""
    return level_word(level) if isinstance(level, str) else None


def is_reliable(row: Mapping[str, Any] | pd.Series) -> bool:
    """Whether a cells-table row was judged reliable (analysis.reliability)."""
    return row.get("reliability") == "reliable"


def is_quiet(row: Mapping[str, Any] | pd.Series) -> bool:
    """Whether a cell ran with the machine to itself: no busy-machine verdict from its load
    telemetry and no other compute process on its GPUs (a cell without that telemetry cannot
    be shown busy, and counts as quiet)."""
    return not on_busy_machine(row)


def is_trusted(row: Mapping[str, Any] | pd.Series) -> bool:
    """Quiet and reliable: the only cells whose figures may carry a check mark."""
    return is_reliable(row) and is_quiet(row)


def reliability_severity(row: Mapping[str, Any] | pd.Series) -> Severity:
    """What a cell's own figures may be marked with: good only when reliable on a quiet
    machine (`is_trusted`), warn when noisy, of too few repeats or busy, info when its spread
    is unknown."""
    level = row.get("reliability")
    if level in (*UNSETTLED, "busy_machine") or (level == "reliable" and not is_quiet(row)):
        return "warn"
    return "good" if level == "reliable" else "info"


def repeats_of(row: Mapping[str, Any] | pd.Series) -> int:
    """How many repeats (or pooled runs) a row's figures rest on."""
    runs = finite(row.get(RUN_COLUMN)) or 1
    return int(runs) if runs > 1 else repeat_count(row.get("samples_per_s_repeats"))


def cost_severity(cost_pct: float | None) -> Severity:
    """A finding's severity from its share of the step."""
    if cost_pct is None:
        return "warn"
    if cost_pct >= 20:
        return "bad"
    return "warn" if cost_pct >= 5 else "info"


@dataclass(frozen=True)
class ProfileRef:
    """A profile entry with the experiment it came from and its display label."""

    experiment: str
    entry: ProfileEntry
    label: str

    @property
    def source(self) -> str:
        """The profile's key among the report's sources (findings name it by `label`)."""
        return f"profile {self.entry.name}"

    @property
    def diagnosis(self) -> Diagnosis | None:
        """The run's one diagnosis (its analysis', completed from its result.json at load):
        every section shows this one verdict for the run, never the result's beside it."""
        return self.entry.analysis.diagnosis


@dataclass
class Context:
    """What the sections are built from (read-only by convention)."""

    options: ReportOptions
    sources: Sources
    baseline: Sources | None
    cells: pd.DataFrame  # CELL_COLUMNS, all experiments, sorted
    steps: pd.DataFrame  # experiment + Experiment.steps columns
    results: dict[tuple[str, str], CellResult]  # (experiment, cell id) -> result
    profiles: list[ProfileRef]
    unanalysed: list[tuple[str, UnanalysedProfile]]
    multi: bool  # cells from more than one experiment: labels name theirs
    mixed_devices: bool
    comparison: Comparison | None = None
    baseline_cells: pd.DataFrame | None = None
    findings: list[ReportFinding] = field(default_factory=list)
    usability: Usability | None = None  # can the numbers be used (set once by build_report)
    # `result_label` of each (experiment, cell id) asked for: a label's row costs ~0.3 ms
    _result_labels: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)

    @property
    def host_first(self) -> bool:
        """The machine spoiled the numbers: fixing the host comes before tuning the workload,
        so the bottleneck findings are shown second to that."""
        return self.usability is not None and self.usability.host_first

    def nothing_measured(self) -> str:
        """Why a sweep figure is missing when no cell was measured: 'no cell finished ok', or
        where there is no sweep at all, what the sources hold instead (never "no cell
        finished ok" of a profile-only report)."""
        if len(self.cells) or self.unreadable:
            return "no cell finished ok: nothing measured"
        planned = len(self.unreached())
        if planned:  # a sweep handed on (Kubernetes) before its first result
            return f"no result yet: none of the {plural(planned, 'planned cell')} has finished"
        return (
            f"no benchmark sweep in the sources ({self.other_contents()}): "
            "`torchscale benchmark` measures it"
        )

    @property
    def ok(self) -> pd.DataFrame:
        return self.cells[self.cells["status"] == "ok"]

    @functools.cached_property
    def pooled(self) -> pd.DataFrame:
        """The ok cells, one row per cell with its runs pooled (`regressions.pool_runs`: median
        and interval over the runs, `runs` counts them): the headline and the summary pick from
        these, so that four runs read as their median, never as the best of them."""
        return pool_runs(self.ok)

    @functools.cached_property
    def measured(self) -> pd.DataFrame:
        """The ok cells with a throughput: what every figure of the report is of."""
        return self.ok[pd.to_numeric(self.ok["samples_per_s"]).notna()]

    @functools.cached_property
    def measured_pooled(self) -> pd.DataFrame:
        """`pooled`, the cells with a throughput."""
        return self.pooled[pd.to_numeric(self.pooled["samples_per_s"]).notna()]

    @property
    def models(self) -> list[str]:
        """The measured models, in name order."""
        return sorted(set(self.measured_pooled["model_label"].astype(str)))

    # the tables several sections read (`parts/tables.py`), each computed on first use

    @functools.cached_property
    def prices(self) -> pd.Series:
        """Each cell's price per GPU-hour (NaN where none is known)."""
        return tables.cell_prices(self.cells, self.options)

    @functools.cached_property
    def priced(self) -> pd.DataFrame | None:
        """The cells with their cost columns; None when no cell has a price."""
        return tables.priced_cells(self.cells, self.prices)

    @functools.cached_property
    def pooled_priced(self) -> pd.DataFrame | None:
        """The pooled cells with their cost columns; None when no cell has a price."""
        return tables.pooled_priced(self.cells, self.pooled, self.prices)

    @functools.cached_property
    def weak_scaling(self) -> pd.DataFrame:
        """The weak-scaling rows of every group measured at two GPU counts or more."""
        return tables.weak_scaling(self.pooled)

    @property
    def units(self) -> RankUnits:
        """What a world size counts in this report's cells: GPUs, CPU ranks, or ranks."""
        world, batch = rank_unit(self.cells["device"])
        return RankUnits(world, batch, "per GPU" if world == "GPUs" else "per rank")

    @property
    def unreadable(self) -> int:
        """Cell result files under --source that could not be read (left out of `cells`)."""
        return unreadable_cells(self.sources.skipped)

    def other_contents(self) -> str:
        """What the sources hold besides a sweep, in words ('1 profiled run and 2 comm runs'):
        said where there is no sweep, so a comm-only source is never called 'profiles'."""
        experiments = self.sources.experiments
        counts = [
            (sum(len(s.profiles) + len(s.unanalysed) for s in experiments), "profiled run"),
            (sum(len(s.comm) for s in experiments), "comm run"),
        ]
        parts = [plural(n, word) for n, word in counts if n]
        return " and ".join(parts) or "nothing else readable"

    @functools.cached_property
    def progress(self) -> list[tuple[str, SweepProgress]]:
        """Each experiment's sweep: every planned cell with its state (offline/results)."""
        return [
            (s.name, sweep_progress(s.experiment, s.plan))
            for s in self.sources.experiments
            if s.experiment is not None
        ]

    def unreached(self) -> list[tuple[str, CellProgress]]:
        """Planned cells with no result: the one a stop cut short, those never reached, those
        the plan skipped by design and wrote no result for."""
        kept = {
            (s.name, r.cell_id)
            for s in self.sources.experiments
            if s.experiment is not None
            for r in s.experiment.results
        }
        return [
            (name, cell)
            for name, progress in self.progress
            for cell in progress.cells
            if cell.state in (*NO_RESULT, "skipped") and (name, cell.id) not in kept
        ]

    @property
    def comm_runs(self) -> list[tuple[str, CommResult]]:
        """Every comm run read, with the experiment it came from."""
        return [(s.name, run) for s in self.sources.experiments for run in s.comm]

    def result(self, row: Mapping[str, Any] | pd.Series) -> CellResult:
        return self.results[(str(row["experiment"]), str(row["cell_id"]))]

    def label(
        self, row: Mapping[str, Any] | pd.Series, *, model: bool = True, strategy: bool = True
    ) -> str:
        """'tiny-mlp b8 x2 fp32 ddp' (+ nodes, device, [experiment] where they tell cells
        apart); without the strategy for a group of layouts."""
        parts = [str(row["model_label"])] if model else []
        parts.append(cell_shape(row["batch_size"], row["world_size"]))
        nodes = integer(row.get("nodes"))
        if nodes and nodes > 1:
            parts.append(f"({nodes} nodes)")
        if shared := shared_gpus(row.get("ranks_per_gpu")):
            parts.append(shared)
        parts.append(str(row["precision"]))
        if strategy:
            parts.append(str(row["strategy"]))
        if self.mixed_devices:
            parts.append(str(row["device"]))
        runs = _run_count(row.get(RUN_COLUMN))
        if runs is not None and runs > 1:
            parts.append(f"[median of {int(runs)} runs]")
        elif self.multi and row.get("experiment") is not None:
            parts.append(f"[{row['experiment']}]")
        return " ".join(parts)

    def group_name(self, row: Mapping[str, Any] | pd.Series, batch: str | None = None) -> str:
        """'b8 fp32 ddp' (+ device, [experiment] where they tell groups apart): a scaling
        group of one model; `batch` replaces 'b8' (e.g. 'global batch 32')."""
        parts = [batch or f"b{row['batch_size']}", str(row["precision"]), str(row["strategy"])]
        if self.mixed_devices:
            parts.append(str(row["device"]))
        if self.multi and row.get("experiment") is not None:
            parts.append(f"[{row['experiment']}]")
        return " ".join(parts)

    def result_label(self, experiment: str, result: CellResult) -> str:
        """`label` of a result read on its own (a profiled run; the base a finding
        names, once per cell it is the base of: remembered, as its row costs ~0.3 ms)."""
        labels = self._result_labels
        key = (experiment, result.cell.id)
        if key not in labels:
            labels[key] = self.label({**cell_row(result), "experiment": experiment})
        return labels[key]


def run_label(experiment: str, run: CommResult, multi: bool) -> str:
    """'nccl-tests: all_reduce_perf.txt' or 'torchscale 8x nccl', with the experiment when
    several are reported."""
    if run.source == "nccl-tests":
        name = (run.imported_from or run.id).rsplit("/", 1)[-1]
        label = f"nccl-tests {name}"
    else:
        label = f"torchscale {ranks_of(run.world_size)} {run.backend} {run.dtype}"
    return f"{experiment}: {label}" if multi else label


def concat_cells(sources: Sources) -> pd.DataFrame:
    """Every experiment's cells table, with `experiment`, in a stable order."""
    frames = []
    for order, source in enumerate(sources.experiments):
        if source.experiment is None:
            continue
        frame = source.experiment.cells.copy()
        frame.insert(0, "experiment", source.name)
        frame["experiment_order"] = order
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=CELL_COLUMNS)
    cells = pd.concat(frames, ignore_index=True)
    cells = cells.sort_values(SORT_COLUMNS, kind="stable").reset_index(drop=True)
    return cells[CELL_COLUMNS]


def _concat_steps(sources: Sources) -> pd.DataFrame:
    frames = []
    for source in sources.experiments:
        if source.experiment is None or source.experiment.steps.empty:
            continue
        frame = source.experiment.steps.copy()
        frame.insert(0, "experiment", source.name)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["experiment", *STEP_COLUMNS, *PHASE_STEP_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def make_context(
    sources: Sources, options: ReportOptions, baseline: Sources | None = None
) -> Context:
    """Flatten the sources once; compare with the baseline when there is one."""
    cells = concat_cells(sources)
    results = {
        (source.name, result.cell.id): result
        for source in sources.experiments
        if source.experiment is not None
        for result in source.experiment.results
    }
    profile_devices = {
        e.result.cell.device for s in sources.experiments for e in s.profiles if e.result
    }
    ctx = Context(
        options=options,
        sources=sources,
        baseline=baseline,
        cells=cells,
        steps=_concat_steps(sources),
        results=results,
        profiles=[],
        unanalysed=[(s.name, u) for s in sources.experiments for u in s.unanalysed],
        multi=sum(s.experiment is not None for s in sources.experiments) > 1,
        mixed_devices=len(set(cells["device"]) | profile_devices) > 1,
    )
    for source in sources.experiments:
        for entry in source.profiles:
            label = (
                f"{ctx.result_label(source.name, entry.result)} (profiled run, "
                f"{compile_mode(entry.result)})"
                if entry.result is not None
                else f"profile {label_of_cell_id(entry.name)}"
            )
            ctx.profiles.append(ProfileRef(source.name, entry, label))
    if baseline is not None:
        ctx.baseline_cells = concat_cells(baseline)
        ctx.comparison = compare(
            with_step_repeats(cells, ctx.steps),
            with_step_repeats(ctx.baseline_cells, _concat_steps(baseline)),
        )
    return ctx


def _run_count(value: Any) -> float | None:
    """How many runs a row pools: a pooled cell's `runs`, or the current side of a baseline
    pair's '4 vs 4'."""
    if isinstance(value, str):
        sides = value.split(" vs ")
        return finite(sides[-1]) if len(sides) == 2 else None
    return finite(value)


def col(key: str, label: str, value_format: ValueFormat = "text") -> Column:
    """A table column: text left-aligned, numbers right-aligned."""
    return Column(
        key=key,
        label=label,
        format=value_format,
        align="left" if value_format == "text" else "right",
    )


def throughput_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's samples/s with its 95 % interval, as a table row carries them."""
    return {
        "samples_per_s": finite(row["samples_per_s"]),
        "samples_per_s_low": finite(row["samples_per_s_low"]),
        "samples_per_s_high": finite(row["samples_per_s_high"]),
        "samples_per_s_text": throughput_text(row),
    }


def rate_shown(row: Mapping[str, Any] | pd.Series, key: str) -> float | str | None:
    """`rate_text_value` for a table cell, or 'not measurable' where the samples/s it is in
    proportion to is (its interval wider than itself): no tokens/s digits beside a samples/s
    the same row calls not measurable."""
    value = rate_text_value(row, key)
    if value is not None and too_wide(*interval(row, "samples_per_s")):
        return not_measurable(None)
    return value


def rate_text_value(row: Mapping[str, Any] | pd.Series, key: str) -> float | None:
    """`row[key]`, a rate in proportion to the cell's samples/s (tokens/s, samples/s per device,
    samples/s itself), cut to the digits the samples/s interval supports (`estimates.scaled_rate`):
    a 'readable' column writes it ('81,500', never '81,537.6' beside '1,270 ±110')."""
    return scaled_rate(finite(row.get(key)), *interval(row, "samples_per_s"))


def repeat_fields(row: Mapping[str, Any], result: CellResult) -> dict[str, Any]:
    """The run-to-run range of a cell's samples/s (min, max of its repeats' global samples/s)
    and its spread, as a table row carries them."""
    repeats = result.throughput.repeats if result.throughput is not None else []
    low, high = (min(repeats), max(repeats)) if repeats else (None, None)
    spread: float | str | None = None  # 'spread unknown' with one repeat, never a 0.0 %
    if finite(row.get("samples_per_s")) is not None:
        one = level_word("spread_unknown")
        spread = finite(row.get("throughput_spread")) if _repeats(row) >= 2 else one
    return {"low": low, "high": high, "spread": spread}


# ---------------------------------------------------------------- figures with their intervals


def _repeats(row: Mapping[str, Any] | pd.Series) -> int:
    return repeat_count(row.get("samples_per_s_repeats"))


Interval = tuple[float | None, float | None, float | None]


def interval(row: Mapping[str, Any] | pd.Series, name: str, unit: str = "") -> Interval:
    """(value, low, high) of a figure stored as the columns `name`, `name_low` and `name_high`
    (each followed by `unit`, e.g. '_s'), None where missing or not finite."""
    value, low, high = (row.get(f"{name}{end}{unit}") for end in ("", "_low", "_high"))
    return finite(value), finite(low), finite(high)


def throughput_text(row: Mapping[str, Any] | pd.Series) -> str | None:
    """A cell's samples/s with its 95 % interval ('spread unknown' with one repeat), or 'not
    measurable (2 repeats)' and no number where the interval is wider than the figure
    (`estimates.withheld`, the live table's rule too)."""
    figure = interval(row, "samples_per_s")
    return withheld(*figure, repeats_of(row)) or compact(
        *figure, "rate", spread_unknown=_repeats(row) < 2
    )


def first_screen_throughput(row: Mapping[str, Any] | pd.Series) -> str:
    """A throughput for the first screen (headline, cards, best configuration)."""
    return throughput_text(row) or "-"


def step_text(row: Mapping[str, Any] | pd.Series, percentile: str) -> str | None:
    """Step time p50/p95/p99 ('p50') with its interval (the value alone where none was stored)."""
    return compact(*interval(row, f"step_{percentile}", "_s"), "seconds")


def mfu_text(row: Mapping[str, Any] | pd.Series) -> str | None:
    """MFU with its interval (it scales with throughput; the value alone where none was stored)."""
    return compact(*interval(row, "mfu"), "ratio_pct")


def first_screen_mfu(row: Mapping[str, Any] | pd.Series) -> str | None:
    """MFU for the first screen: `mfu_text`, but the throughput's words ('not measurable (2
    repeats)') where `first_screen_throughput` gives them: MFU is that throughput scaled (one
    estimator, docs/methodology.md), so it is measurable exactly where the throughput is."""
    text = mfu_text(row)
    if text is not None and too_wide(*interval(row, "samples_per_s")):
        return not_measurable(repeats_of(row))
    return text


def reliability_counts(cells: pd.DataFrame) -> dict[str, list[int]]:
    """Row positions of the measured cells by reliability level (in LEVELS order)."""
    levels = list(cells["reliability"]) if "reliability" in cells.columns else []
    return {level: [i for i, v in enumerate(levels) if v == level] for level in LEVELS}
