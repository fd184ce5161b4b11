"""Report time at scale, as ratios to a bare load of the same results timed in the same run.

Generates results for --cells cells (default 500: models x batch sizes x GPU counts x
precisions x strategies) by varying the real two-rank cells of tests/fixtures/cpu_busy_sweep
(ids, sizes, throughputs scaled, step files copied), then times,
each in the same process and run: the bare `torchscale.offline.results.load` of the directory
(reading the results at all: this machine's own yardstick), and `torchscale report -f FMT` as
the command runs it (`report.generate`: read, build what the format shows, render, write) for
HTML, PDF, Markdown and JSON. The same is done at --small cells to show that the HTML grows
sub-linearly; the bounds are judged at --cells only (at 50 cells the bare load is ~0.06 s and
a report's fixed costs, its first screen and template, weigh more than the cells).

    python benchmarks/report_scale.py                 # 500 cells (and 50 for the growth ratio)
    python benchmarks/report_scale.py --cells 200 --no-pdf

Bounds, as ratios to the bare load so that a faster or slower machine moves both: build +
HTML <= 3x, build + PDF <= 12x, Markdown and JSON <= 2x. A ratio taken while the machine is
busier than its cores (load average above the core count) is noise, not a verdict: the run
says so beside the ratios.

Besides the timings it prints what does not depend on the machine's load, per size: the
charts drawn, the most series on one chart and the most legend entries (bound: 12 series,
`report.charts.limits`), and the SVG nodes of each chart the PDF embeds (WeasyPrint draws every
node in Python; bound: MAX_SVG_NODES per chart). It exits 1 when one of these structural
bounds is broken, never because of a timing, so CI runs it as a smoke test.
"""

from __future__ import annotations

import argparse
import gc
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
FIXTURE = REPO / "tests" / "fixtures" / "cpu_busy_sweep" / "busy" / "default_scaling"

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
            steps_file = (FIXTURE / "steps" / path.name).with_suffix(".jsonl")
            templates.append((data, steps_file.read_text(encoding="utf-8")))
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
        interval = (data.get("intervals") or {}).get("samples_per_s") or {}
        for end in ("value", "low", "high"):  # the interval of the figure it is, scaled alike
            if interval.get(end) is not None:
                interval[end] *= scale
        data["global_batch"] = batch * gpus
        (experiment / "cells" / f"{cell_id}.json").write_text(json.dumps(data), encoding="utf-8")
        (experiment / "steps" / f"{cell_id}.jsonl").write_text(steps, encoding="utf-8")
    return experiment


FORMATS = ("html", "pdf", "md", "json")
# build + render of each format, at most this many times the bare load of the same results
BOUNDS = {"html": 3.0, "pdf": 12.0, "md": 2.0, "json": 2.0}


def bare_load(experiment: Path) -> float:
    """Seconds to read the results at all: the frame every report starts from."""
    from torchscale.offline.results import load

    gc.collect()  # each timing starts with no garbage of the one before to collect
    started = time.perf_counter()
    frame = load(experiment)
    _ = frame.cells, frame.steps
    return time.perf_counter() - started


def measure(experiment: Path, formats: Sequence[str], out: Path) -> tuple[dict[str, float], Any]:
    """Seconds of the bare load and of each format's report as the command makes it (read,
    build what it shows, render, write), its size, and the full report (for `structure`)."""
    from torchscale.interfaces.api.report_generate import ReportRequest, generate
    from torchscale.interfaces.report.build import build_report
    from torchscale.interfaces.report.request import ReportOptions
    from torchscale.interfaces.report.sources import read_sources

    row: dict[str, float] = {"load_s": bare_load(experiment)}
    for fmt in formats:
        request = ReportRequest(
            source=experiment, fmt=fmt, output=out / f"report.{fmt}", generated_at="fixed"
        )
        gc.collect()
        started = time.perf_counter()
        outcome = generate(request)
        row[f"{fmt}_s"] = time.perf_counter() - started
        row[f"{fmt}_bytes"] = float(len(outcome.content))
        row[f"{fmt}_charts"] = float(len(outcome.report.charts()))
    report = build_report(read_sources(experiment), ReportOptions(generated_at="fixed"))
    return row, report


MAX_SVG_NODES = 400  # per chart at any size (every point of 500 cells drawn: 3,112 nodes)
_NODE = re.compile(r"<[a-zA-Z]")


def structure(report: Any) -> dict[str, int]:
    """What the charts are made of, independent of the machine: charts drawn, the most series
    and legend entries on one chart, and SVG nodes (most on one chart, all together)."""
    from torchscale.interfaces.report.charts.plot import plot
    from torchscale.interfaces.report.render.svg_direct import chart_svg

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


def _met(ratio: float, bound: float) -> str:
    return "met" if ratio <= bound else "MISSED"


def load_text(cores: int) -> tuple[str, bool]:
    """The machine's load beside the ratios, and whether it is above the core count (then a
    ratio is noise, not a verdict)."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown on this platform", False
    one, five, fifteen = os.getloadavg()
    busy = one > cores
    text = f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {cores} core(s)"
    if busy:
        text += ": above the core count, so these ratios are noise, not a verdict"
    return text, busy


def format_line(cells: int, row: dict[str, float], judged: bool = True) -> str:
    """Each format's seconds, size and ratio to the bare load of the same run, and where
    `judged`, whether the ratio is within its bound."""
    load = max(row["load_s"], 1e-9)
    parts = [f"{cells:4d} cells: bare load {row['load_s']:.2f} s"]
    for fmt in FORMATS:
        if f"{fmt}_s" not in row:
            continue
        ratio = row[f"{fmt}_s"] / load
        verdict = f"<= {BOUNDS[fmt]:g}x: {_met(ratio, BOUNDS[fmt])}; " if judged else ""
        parts.append(
            f"{fmt} {row[f'{fmt}_s']:.2f} s = {ratio:.1f}x ({verdict}"
            f"{row[f'{fmt}_bytes'] / 1e6:.2f} MB, {int(row[f'{fmt}_charts'])} charts)"
        )
    if not judged:
        parts.append("growth only, not judged")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    from torchscale.contracts.host import usable_cores

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--small", type=int, default=50, help="cells for the growth ratio")
    parser.add_argument("--no-pdf", action="store_true")
    args = parser.parse_args(argv)
    cores = usable_cores()
    formats = [f for f in FORMATS if not (args.no_pdf and f == "pdf")]
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows, shapes = {}, {}
        warm = write_results(Path(tmp) / "warm", min(args.small, 8))
        measure(warm, formats, warm)  # imports (jinja2, weasyprint) once
        for cells in (args.small, args.cells):
            experiment = write_results(Path(tmp), cells)
            rows[cells], report = measure(experiment, formats, experiment)
            shapes[cells] = structure(report)
        for cells, row in rows.items():
            print(format_line(cells, row, judged=cells == args.cells))
        for cells, shape in shapes.items():
            print(
                f"{cells:4d} cells: {shape['charts']} charts in the full report, at most "
                f"{shape['series']} series and {shape['legend']} legend entries on one, SVG "
                f"nodes at most {shape['nodes_max']} per chart, {shape['nodes_total']:,} in all"
            )
            problems += [f"{cells} cells: {p}" for p in structure_problems(shape)]
        text, busy = load_text(cores)
        print(text)
        if busy:
            print("timings: noise, not a verdict (the machine is busier than its cores)")
        small, large = rows[args.small], rows[args.cells]
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
