"""Renderers: one interface, one module per format (terminal, HTML, PDF, Markdown, JSON).

Each takes the finished `Report` and returns the bytes of the file (the terminal renderer
returns the text it prints). Renderers format and lay out; they compute nothing. Modules are
imported on demand so that `--format md` never imports weasyprint or matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from torchscale.interfaces.report.model import Report

FORMATS = ("html", "pdf", "md", "json", "term")
SUFFIX = {"html": ".html", "pdf": ".pdf", "md": ".md", "json": ".json", "term": ".txt"}
_MODULES = {
    "html": "torchscale.interfaces.report.render.html",
    "pdf": "torchscale.interfaces.report.render.pdf",
    "md": "torchscale.interfaces.report.render.markdown",
    "json": "torchscale.interfaces.report.render.json_format",
    "term": "torchscale.interfaces.report.render.term",
}


class Renderer(Protocol):
    def __call__(self, report: Report) -> bytes: ...


def renderer(fmt: str) -> Renderer:
    """The `render(report) -> bytes` function of a format (KeyError for an unknown one)."""
    module = importlib.import_module(_MODULES[fmt])
    render: Renderer = module.render
    return render
