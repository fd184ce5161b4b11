"""A made-up report section for tests/interfaces/test_adding_a_report_section.py: what a new module
under
torchscale/interfaces/report/sections/ holds (docs/architecture.md, "A report section"). It reads
only the `Context` the report is built over, never a file, and returns its `Section`."""

from __future__ import annotations

from torchscale.interfaces.report.model import Column, KeyFigure, KeyFigures, Section, Table, Text
from torchscale.interfaces.report.parts.context import Context

SECTION_ID = "added"  # its id, as a section module's name is its id
TITLE = "Added section"
TABLE_ID = "added-cells"


def build(ctx: Context) -> Section | None:
    """One line, one key figure and one table over the cells read (None: no cells, nothing to
    show, so the report leaves the section out)."""
    if not len(ctx.cells):
        return None
    ids = sorted(str(cell) for cell in ctx.cells["cell_id"])
    return Section(
        id=SECTION_ID,
        title=TITLE,
        blocks=[
            Text(text=f"The added section read {len(ids)} cells."),
            KeyFigures(figures=[KeyFigure(label="Cells read", value=len(ids), format="int")]),
            Table(
                id=TABLE_ID,
                title="Cells the added section read",
                columns=[Column(key="cell", label="Cell", align="left")],
                rows=[{"cell": cell} for cell in ids],
            ),
        ],
    )
