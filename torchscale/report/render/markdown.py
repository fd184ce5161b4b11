"""Markdown renderer: a summary for a pull request comment or a chat message.

Title, sources, key figures, tables (GitHub tables, at most `MAX_ROWS` rows each), findings and
what is unavailable. Charts are listed by title only: Markdown cannot draw them, the HTML and
PDF reports do. Every string from the model goes through `escape`, so a model name or an error
message can neither inject HTML into a PR comment nor break a table: `|`, backslashes, `<`,
`>`, `&` and the inline Markdown punctuation are escaped, line breaks become spaces.
"""

from __future__ import annotations

import re
from typing import Any

from torchscale.report.model import (
    Block,
    Chart,
    Finding,
    Findings,
    KeyFigures,
    Report,
    Section,
    Table,
    Text,
)
from torchscale.report.render.formatting import format_value, severity_prefix

MAX_ROWS = 50
MAX_FINDINGS = 10  # the costliest: a PR comment is read, not searched
_NUMBERED = re.compile(r"^\d{1,9}[.)](?=\s|$)")
# a run of `_` opens or closes emphasis only at a word boundary: escape those runs, leave
# snake_case and tiny-mlp__b8__w2 ids (inert inside a word) readable
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_])")
_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "[": "\\[",
        "]": "\\]",
        "~": "\\~",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\r": " ",
        "\n": " ",
    }
)


def escape(text: str) -> str:
    """A user string as literal Markdown text on one line (safe inside a table cell)."""
    escaped = text.translate(_ESCAPES)
    return _EMPHASIS_UNDERSCORE.sub(lambda run: "\\_" * len(run.group()), escaped)


def _paragraph(text: str) -> str:
    """Escaped text that cannot start a heading, list, quote or rule at line start."""
    body = escape(text)
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
    lines = [f"# {escape(report.title)}", ""]
    meta = (
        f"Generated {escape(report.generated_at)} by torchscale {escape(report.torchscale_version)}"
    )
    if report.regressions:
        meta += f" · **✖ {report.regressions} regression(s) by the stated rule**"
    lines += [meta, ""]
    if report.sources:
        lines.append("**Sources**")
        lines.append("")
        for source in report.sources:
            role = "baseline: " if source.role == "baseline" else ""
            lines.append(
                f"- {role}{escape(source.name)} ({escape(source.path)}): "
                f"{source.cells} cells, {source.ok} ok, {source.failed} failed, "
                f"{source.skipped} skipped, {source.profiles} profile(s)"
            )
        lines.append("")
    if report.skipped:
        lines.append("**Skipped inputs**")
        lines.append("")
        lines += [f"- {escape(item.path)}: {escape(item.reason)}" for item in report.skipped]
        lines.append("")
    return lines


def _key_figures(block: KeyFigures) -> list[str]:
    lines = []
    for figure in block.figures:
        line = (
            f"- {severity_prefix(figure.severity)}**{escape(figure.label)}**: "
            f"{_value(figure.value, figure.format)}"
        )
        if figure.note:
            line += f" ({escape(figure.note)})"
        lines.append(line)
    return lines


def _table(block: Table) -> list[str]:
    lines = [f"**{escape(block.title)}**", ""]
    lines.append("| " + " | ".join(escape(c.label) for c in block.columns) + " |")
    lines.append(
        "|" + "|".join(":---" if c.align == "left" else "---:" for c in block.columns) + "|"
    )
    for row in block.rows[:MAX_ROWS]:
        severity = row.get("_severity") or "info"
        cells = [_value(row.get(c.key), c.format) for c in block.columns]
        if severity in ("bad", "warn") and cells:
            cells = [f"**{cell}**" if cell and cell != "-" else cell for cell in cells]
        if cells:
            cells[0] = severity_prefix(severity) + cells[0]
        lines.append("| " + " | ".join(cells) + " |")
    if not block.rows:
        lines.append("| " + " | ".join(["-"] * len(block.columns)) + " |")
    hidden = len(block.rows) - MAX_ROWS
    if hidden > 0:
        lines += ["", f"... {hidden} more rows (see the HTML/PDF report)"]
    if block.note:
        lines += ["", f"_{escape(block.note)}_"]
    return lines


def _finding(finding: Finding) -> list[str]:
    cost = (
        ""
        if finding.cost_pct is None
        else f" ({_value(finding.cost_pct, 'pct')} of cycle/step time)"
    )
    lines = [
        f"- {severity_prefix(finding.severity)}**{escape(finding.title)}**{cost}, "
        f"source: {escape(finding.source)}"
    ]
    lines += [f"  - evidence: {escape(item)}" for item in finding.evidence]
    if finding.recommendation:
        lines.append(f"  - recommendation: {escape(finding.recommendation)}")
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
        return [f"- Chart: {escape(block.title)} (see the HTML/PDF report)"]
    if isinstance(block, Findings):
        lines = ["**Findings**", ""]
        for finding in block.findings[:MAX_FINDINGS]:
            lines += _finding(finding)
        hidden = len(block.findings) - MAX_FINDINGS
        if hidden > 0:
            lines += ["", f"... {hidden} more findings (see the HTML/PDF report)"]
        if block.note:
            lines += ["", f"_{escape(block.note)}_"]
        return lines
    lines = ["**Unavailable**", ""]
    lines += [f"- {escape(what)}: {escape(why)}" for what, why in block.items.items()]
    return lines


def _section(section: Section) -> list[str]:
    lines = [f"## {escape(section.title)}"]
    previous: Block | None = None
    for block in section.blocks:
        # consecutive charts read as one list; any other block is its own paragraph
        if not (isinstance(block, Chart) and isinstance(previous, Chart)):
            lines.append("")
        lines += _block(block)
        previous = block
    return [*lines, ""]


def render(report: Report) -> bytes:
    """The report as GitHub-flavoured Markdown, UTF-8."""
    lines = _header(report)
    for section in report.sections:
        lines += _section(section)
    while lines and not lines[-1]:
        lines.pop()
    return ("\n".join(lines) + "\n").encode("utf-8")
