"""Thresholds that several layers judge by (contracts layer: no imports), so that a default in
the config, a warning in the worker and a verdict in a report can never drift apart.
"""

from __future__ import annotations

# a step-time CV (and a throughput interval's half-width, relative) above this is "noisy": the
# config's default `measurement.cv_warn_threshold`, the worker's high-variance warning and the
# report's reliability verdict
CV_WARN_THRESHOLD = 0.10

# other processes' CPU, in cores per rank of a cell (per core of the host where the ranks
# outnumber its cores: busy_machine.busy_threshold): at least this much (on a host with fewer
# idle cores than the cell's ranks) makes the machine "busy" (telemetry's host-load record),
# and two runs whose other-process load differs by this much are not compared by the
# regression rule ("not judged: busy machine", docs/regressions.md)
OTHER_CORES_PER_RANK = 0.25

# a GPU cell whose GPU is busy for less than this share of its traced steps (the union of its
# kernels over their wall time: torchscale/rank/worker/busy_trace.py) is "host-bound": the GPU
# idles more than it works, waiting for Python and kernel launches (docs/methodology.md says why)
HOST_BOUND_SHARE = 0.5
