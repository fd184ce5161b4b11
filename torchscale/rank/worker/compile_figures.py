"""The `compile` part of a cell's result, and its warning, from every rank's measurements.

Pure: rank 0 reads what each rank recorded of dynamo's tallies (torchscale/rank/worker/
compile_watch.py). Every rank compiles the same graphs, so the figures are the most on any rank
(a sum would count one recompile once per rank). A compile inside a measured window is a
warning: those steps are timed with compiling in them, and nothing else in the result would
show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchscale.contracts.schema.cell_result import CompileActivity
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.worker.measure import RankMeasurement

NOT_READ = coded("unavailable.compile_counters_unread")


def compile_record(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement]
) -> tuple[CompileActivity | None, list[CellWarning], dict[str, Reason]]:
    """(compile, warnings, unavailable) of a cell; None for a cell that does not compile."""
    if not spec.training.compile or not ranks:
        return None, [], {}
    unavailable: dict[str, Reason] = {}
    warmup_steps = min(len(r.warmup_compiled) for r in ranks)
    compiling = [i for i in range(warmup_steps) if any(r.warmup_compiled[i] for r in ranks)]
    windows = [r.window_compiles for r in ranks]
    read = [w for w in windows if w is not None]
    recompiles = breaks_in = seconds = None
    if len(read) == len(windows):
        recompiles = max(w.frames for w in read)
        breaks_in = max(w.graph_breaks for w in read)
        seconds = max(w.compile_s for w in read)
    else:
        why = next((r.compile_note for r in ranks if r.window_compiles is None), None)
        for key in ("recompiles_in_windows", "graph_breaks_in_windows", "compile_s_in_windows"):
            unavailable[f"compile.{key}"] = why or NOT_READ
    breaks = [r.graph_breaks for r in ranks]
    graph_breaks = max(b for b in breaks if b is not None) if None not in breaks else None
    if graph_breaks is None:
        unavailable["compile.graph_breaks"] = (
            next((r.compile_note for r in ranks if r.compile_note), None) or NOT_READ
        )
    record = CompileActivity(
        compiling_warmup_steps=compiling,
        extra_warmup_steps=max(r.extra_warmup_steps for r in ranks),
        graph_breaks=graph_breaks,
        recompiles_in_windows=recompiles,
        graph_breaks_in_windows=breaks_in,
        compile_s_in_windows=seconds,
    )
    warning = compile_in_windows_warning(spec, ranks)
    warnings = [CellWarning.of("other", "warning.compiled_in_windows", warning)] if warning else []
    return record, warnings, unavailable


def compile_in_windows_warning(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement]
) -> dict[str, Any] | None:
    """The figures of the warning for frames compiled inside the measured windows
    (`warning.compiled_in_windows`), naming the ranks."""
    compiled = [
        (r.rank, r.window_compiles)
        for r in sorted(ranks, key=lambda m: m.rank)
        if r.window_compiles is not None and r.window_compiles.frames > 0
    ]
    if not compiled:
        return None
    return {
        "frames": max(c.frames for _, c in compiled),
        "compile_s": max(c.compile_s for _, c in compiled),
        "graph_breaks": max(c.graph_breaks for _, c in compiled),
        "ranks": [rank for rank, _ in compiled],
        "first_compile": spec.measurement.warmup_steps == 0,
    }
