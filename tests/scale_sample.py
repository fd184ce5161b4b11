"""Reports at the scale of benchmarks/report_scale.py (500 cells: five models, 250 layout
groups), built from its generated results, for the chart tests: the charts that broke at
scale (250-entry legends, collapsed axes) come from here."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.model import Chart, Report
from torchscale.interfaces.report.sources import read_sources

REPO = Path(__file__).resolve().parent.parent
_FAMILY = re.compile(r"-(default-scaling-)?scale-model-\d.*$")


def report_scale() -> ModuleType:
    """benchmarks/report_scale.py as a module (it is a script, not a package)."""
    path = REPO / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("report_scale", module)
    spec.loader.exec_module(module)
    return module


def scale_report(root: Path, cells: int = 500) -> Report:
    experiment = report_scale().write_results(root, cells)
    return build_report(read_sources(experiment), ReportOptions(generated_at="fixed"))


def one_per_family(charts: list[Chart]) -> list[Chart]:
    """One chart of each kind of chart: the per-model copies of a chart are alike."""
    seen: dict[str, Chart] = {}
    for chart in charts:
        seen.setdefault(_FAMILY.sub("", chart.id), chart)
    return list(seen.values())
