"""The report model: what a report says, independent of how it is drawn (docs/reporting.md, "How
a report is made"). Every number is computed before rendering, so every format shows the same;
values in tables and charts are raw numbers (seconds, bytes, ratios) with the unit in the column
or axis, and renderers choose the formatting. The JSON format is this model as it is."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.spell import ValueFormat as ValueFormat

# what each version added: docs/reporting.md, "Report schema versions"
REPORT_SCHEMA_VERSION: Literal[10] = 10

Severity = Literal["info", "good", "warn", "bad"]
# a section's id is its module's name under report/sections/ (summary, scaling, ..., glossary):
# the section list in report/build.py says which there are, so adding one edits no model
SectionId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Text(_Model):
    """A paragraph of plain text (never markup: every renderer escapes it)."""

    type: Literal["text"] = "text"
    text: str
    severity: Severity = "info"
    preformatted: bool = Field(
        default=False, description="keep line breaks and indentation (a config file)"
    )


class KeyFigure(_Model):
    label: str
    value: float | str | None = Field(description="None: unavailable (see note)")
    format: ValueFormat = "text"
    note: str | None = Field(default=None, description="what it is, or why it is unavailable")
    severity: Severity = "info"


MAX_CARDS = 4  # figure cards on the first screen; the rest are listed further down


class KeyFigures(_Model):
    """Figures as cards (`cards`: the first screen, at most MAX_CARDS) or, for the figures
    beyond them (`more`), one short line each further down the section."""

    type: Literal["key_figures"] = "key_figures"
    figures: list[KeyFigure]
    role: Literal["cards", "more"] = "cards"


class Column(_Model):
    key: str
    label: str = Field(description="the heading, in plain words")
    format: ValueFormat = "text"
    align: Literal["left", "right"] = "right"
    term: str | None = Field(
        default=None,
        description="the technical term behind a plain heading, with its meaning: the HTML's "
        "tooltip (the table's note says it in every format)",
    )


class Table(_Model):
    """Rows are dicts keyed by column key; a missing or None value renders as '-'. A row may
    carry `_severity` (Severity) to highlight it."""

    type: Literal["table"] = "table"
    id: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    note: str | None = None


class Series(_Model):
    """One named series. For line/bar/scatter: x and y of equal length (None = gap); `low` and
    `high` (same length) draw an interval (run-to-run spread). For box: `values` per x label
    (`x[i]` -> distribution `values[i]`)."""

    name: str
    x: list[float | int | str] = Field(default_factory=list)
    y: list[float | None] = Field(default_factory=list)
    low: list[float | None] | None = None
    high: list[float | None] | None = None
    values: list[list[float]] | None = None
    style: Literal["solid", "dashed", "dotted"] = "solid"
    interval: Literal["bars", "band"] = Field(
        default="bars",
        description="how `low`/`high` are drawn on a line: 'bars', an interval bar at each "
        "point (a measurement's interval is its point's alone); 'band', a shaded band along "
        "the line (a forecast's interval is a continuous band along its curve)",
    )
    reference_for: str | None = Field(
        default=None,
        description="name of the series this one is the reference of (its ideal line): drawn "
        "in that series' colour, shown and hidden with it, one legend entry for all of them",
    )
    severity: Severity | None = Field(
        default=None,
        description="a series that stands for a verdict (regressions, improvements) is drawn "
        "in that verdict's colour, the same in every format; None: a palette colour",
    )
    model: str | None = Field(
        default=None,
        description="the model the series measures, where a chart mixes models: a chart "
        "capped to fewer series keeps at least one series of each model",
    )


class Heatmap(_Model):
    """z[i][j] is the value at y_labels[i], x_labels[j] (None = no data)."""

    x_labels: list[str]
    y_labels: list[str]
    z: list[list[float | None]]
    z_label: str
    higher_is: Literal["better", "worse"] | None = Field(
        default=None,
        description="what a high value means: picks one colour scale for every format "
        "(high and worse: dark red; high and better, or None: dark blue)",
    )


class Band(_Model):
    """A y interval drawn as a light band behind the data (the interval that counts as noise)."""

    low: float
    high: float
    label: str = Field(description="its legend entry: what falling inside it means")


class Chart(_Model):
    type: Literal["chart"] = "chart"
    id: str = Field(description="unique in the report; used as the HTML element id")
    title: str
    kind: Literal["line", "bar", "stacked_bar", "box", "heatmap"]
    x_label: str
    y_label: str
    x_format: ValueFormat = "text"
    y_format: ValueFormat = "float"
    x_log2: bool = Field(default=False, description="GPU counts: 1, 2, 4, 8 evenly spaced")
    y_log: bool = Field(
        default=False, description="log y (bandwidth over sizes); values <= 0 are not drawn"
    )
    series: list[Series] = Field(default_factory=list)
    heatmap: Heatmap | None = None
    bands: list[Band] = Field(default_factory=list)
    note: str | None = None
    absent: list[str] = Field(
        default_factory=list,
        description="series with nothing to draw and why ('fsdp: not split'): said in the "
        "chart itself, so a missing series is never read as a series that was not run",
    )
    category_models: dict[str, str] = Field(
        default_factory=dict,
        description="the model each x category measures, where the categories mix models: "
        "a chart capped to fewer categories keeps some of every model",
    )

    def absent_text(self) -> str:
        """'not drawn: fsdp: not split': what a format that names the chart without drawing
        it (Markdown, the terminal) says beside it; '' when every series is drawn."""
        return f"not drawn: {'; '.join(self.absent)}" if self.absent else ""


class ReportFinding(_Model):
    title: str
    cost_pct: float | None = Field(description="share of cycle or step time, %")
    source: str = Field(description="where it comes from: a cell id or a profile name")
    evidence: list[str] = Field(default_factory=list)
    recommendation: str | None = None
    severity: Severity = "warn"
    caveat: str | None = Field(
        default=None,
        description="its run's busy-machine caveat (the diagnosis' `caveat`): shown with it",
    )
    group: str | None = Field(
        default=None,
        description="what makes findings of different runs one: its code and the figures its "
        "words are made of, never its run's name (None: its title)",
    )


class Findings(_Model):
    type: Literal["findings"] = "findings"
    findings: list[ReportFinding]
    note: str | None = Field(default=None, description="e.g. how many a renderer left out")


class Unavailable(_Model):
    """What this section cannot show, and why (never a silent gap)."""

    type: Literal["unavailable"] = "unavailable"
    items: dict[str, str] = Field(description="what -> why")


Block = Annotated[
    Text | KeyFigures | Table | Chart | Findings | Unavailable, Field(discriminator="type")
]


Usable = Literal["yes", "with care", "no", "nothing to judge"]


class Decision(_Model):
    """What the first screen of every format says under the headline sentence: the
    headline says whether the numbers can be used and, if not, why and what to do; then one
    plain line per model (over every batch size it ran), the best configuration only where it
    leads the next beyond noise ("no clear best (within noise)" otherwise), and what to fix or
    buy, the host first when the host is what spoiled the numbers."""

    usable: Usable = Field(
        description="yes; with care (some cells failed, noisy or on a busy machine); no (the "
        "machine was busy or every cell noisy: rerun first); nothing to judge"
    )
    models: list[Text] = Field(default_factory=list, description="one line per model (or run)")
    best: Text | None = Field(
        default=None, description="the best configuration, or 'no clear best (within noise)'"
    )
    baseline: Text | None = Field(default=None, description="the verdict against --baseline")
    actions: list[Text] = Field(
        default_factory=list, description="what to fix or buy, most urgent first"
    )
    calls: list[Finding] = Field(
        default_factory=list,
        description="each model's buy-or-fix call, where the figures carry one "
        "(docs/reporting.md, 'The decision line'), worded when shown",
    )

    # every format's heading over `by_model()`
    by_model_heading: ClassVar[str] = "By model"

    def conclusions(self) -> list[Text]:
        """The lines right under the headline, what a stakeholder acts on: the verdict against
        the baseline first (what a pull request's reader asks), then the buy-or-fix calls.
        With the headline they fit the first screen's word bound (docs/reporting.md)."""
        first = [self.baseline] if self.baseline is not None else []
        said = [
            Text(text=wording.say(c), severity=call_severity(c)) for c in alike_once(self.calls)
        ]
        return [*first, *said]

    def by_model(self) -> list[Text]:
        """What carries the conclusions, under its own heading after what to do: a line per
        model, then the best configuration."""
        return [*self.models, *([self.best] if self.best is not None else [])]

    def in_reading_order(self) -> list[Text]:
        """Every line of the decision as each format shows them: conclusions, what to do, by
        model (the glossary explains the words of all of them)."""
        return [*self.conclusions(), *self.actions, *self.by_model()]


def alike_once(calls: list[Finding]) -> list[Finding]:
    """Models given the same call on the same figures, as one call naming them all ('tiny-gpt2
    and tiny-mlp: fix the host first ...'): the first screen has no room for a line each."""
    grouped: dict[str, list[Finding]] = {}
    for call in calls:
        grouped.setdefault(call.key_without("model"), []).append(call)
    said = []
    for alike in grouped.values():
        models = [str(c.figure("model")) for c in alike]
        who = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
        said.append(alike[0].model_copy(update={"figures": {**alike[0].figures, "model": who}}))
    return said


def call_severity(call: Finding) -> Severity:
    """A call to fix something is a warning; a call to buy, or none, is information (a green
    mark stays with figures of quiet, reliable cells)."""
    return "warn" if call.code.startswith("decision.fix_") else "info"


class Section(_Model):
    id: SectionId
    title: str
    blocks: list[Block] = Field(default_factory=list)


class Source(_Model):
    """One experiment read into the report."""

    name: str
    path: str
    cells: int
    ok: int
    failed: int
    skipped: int
    profiles: int
    schema_versions: list[int]
    role: Literal["current", "baseline"] = Field(
        default="current", description="baseline: read only to compare against (--baseline)"
    )
    unreadable: int = Field(
        default=0, description="cell result files left out as unreadable (see Report.skipped)"
    )
    comm_runs: int = Field(default=0, description="collective benchmark runs (comm/<run>.json)")
    unfinished: int = Field(
        default=0, description="planned cells with no result: a stopped sweep's"
    )

    def contents(self) -> str:
        """What the source holds, in words: '6 of 8 cells readable (4 ok, 2 failed), 1
        profiled run', '2 comm runs' (only what is there: a comm-only source is no profile)."""
        parts = []
        files = self.cells + self.unreadable
        if files:
            by_status = (
                (self.ok, "ok"),
                (self.failed, "failed"),
                (self.skipped, "skipped by design"),
            )
            counts = [f"{n} {what}" for n, what in by_status if n]
            head = f"{self.cells} cell{_s(self.cells)}"
            if self.unreadable:
                head = f"{self.cells} of {files} cells readable"
            parts.append(head + (f" ({', '.join(counts)})" if counts else ""))
        if self.unfinished:
            parts.append(f"{self.unfinished} planned with no result")
        if self.profiles:
            parts.append(f"{self.profiles} profiled run{_s(self.profiles)}")
        if self.comm_runs:
            parts.append(f"{self.comm_runs} comm run{_s(self.comm_runs)}")
        return ", ".join(parts) or "nothing readable"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


class Skipped(_Model):
    path: str
    reason: str


class Report(_Model):
    kind: Literal["torchscale.report"] = "torchscale.report"
    schema_version: Literal[10] = REPORT_SCHEMA_VERSION
    torchscale_version: str
    title: str
    generated_at: str = Field(description="ISO 8601, UTC")
    headline: Text | None = Field(
        default=None,
        description="the one-sentence verdict, decision first: whether these numbers can be "
        "used and, if not, why and what to do (a profile-only report: its run's diagnosis)",
    )
    decision: Decision | None = Field(
        default=None, description="the lines under the headline: models, best, what to do"
    )
    hardware: str | None = Field(
        default=None, description="what ran, in words ('8 x H100 80GB HBM3'); None: not recorded"
    )
    measured: str | None = Field(
        default=None, description="the dates the runs started, UTC ('2026-11-20 to 2026-11-22')"
    )
    description: str | None = Field(default=None, description="the configs' description")
    html_report: str | None = Field(
        default=None, description="where the HTML report of these results is (path or URL)"
    )
    source_path: str | None = Field(default=None, description="the --source path read")
    sources: list[Source]
    sections: list[Section]
    regressions: int | None = Field(
        default=None,
        description="baseline regressions by the stated rule (docs/regressions.md); null "
        "without --baseline (not compared) and when no matched cell could be judged (see "
        "`not_judged`): never a 0 that reads as a pass",
    )
    not_judged: int | None = Field(
        default=None,
        description="matched cells the rule could not judge (too few repeats, busy machine): "
        "neither regressions nor passes; null without --baseline",
    )
    skipped: list[Skipped] = Field(
        default_factory=list, description="inputs left out of the report, with why"
    )

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)

    def current_sources(self) -> list[Source]:
        return [s for s in self.sources if s.role == "current"]

    def baseline_sources(self) -> list[Source]:
        """Empty when no baseline was given (then "no regression" means "not compared")."""
        return [s for s in self.sources if s.role == "baseline"]

    def charts(self) -> list[Chart]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Chart)]
