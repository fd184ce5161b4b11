"""Thresholds that several layers judge by (contracts layer: no imports), so that a default in
the config, a warning in the worker and a verdict in a report can never drift apart.
"""

from __future__ import annotations

# a step-time CV (and a throughput interval's half-width, relative) above this is "noisy": the
# config's default `measurement.cv_warn_threshold`, the worker's high-variance warning and the
# report's reliability verdict
CV_WARN_THRESHOLD = 0.10

# other processes' CPU, in cores per rank: two runs whose other-process load differs by this
# much are not compared by the regression rule ("not judged: busy machine", docs/regressions.md)
OTHER_CORES_PER_RANK = 0.25

# a host is "busy" (telemetry's host-load record, contracts/busy_machine.py) when other
# processes took from the cell's cores as much CPU as, had the cell had it, would have sped it
# by this share of its own CPU: the noise bar's size (CV_WARN_THRESHOLD), so a busy host can
# explain a slowdown as large as what "noisy" means, and it takes more (collectives wait for a
# descheduled rank: 0.43 core of others slowed a 2-rank cell on 2 cores 2.3x)
BUSY_SLOWDOWN = CV_WARN_THRESHOLD

# a GPU cell whose GPU is busy for less than this share of its traced steps (the union of its
# kernels over their wall time: torchscale/rank/worker/busy_trace.py) is "host-bound": the GPU
# idles more than it works, waiting for Python and kernel launches (docs/methodology.md says why)
HOST_BOUND_SHARE = 0.5

# traced steps by default (the config's `profiling.steps`, `torchscale profile`'s): three
# blocks of the longest period the straggler rule keeps whole (offline/analysis/diagnosis/
# cost.py, LONGEST_PERIOD), so a stall every 8th step is seen 3 times; 10 left a stall every
# 4th step unnamed and paired only 5 steps beside a pinned hog
TRACED_STEPS = 24
