"""The library API: a whole job in one call, returning typed results (docs/python-api.md).
Each CLI command is a thin call into one function here. They print nothing and exit nothing
(callbacks for progress; every result carries the command's exit code). The API and the CLI
are the two front doors: they import everything below them and nothing imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.contracts.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from torchscale.interfaces.api.benchmark import (
        BenchmarkEvents,
        BenchmarkRun,
        machine_for,
        plan_benchmark,
        run_benchmark,
    )
    from torchscale.interfaces.api.comm import CommOptions, CommRun, run_comm
    from torchscale.interfaces.api.profile import (
        ProfileOptions,
        ProfileRun,
        TraceAnalysis,
        analyze_traces,
        run_profile,
    )
    from torchscale.interfaces.api.report import ReportRun, build_report
    from torchscale.interfaces.api.report_generate import renderer
    from torchscale.interfaces.api.workload import WorkloadRun, run_workload

# each name's module, imported on first use: a command imports only its own function's
# dependencies (`comm` never pays for the sweep's pandas), so an error in its options is
# answered in a fraction of a second
_HOMES = {
    "benchmark": (
        "BenchmarkEvents",
        "BenchmarkRun",
        "machine_for",
        "plan_benchmark",
        "run_benchmark",
    ),
    "comm": ("CommOptions", "CommRun", "run_comm"),
    "profile": ("ProfileOptions", "ProfileRun", "TraceAnalysis", "analyze_traces", "run_profile"),
    "report": ("ReportRun", "build_report"),
    "report_generate": ("renderer",),
    "workload": ("WorkloadRun", "run_workload"),
}
__getattr__ = lazy_exports(
    __name__, {name: module for module, names in _HOMES.items() for name in names}
)


__all__ = [
    "BenchmarkEvents",
    "BenchmarkRun",
    "CommOptions",
    "CommRun",
    "ProfileOptions",
    "ProfileRun",
    "ReportRun",
    "TraceAnalysis",
    "WorkloadRun",
    "analyze_traces",
    "build_report",
    "machine_for",
    "plan_benchmark",
    "renderer",
    "run_benchmark",
    "run_comm",
    "run_profile",
    "run_workload",
]
