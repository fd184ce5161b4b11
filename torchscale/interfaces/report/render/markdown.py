"""Markdown renderer: what fits a pull-request comment, cut to `MAX_CHARS` (what it holds:
docs/reporting.md, "Formats": "Markdown"). Every string from the model goes through `escape`
(`|`, backslashes, `<`, `>`, `&`, inline Markdown punctuation; line breaks become spaces), so a
model name cannot inject HTML or break a table; prose keeps its code spans (`inline`), which
Markdown shows literally."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any
from urllib.parse import quote, urlsplit

from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.formatting import code_spans, severity_prefix
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Decision,
    Findings,
    KeyFigures,
    Report,
    ReportFinding,
    Section,
    Table,
    Text,
)

MAX_ROWS = 20  # per table: a PR comment is read, not searched
MAX_FINDINGS = 10  # the costliest
MAX_SOURCES = 10
MAX_SKIPPED = 5
MAX_CHARS = 60_000  # GitHub's comment limit is 65,536 characters; room for a bot's own text
BASELINE_TABLE = "baseline-largest"  # the largest changes, judged or not, with intervals
HTML_COMMAND = "torchscale report -s {source} -f html"  # the results directory's name
_NUMBERED = re.compile(r"^\d{1,9}[.)](?=\s|$)")
# a run of `_` opens or closes emphasis only at a word boundary: escape those runs, leave
# snake_case and tiny-mlp__b8__w2 ids (inert inside a word) readable
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_])")
# Markdown's punctuation backslash-escaped, HTML's as entities, a line break as a space
_ESCAPES = str.maketrans(
    {c: "\\" + c for c in "\\|`*[]~"}
    | {"<": "&lt;", ">": "&gt;", "&": "&amp;", "\r": " ", "\n": " "}
)


def escape(text: str) -> str:
    """A user string as literal Markdown text on one line (safe inside a table cell)."""
    escaped = text.translate(_ESCAPES)
    return _EMPHASIS_UNDERSCORE.sub(lambda run: "\\_" * len(run.group()), escaped)


def inline(text: str) -> str:
    """Prose with its code spans kept as Markdown code spans (`torchscale benchmark
    --resume` reads as code on GitHub) and everything else escaped. A code span shows its
    content literally (no markup, no HTML), so only line breaks are replaced there."""
    return "".join(
        "`" + part.replace("\r", " ").replace("\n", " ") + "`" if code else escape(part)
        for part, code in code_spans(text)
    )


def _paragraph(text: str) -> str:
    """Escaped text that cannot start a heading, list, quote or rule at line start."""
    body = inline(text)
    numbered = _NUMBERED.match(body)
    if numbered:
        return body[: numbered.end() - 1] + "\\" + body[numbered.end() - 1 :]
    return "\\" + body if body[:1] in {"#", "-", "+", "=", "!"} else body


def _preformatted(text: str) -> str:
    """Lines and indentation kept without a code block (a code block shows its text raw, so
    `<` from the model would stay in the Markdown, and a line of backticks in the text would
    close it): each line escaped, its leading spaces as no-break spaces, a hard line break
    (`\\` at the end) after every line."""
    lines = []
    for line in text.splitlines():
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        lines.append("&nbsp;" * indent + escape(body) if indent else _paragraph(body))
    return "\\\n".join(lines)


def _value(value: Any, fmt: Any) -> str:
    return escape(format_value(value, fmt))


def _header(report: Report) -> list[str]:
    """Title, the verdict, what ran when, the sources and what was left out."""
    lines = [f"# {escape(report.title)}", ""]
    if report.headline is not None:
        mark = severity_prefix(report.headline.severity)
        lines += [f"{mark}**{inline(report.headline.text)}**", ""]
    if report.decision is not None:
        lines += _decision(report.decision)
    facts = [
        f"{label}: {escape(value)}"
        for label, value in (
            ("Hardware", report.hardware),
            ("Measured", report.measured),
            ("Description", report.description),
        )
        if value
    ]
    meta = (
        f"Generated {escape(report.generated_at)} by torchscale {escape(report.torchscale_version)}"
    )
    if report.regressions:
        meta += f" · ✖ {report.regressions} regression(s) by the stated rule"
    if report.baseline_sources() and report.regressions is None:
        meta += " · ⚠ nothing judged against the baseline"
    elif report.not_judged:
        meta += f" · ⚠ {report.not_judged} cell(s) not judged against the baseline"
    lines += [" · ".join([*facts, meta]), ""]
    lines += _sources(report)
    if report.skipped:
        lines += [f"### Skipped inputs ({len(report.skipped)}, left out of every figure)", ""]
        shown = report.skipped[:MAX_SKIPPED]
        lines += [f"- {escape(item.path)}: {escape(item.reason)}" for item in shown]
        if len(report.skipped) > MAX_SKIPPED:
            lines.append(f"- ... {len(report.skipped) - MAX_SKIPPED} more in the HTML report")
        lines.append("")
    return lines


def _decision(decision: Decision) -> list[str]:
    """The conclusions under the verdict, what to do, numbered, then what carries them (a
    line per model, the best configuration) under its own heading."""
    lines = _bullets(decision.conclusions())
    if decision.actions:
        lines += ["### What to do", ""]
        lines += [f"{n}. {inline(t.text)}" for n, t in enumerate(decision.actions, 1)]
        lines.append("")
    detail = _bullets(decision.by_model())
    return lines + ([f"### {decision.by_model_heading}", "", *detail] if detail else [])


def _bullets(texts: list[Text]) -> list[str]:
    lines = [f"- {severity_prefix(t.severity)}{inline(t.text)}" for t in texts]
    return [*lines, ""] if lines else []


def _sources(report: Report) -> list[str]:
    if not report.sources:
        return []
    # a source's path is on the machine that made the report: its name says which it is
    lines = ["### Sources", ""]
    for source in report.sources[:MAX_SOURCES]:
        role = "baseline: " if source.role == "baseline" else ""
        lines.append(f"- {role}{escape(source.name)}: {escape(source.contents())}")
    if len(report.sources) > MAX_SOURCES:
        lines.append(f"- ... {len(report.sources) - MAX_SOURCES} more in the HTML report")
    return [*lines, ""]


def _link_target(target: str) -> str:
    """A link destination that cannot break out of `(...)` or inject: an http(s) URL or a
    path, percent-encoded (spaces, parentheses, `<`, `>`, quotes)."""
    scheme = urlsplit(target).scheme.lower()
    if scheme in ("http", "https"):
        return quote(target, safe=":/?#[]@!$&'*+,;=%-._~")
    return quote(target, safe="/%-._~")


def _full_report(report: Report) -> list[str]:
    """Where the charts and every table are: a link where the HTML report has a URL
    (`--html-link`), since a PR comment resolves nothing else; a file is named by its name
    alone (its path is on the machine that made it, and a relative link breaks once the
    comment is posted); else how to make it, from the results directory's name."""
    if report.html_report and urlsplit(report.html_report).scheme.lower() in ("http", "https"):
        target = _link_target(report.html_report)
        return [f"Full report (charts, every table): [{escape(report.html_report)}]({target})"]
    if report.html_report:
        name = PurePath(report.html_report).name
        return [
            f"Full report (charts, every table): {escape(name)}, beside the results "
            "(publish it and pass `--html-link URL` to link it here)"
        ]
    source = PurePath(report.source_path).name if report.source_path else "RESULTS"
    command = HTML_COMMAND.format(source=source or "RESULTS")
    return [f"Full report (charts, every table): run {escape(command)}"]


def _key_figures(block: KeyFigures) -> list[str]:
    return [
        f"- {severity_prefix(f.severity)}{escape(f.label)}: {_value(f.value, f.format)}"
        + (f" ({inline(f.note)})" if f.note else "")
        for f in block.figures
    ]


def _table(block: Table) -> list[str]:
    header = "| " + " | ".join(escape(c.label) for c in block.columns) + " |"
    rule = "|" + "|".join(":---" if c.align == "left" else "---:" for c in block.columns) + "|"
    lines = [f"### {escape(block.title)}", "", header, rule]
    for row in block.rows[:MAX_ROWS]:
        severity = row.get("_severity") or "info"
        cells = [_value(row.get(c.key), c.format) for c in block.columns]
        # the row's mark says its severity; bold is kept for the decision (a PR comment where
        # every cell of a row is bold reads as shouting, and hides the one that matters)
        if cells:
            cells[0] = severity_prefix(severity) + cells[0]
        lines.append("| " + " | ".join(cells) + " |")
    if not block.rows:
        lines.append("| " + " | ".join(["-"] * len(block.columns)) + " |")
    return lines + _tail(len(block.rows) - MAX_ROWS, "rows", block.note)


def _tail(hidden: int, what: str, note: str | None) -> list[str]:
    """How many `what` a list left out (where it did), and the block's note."""
    lines = ["", f"... {hidden} more {what} in the HTML report"] if hidden > 0 else []
    return lines + (["", f"_{inline(note)}_"] if note else [])


def _finding(finding: ReportFinding) -> list[str]:
    cost = ""
    if finding.cost_pct is not None:
        cost = f" ({_value(finding.cost_pct, 'pct')} of cycle/step time)"
    lines = [
        f"- {severity_prefix(finding.severity)}{inline(finding.title)}{cost}, "
        f"source: {escape(finding.source)}"
    ]
    if finding.caveat:
        lines.append(f"  - {severity_prefix('warn')}caveat: {inline(finding.caveat)}")
    lines += [f"  - evidence: {inline(item)}" for item in finding.evidence]
    if finding.recommendation:
        lines.append(f"  - recommendation: {inline(finding.recommendation)}")
    return lines


def _block(block: Block) -> list[str]:
    if isinstance(block, Text) and block.preformatted:
        return [_preformatted(block.text)]
    if isinstance(block, Text):
        return [severity_prefix(block.severity) + _paragraph(block.text)]
    if isinstance(block, KeyFigures):
        return _key_figures(block)
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Chart):
        absent = f"; {escape(block.absent_text())}" if block.absent else ""
        return [f"- Chart: {escape(block.title)} (see the HTML/PDF report){absent}"]
    if isinstance(block, Findings):
        lines = ["### Findings", ""]
        for finding in block.findings[:MAX_FINDINGS]:
            lines += _finding(finding)
        return lines + _tail(len(block.findings) - MAX_FINDINGS, "findings", block.note)
    lines = ["### Unavailable", ""]
    lines += [f"- {escape(what)}: {inline(why)}" for what, why in block.items.items()]
    return lines


def _section(section: Section, blocks: list[Block] | None = None) -> list[str]:
    lines = [f"## {escape(section.title)}"]
    previous: Block | None = None
    for block in section.blocks if blocks is None else blocks:
        # consecutive charts read as one list; any other block is its own paragraph
        if not (isinstance(block, Chart) and isinstance(previous, Chart)):
            lines.append("")
        lines += _block(block)
        previous = block
    return [*lines, ""]


def _baseline(report: Report) -> list[str]:
    """The cells that changed most against the baseline, judged or not (regressions first),
    each change with its interval and verdict: the rest of the comparison is in the HTML
    report."""
    section = report.section("baseline")
    if section is None:
        return []
    for block in section.blocks:
        if isinstance(block, Table) and block.id == BASELINE_TABLE and block.rows:
            return _section(section, [block])
    return []


def _fit(lines: list[str], report: Report) -> str:
    """The text, cut at a line to `MAX_CHARS` characters when it is longer (only an outsized
    string in the model can make it so), saying so."""
    text = "\n".join(lines) + "\n"
    if len(text) <= MAX_CHARS:
        return text
    tail = ["", "... cut to fit a pull-request comment.", "", *_full_report(report)]
    room = MAX_CHARS - len("\n".join(tail)) - 2
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    if not kept:  # one line longer than the whole comment
        kept = [lines[0][: max(0, room - 1)] + "…"]
    return "\n".join([*kept, *tail]) + "\n"


def render(report: Report, full: bool = False) -> bytes:
    """The report's summary as GitHub-flavoured Markdown, UTF-8, at most `MAX_CHARS`
    characters; with `full`, every section (each table still cut to `MAX_ROWS`)."""
    lines = _header(report)
    if full:
        for section in report.sections:
            lines += _section(section)
    else:
        summary = report.section("summary")
        lines += (_section(summary) if summary is not None else []) + _baseline(report)
    lines += _full_report(report)
    return _fit(lines, report).encode("utf-8")
