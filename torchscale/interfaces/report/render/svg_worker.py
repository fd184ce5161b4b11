"""Draw the PDF's charts on several cores: matplotlib holds the GIL, so more cores mean more
processes.

Why this shape:
- A worker is a plain command, `python -m torchscale.interfaces.report.render.svg_worker IN OUT
PARENT`
  (built as data by `worker_argv`), not multiprocessing: nothing depends on how the caller's
  `__main__` was started, and nothing is pickled. Charts go in as the report model's JSON in a
  file, SVGs (or the error of each chart that could not be drawn) come back as JSON in a file.
- The calling process draws its own share meanwhile; a worker's share is smaller by its
  start-up time (Python and matplotlib imports, about 0.8 s here, the time of about
  STARTUP_CHARTS charts), and a worker is started only where its share is at least
  MIN_WORKER_SHARE charts. (the old rule wanted 6 charts per process, so the 11
  charts of a 50-cell report were drawn one after another on a 2-core machine.)
- A worker cannot outlive the report: it runs in a session of its own (a Ctrl-C at the
  terminal reaches only the parent, which then kills it), it asks the kernel for SIGKILL when
  its parent dies, and any exception in the parent kills and reaps it.
- A worker that fails, times out or returns bad output costs only time: its charts are then
  drawn in the calling process, with a warning in the log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from torchscale.contracts.host import usable_cores
from torchscale.interfaces.report.model import Chart

log = logging.getLogger(__name__)

MODULE = "torchscale.interfaces.report.render.svg_worker"
MAX_WORKERS = 4
# a worker's start-up (a Python process importing matplotlib and pydantic, ~0.8 s on a quiet
# machine) in charts the caller draws meanwhile (~0.2 s each)
STARTUP_CHARTS = 4.0
MIN_WORKER_SHARE = 2  # a worker that would draw fewer charts does not repay its start-up
TIMEOUT_S = 60.0
TIMEOUT_PER_CHART_S = 10.0


class ChartError(Exception):
    """A chart that could not be drawn, here or in a worker: "ErrorType: message"."""

    @classmethod
    def from_error(cls, error: Exception) -> ChartError:
        return cls(f"{type(error).__name__}: {error}")


# chart id -> SVG text, or why the chart could not be drawn
Drawn = dict[str, str | ChartError]


def shares(charts: int, workers: int) -> list[float]:
    """How many charts the caller (first) and each worker draw so that all finish together: a
    worker starts STARTUP_CHARTS charts late."""
    caller = (charts + workers * STARTUP_CHARTS) / (workers + 1)
    return [caller] + [caller - STARTUP_CHARTS] * workers


def worker_count(charts: int, cores: int) -> int:
    """How many worker processes to start besides the caller: one per spare core, while each
    worker's share is at least MIN_WORKER_SHARE charts."""
    for workers in range(min(cores - 1, MAX_WORKERS), 0, -1):
        if shares(charts, workers)[-1] >= MIN_WORKER_SHARE:
            return workers
    return 0


def split(charts: Sequence[Chart], workers: int) -> list[list[Chart]]:
    """The caller's share first, then one share per worker, sized by `shares`. Interleaved,
    so that each share has charts of every kind (their cost differs by kind)."""
    weights = [max(share, 1e-9) for share in shares(len(charts), workers)]
    out: list[list[Chart]] = [[] for _ in weights]
    for chart in charts:
        # the share that is the least full relative to its size takes the next chart
        index = min(range(len(weights)), key=lambda i: ((len(out[i]) + 1) / weights[i], i))
        out[index].append(chart)
    return out


def worker_argv(charts_path: Path, output_path: Path, parent_pid: int) -> list[str]:
    return [sys.executable, "-m", MODULE, str(charts_path), str(output_path), str(parent_pid)]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=TIMEOUT_S)


def _read_output(path: Path, share: Sequence[Chart]) -> Drawn:
    data = json.loads(path.read_text(encoding="utf-8"))
    drawn: Drawn = {}
    for chart in share:
        item = data[chart.id]
        drawn[chart.id] = item["svg"] if "svg" in item else ChartError(item["error"])
    return drawn


def _ignore(count: int) -> None:
    return None


def draw_serially(
    charts: Sequence[Chart],
    draw: Callable[[Chart], str],
    on_drawn: Callable[[int], None] = _ignore,
) -> Drawn:
    """Each chart drawn in turn; `on_drawn(1)` after each (drawn or failed)."""
    drawn: Drawn = {}
    for chart in charts:
        try:
            drawn[chart.id] = draw(chart)
        except Exception as error:  # one chart is one figure: the rest of the report stands
            drawn[chart.id] = ChartError.from_error(error)
        on_drawn(1)
    return drawn


def draw_in_parallel(
    charts: Sequence[Chart],
    draw: Callable[[Chart], str],
    cores: int | None = None,
    on_drawn: Callable[[int], None] = _ignore,
) -> Drawn:
    """Every chart drawn by `draw` in this process or by `chart_svg` in worker processes (one
    per spare core, see `worker_count`). Same result as `draw_serially`, sooner. `on_drawn(n)`
    says n more are done: one at a time for this process' share, a worker's share at once."""
    workers = worker_count(len(charts), usable_cores() if cores is None else cores)
    if workers == 0:
        return draw_serially(charts, draw, on_drawn)
    mine, *theirs = split(charts, workers)
    with tempfile.TemporaryDirectory(prefix="torchscale-charts-") as tmp:
        started: list[tuple[subprocess.Popen[bytes], Path, Path, list[Chart]]] = []
        try:
            for number, share in enumerate(theirs):
                charts_path = Path(tmp) / f"charts-{number}.json"
                output_path = Path(tmp) / f"svgs-{number}.json"
                log_path = Path(tmp) / f"worker-{number}.log"
                charts_path.write_text(
                    json.dumps([chart.model_dump(mode="json") for chart in share]),
                    encoding="utf-8",
                )
                with log_path.open("wb") as log_file:
                    proc = subprocess.Popen(
                        worker_argv(charts_path, output_path, os.getpid()),
                        stdin=subprocess.DEVNULL,
                        stdout=log_file,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                started.append((proc, output_path, log_path, share))
            drawn = draw_serially(mine, draw, on_drawn)
            for proc, output_path, log_path, share in started:
                drawn.update(_collect(proc, output_path, log_path, share, draw))
                on_drawn(len(share))
        finally:
            for proc, *_ in started:
                if proc.poll() is None:
                    _stop(proc)
    return drawn


def _collect(
    proc: subprocess.Popen[bytes],
    output_path: Path,
    log_path: Path,
    share: Sequence[Chart],
    draw: Callable[[Chart], str],
) -> Drawn:
    """The worker's charts; drawn here instead when the worker did not deliver them."""
    timeout = TIMEOUT_S + TIMEOUT_PER_CHART_S * len(share)
    try:
        returncode = proc.wait(timeout=timeout)
        if returncode == 0:
            return _read_output(output_path, share)
        problem = f"exit status {returncode}"
    except subprocess.TimeoutExpired:
        _stop(proc)
        problem = f"no answer in {timeout:.0f} s"
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem = f"unreadable output ({error!r})"
    try:
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip()[-500:]
    except OSError:
        tail = ""
    log.warning(
        "chart worker failed (%s), drawing its %d charts here%s",
        problem,
        len(share),
        f": {tail}" if tail else "",
    )
    return draw_serially(share, draw)


def _work(charts_path: Path, output_path: Path) -> None:
    from torchscale.interfaces.report.render.svg_charts import chart_svg

    charts = [Chart.model_validate(item) for item in json.loads(charts_path.read_text("utf-8"))]
    result: dict[str, dict[str, str]] = {}
    for chart in charts:
        try:
            result[chart.id] = {"svg": chart_svg(chart)}
        except Exception as error:  # reported per chart, like draw_serially
            result[chart.id] = {"error": str(ChartError.from_error(error))}
    partial = output_path.with_name(output_path.name + ".partial")
    partial.write_text(json.dumps(result), encoding="utf-8")
    partial.replace(output_path)


def main(argv: Sequence[str]) -> int:
    charts_path, output_path, parent = argv
    from torchscale.contracts.signals import die_with_parent

    die_with_parent(int(parent))  # SIGKILL when the report's process dies: no orphan
    _work(Path(charts_path), Path(output_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
