"""Report build and render time at scale, and how the HTML grows with the number of cells.

Generates results for --cells cells (default 500: models x batch sizes x GPU counts x
precisions x strategies) by varying the real schema-3 fixture cells of
tests/fixtures/results_v3 (ids, sizes, throughputs scaled, step files copied), then times, each
in the same run: the bare `torchscale.results.load` of the directory (the baseline: reading
the results at all), building the report model, and rendering HTML and PDF. The same is done
at --small cells to show that the HTML grows sub-linearly (plotly.js is embedded once).

    python benchmarks/report_scale.py                 # 500 cells (and 50 for the growth ratio)
    python benchmarks/report_scale.py --cells 200 --no-pdf

Bounds (issue 40): build + render HTML <= 2 s and PDF <= 10 s for 500 cells on a quiet 2-core
machine, the PDF's time growing with the charts drawn, not the cells. Timings taken on a busy
machine say nothing about the bounds: each run prints the load average beside them.

Besides the timings it prints what does not depend on the machine's load, per size: the
charts drawn, the most series on one chart and the most legend entries (bound: 12 series,
`report.charts.limits`), and the SVG nodes of each chart the PDF embeds (WeasyPrint draws every
node in Python; bound: MAX_SVG_NODES per chart). It exits 1 when one of these structural
bounds is broken, never because of a timing, so CI runs it as a smoke test.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "results_v3" / "v3_fixture"

MODELS = [f"scale-model-{i}" for i in range(1, 6)]  # labels only: the figures are scaled copies
BATCHES = [8, 16, 32, 64, 128]
GPUS = [1, 2, 4, 8, 16]
PRECISIONS = ["fp32", "bf16"]
STRATEGIES = ["ddp", "fsdp"]


def write_results(root: Path, cells: int) -> Path:
    """An experiment directory of `cells` results derived from the fixture's ok cells."""
    experiment = root / f"scale_{cells}"
    (experiment / "cells").mkdir(parents=True)
    (experiment / "steps").mkdir()
    shutil.copy(FIXTURE / "config.yaml", experiment / "config.yaml")
    shutil.copy(FIXTURE / "env.json", experiment / "env.json")
    templates = []
    for path in sorted((FIXTURE / "cells").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["status"] == "ok" and data["cell"]["world_size"] == 2:
            steps = (FIXTURE / "steps" / path.name).with_suffix(".jsonl")
            templates.append((data, steps.read_text(encoding="utf-8")))
    combos = itertools.product(MODELS, BATCHES, GPUS, PRECISIONS, STRATEGIES)
    for index, (model, batch, gpus, precision, strategy) in enumerate(
        itertools.islice(combos, cells)
    ):
        data, steps = templates[index % len(templates)]
        data = json.loads(json.dumps(data))
        key = f"{model}|{batch}|{gpus}|{precision}|{strategy}"
        sha = hashlib.sha256(key.encode()).hexdigest()
        cell_id = f"{model}__b{batch}__w{gpus}__{precision}__{strategy}__{sha[:8]}"
        data["cell"].update(
            id=cell_id,
            definition_sha256=sha,
            model=model,
            label=model,
            batch_size=batch,
            world_size=gpus,
            precision=precision,
            strategy=strategy,
        )
        scale = gpus * (0.97 ** (gpus - 1)) * batch / 8
        throughput = data["throughput"]
        for field in ("samples_per_s", "samples_per_s_per_device", "tokens_per_s"):
            if throughput.get(field) is not None:
                throughput[field] = throughput[field] * scale
        throughput["repeats"] = [value * scale for value in throughput.get("repeats") or []]
        data["global_batch"] = batch * gpus
        (experiment / "cells" / f"{cell_id}.json").write_text(json.dumps(data), encoding="utf-8")
        (experiment / "steps" / f"{cell_id}.jsonl").write_text(steps, encoding="utf-8")
    return experiment


def measure(experiment: Path, pdf: bool) -> tuple[dict[str, float], Any]:
    """Timings (seconds) and sizes of one run, and the report built."""
    from torchscale.interfaces.report.build import ReportOptions, build_report
    from torchscale.interfaces.report.render import renderer
    from torchscale.interfaces.report.sources import read_sources
    from torchscale.results import load

    out: dict[str, float] = {}
    started = time.perf_counter()
    experiment_table = load(experiment)
    _ = experiment_table.cells, experiment_table.steps
    out["load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    report = build_report(read_sources(experiment), ReportOptions(generated_at="fixed"))
    out["build_s"] = time.perf_counter() - started
    out["charts"] = float(len(report.charts()))
    for fmt in ("html", "pdf") if pdf else ("html",):
        started = time.perf_counter()
        content = renderer(fmt)(report)
        out[f"{fmt}_s"] = time.perf_counter() - started
        out[f"{fmt}_bytes"] = float(len(content))
    return out, report


HTML_BOUND_S = 2.0
PDF_BOUND_S = 10.0
MAX_SVG_NODES = 400  # per chart; the 500-cell strategies chart had 3,112 before issue 40
_NODE = re.compile(r"<[a-zA-Z]")


def structure(report: Any) -> dict[str, int]:
    """What the charts are made of, independent of the machine: charts drawn, the most series
    and legend entries on one chart, and SVG nodes (most on one chart, all together)."""
    from torchscale.interfaces.report.charts.plot import plot
    from torchscale.interfaces.report.render.svg_charts import chart_svg

    charts = report.charts()
    plots = [plot(chart) for chart in charts]
    nodes = [len(_NODE.findall(chart_svg(p))) for p in plots]
    return {
        "charts": len(charts),
        "series": max((len(p.series) for p in plots), default=0),
        "legend": max((len(p.legend) for p in plots), default=0),
        "nodes_max": max(nodes, default=0),
        "nodes_total": sum(nodes),
    }


def structure_problems(shape: dict[str, int]) -> list[str]:
    from torchscale.interfaces.report.charts.limits import MAX_SERIES

    problems = []
    if shape["series"] > MAX_SERIES:
        problems.append(f"a chart draws {shape['series']} series (bound {MAX_SERIES})")
    if shape["nodes_max"] > MAX_SVG_NODES:
        problems.append(f"a chart's SVG has {shape['nodes_max']} nodes (bound {MAX_SVG_NODES})")
    return problems


def _met(seconds: float, bound: float) -> str:
    return "met" if seconds <= bound else "MISSED"


def load_text(cores: int) -> str:
    """The machine's load beside the timings: figures taken on a busy machine are noise."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown on this platform"
    one, five, fifteen = os.getloadavg()
    busy = one > 0.5 * cores
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {cores} core(s)" + (
        ": the machine is busy, these timings cannot check the bounds" if busy else ""
    )


def main(argv: Sequence[str] | None = None) -> int:
    from torchscale.contracts.host import usable_cores
    from torchscale.interfaces.report.render.svg_worker import worker_count

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--small", type=int, default=50, help="cells for the growth ratio")
    parser.add_argument("--no-pdf", action="store_true")
    args = parser.parse_args(argv)
    cores = usable_cores()
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows, shapes = {}, {}
        for cells in (args.small, args.cells):
            experiment = write_results(Path(tmp), cells)
            measure(experiment, pdf=False)  # warm imports (plotly, jinja2, matplotlib) once
            rows[cells], report = measure(experiment, pdf=not args.no_pdf)
            shapes[cells] = structure(report)
        for cells, row in rows.items():
            total_html = row["build_s"] + row["html_s"]
            line = (
                f"{cells:4d} cells: load (bare) {row['load_s']:.2f} s, "
                f"build {row['build_s']:.2f} s,"
                f" HTML {row['html_s']:.2f} s ({row['html_bytes'] / 1e6:.2f} MB;"
                f" build+render {total_html:.2f} s = {total_html / row['load_s']:.1f}x the load)"
            )
            if "pdf_s" in row:
                total_pdf = row["build_s"] + row["pdf_s"]
                line += (
                    f", PDF {row['pdf_s']:.2f} s ({row['pdf_bytes'] / 1e6:.2f} MB;"
                    f" build+render {total_pdf:.2f} s;"
                    f" {row['pdf_s'] / max(row['charts'], 1):.2f} s per chart drawn)"
                )
            print(line)
        for cells, shape in shapes.items():
            print(
                f"{cells:4d} cells: {shape['charts']} charts, at most {shape['series']} series "
                f"and {shape['legend']} legend entries on one, SVG nodes at most "
                f"{shape['nodes_max']} per chart, {shape['nodes_total']:,} in all"
            )
            problems += [f"{cells} cells: {p}" for p in structure_problems(shape)]
        large = rows[args.cells]
        html_total = large["build_s"] + large["html_s"]
        verdicts = [
            f"HTML {html_total:.2f} s <= {HTML_BOUND_S:.0f} s: {_met(html_total, HTML_BOUND_S)}"
        ]
        if "pdf_s" in large:
            pdf_total = large["build_s"] + large["pdf_s"]
            verdicts.append(
                f"PDF {pdf_total:.2f} s <= {PDF_BOUND_S:.0f} s: {_met(pdf_total, PDF_BOUND_S)}"
            )
        charts = int(large["charts"])
        print(
            f"bounds at {args.cells} cells (build + render, {cores} core(s), {charts} charts, "
            f"{worker_count(charts, cores)} chart worker(s) besides this process): "
            + "; ".join(verdicts)
        )
        print(load_text(cores))
        small = rows[args.small]
        cell_ratio = args.cells / args.small
        size_ratio = large["html_bytes"] / small["html_bytes"]
        print(
            f"HTML size x{size_ratio:.2f} for x{cell_ratio:.0f} the cells "
            f"({'sub-linear' if size_ratio < cell_ratio else 'NOT sub-linear'})"
        )
    for problem in problems:
        print(f"structure: {problem}", file=sys.stderr)
    print("structure: " + ("within bounds" if not problems else "BROKEN"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
