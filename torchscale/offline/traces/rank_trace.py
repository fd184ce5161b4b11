"""The event table every trace reader produces and every trace analysis consumes.

One `RankTrace` per rank. Its `events` DataFrame has one row per complete ("X") event that an
analysis can use, with these columns (times are microseconds on *this rank's own clock*; never
compare them across ranks without the offsets of `analysis.trace.clock`):

| column      | dtype            | meaning                                                        |
|-------------|------------------|----------------------------------------------------------------|
| name        | category         | event name as written                                          |
| kind        | category         | one of KINDS below                                             |
| ts          | float64          | start, us                                                      |
| dur         | float64          | duration, us (>= 0; bad durations are dropped and noted)       |
| tid         | int64            | thread id (CPU) or stream id (GPU); -1 when not an integer     |
| device_side | bool             | True for GPU/accelerator kernels, memcpy, memset               |
| correlation | Int64 (nullable) | CUDA correlation id (kernels and their runtime launches)       |
| step        | Int64 (nullable) | ProfilerStep number, on `kind == "step"` rows only             |
| phase       | category/None    | data|forward|backward|optimizer on `kind == "phase"` rows      |
| coll_op     | category/None    | normalised collective op on collective rows (COLL_OPS)         |
| op_source   | category/None    | where coll_op came from: "metadata" or "name" (OP_SOURCES)     |
| pg          | object/None      | process-group name (metadata), None when the trace has none    |
| seq         | Int64 (nullable) | collective sequence number within its group, when recorded    |
| nelems      | Int64 (nullable) | input elements of the collective, when recorded                |
| dtype       | object/None      | element dtype of the collective, when recorded                 |
| group_size  | Int64 (nullable) | ranks in the collective's group, when recorded                 |

KINDS:
- "step": a `ProfilerStep#N` range (or an nsys NVTX step range).
- "phase": a training-phase range: torchscale's own `torchscale:<phase>` ranges, and ranges a
  reader recognises (DataLoader `__next__` -> data, `Optimizer.step` -> optimizer, ...). When a
  trace holds torchscale's own ranges, only those are phases (the PyTorch ranges nested in them
  become "cpu_op", so no phase is counted twice). No reader infers "backward": PyTorch writes
  no range around it (see `traces/classify.py`).
- "collective": the execution of one collective *including the time spent waiting for peers*:
  a GPU communication kernel (`ncclDevKernel_*`, `ncclKernel_*`, RCCL, HCCL), a gloo op on its
  runloop thread (`gloo:all_reduce`), an nsys NCCL kernel. The unit the cross-rank matching
  pairs up.
- "collective_call": the host-side call that enqueues a collective (`c10d::allreduce_`,
  `record_param_comms`, `nccl:all_reduce`); carries metadata, never used as transfer time.
  (`record_param_comms` rows whose "Collective name" is `init` are "cpu_op".)
- "comm_wait": a host op that blocks until a collective's result is ready
  (`_c10d_functional::wait_tensor`, `record_param_comms` "wait"): neither compute nor transfer.
- "kernel": a device-side compute kernel (not communication, not memory).
- "memory": device memcpy / memset.
- "runtime": host-side launch API (`cudaLaunchKernel`, ...), for launch delay and host wait.
- "cpu_op": any other host op (aten ops, autograd functions); compute on CPU-only ranks.
  `torchscale:injected_delay` is a "cpu_op": the injected sleep counts as work.

Not rows at all: instant, flow and metadata events, and the categories `traces/classify.py`
drops (they duplicate other rows or are no work). Metadata columns come from the
args of collective and collective_call rows: pg = "Process Group Name" (older traces: "Process
Group ID", as text), seq = "Seq", nelems = "In msg nelems", dtype, group_size = "Group size".

op_source: "metadata" when the op came from a "Collective name" arg (record_param_comms, or a
kernel's own args) or, for a communication kernel, from the call that launched it
(`traces/kernel_ops.py`); "name" when only the event's name said it. Metadata comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from torchscale.contracts.collective_facts import OPS
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import RankSource

KINDS = (
    "step",
    "phase",
    "collective",
    "collective_call",
    "kernel",
    "memory",
    "runtime",
    "cpu_op",
    "comm_wait",
)
UNKNOWN_OP = "unknown"  # a collective whose name says no op (`ncclDevKernel_Generic`)
COLL_OPS = (*OPS, UNKNOWN_OP)
EVENT_COLUMNS = (
    "name",
    "kind",
    "ts",
    "dur",
    "tid",
    "device_side",
    "correlation",
    "step",
    "phase",
    "coll_op",
    "op_source",
    "pg",
    "seq",
    "nelems",
    "dtype",
    "group_size",
)


@dataclass
class RankTrace:
    """One rank's trace, reduced to the columns above, plus what the file said about itself."""

    path: Path
    rank: int
    rank_source: RankSource
    events: pd.DataFrame
    world_size: int | None = None
    backend: str | None = None  # distributedInfo.backend, e.g. "nccl", "gloo"
    device_type: str = "cpu"  # "cuda", "cpu", or another accelerator ("mtia", ...)
    device_names: list[str] = field(default_factory=list)
    base_time_ns: int | None = None  # absolute time of ts == 0, when the file says
    process_groups: list[dict[str, Any]] = field(default_factory=list)  # pg_config as written
    source_format: Literal["kineto", "nsys"] = "kineto"
    bytes_read: int = 0  # uncompressed bytes parsed (for MB/s)
    notes: list[Finding] = field(default_factory=list)  # what was odd or missing, a code each
