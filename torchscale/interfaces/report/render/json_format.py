"""JSON renderer: the report model as it is (`kind: torchscale.report`, versioned), so a
notebook or a CI job reads the same numbers as the HTML without parsing it. It round-trips:
`Report.model_validate_json(render(report))` equals the report."""

from __future__ import annotations

from torchscale.interfaces.report.model import Report


def render(report: Report) -> bytes:
    """The report as indented JSON, UTF-8, ending with a newline."""
    return (report.model_dump_json(indent=2) + "\n").encode("utf-8")
