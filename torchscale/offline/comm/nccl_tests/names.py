"""nccl-tests' names for torchscale's ops and dtypes, and which ops print a redop or a root."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from torchscale.contracts.catalog import COLLECTIVES
from torchscale.contracts.collective_facts import ops_where, sweep_facts
from torchscale.offline.comm.nccl_tests.records import fail

# nccl-tests program (<name>_perf) -> torchscale op; gather, scatter, hypercube, alltoallv...
# have no torchscale op and are refused
PROGRAM_OPS = {sweep_facts(op).nccl_tests_program: op for op in COLLECTIVES}
# nccl-tests type name -> (torch dtype name, bytes); "char" and "int" are NCCL 1 spellings
TYPES: dict[str, tuple[str, int]] = {
    "int8": ("int8", 1),
    "char": ("int8", 1),
    "uint8": ("uint8", 1),
    "int32": ("int32", 4),
    "int": ("int32", 4),
    "uint32": ("uint32", 4),
    "int64": ("int64", 8),
    "uint64": ("uint64", 8),
    "half": ("float16", 2),
    "float": ("float32", 4),
    "double": ("float64", 8),
    "bfloat16": ("bfloat16", 2),
    "f8e4m3": ("float8_e4m3fn", 1),  # NCCL's e4m3 is the finite-only (fn) variant
    "f8e5m2": ("float8_e5m2", 1),
}
REDUCING_OPS = ops_where(lambda op: op.runnable and op.reduces)
# send_recv prints whatever -o says: neither list checks it
NON_REDUCING_OPS = ops_where(lambda op: op.runnable and not op.reduces and not op.point_to_point)
ROOTED_OPS = ops_where(lambda op: op.runnable and op.rooted)
# the oldest nccl-tests printed algbw = S (n-1)/n / t for these, and busbw = algbw
LEGACY_OPS = frozenset({"all_gather", "reduce_scatter"})


def program_op(name: str, where: str) -> str:
    """torchscale's op for an nccl-tests program name (all_reduce_perf, ./build/alltoall_perf,
    all_reduce_perf_mpi) or for a torchscale op name."""
    base = PurePosixPath(name).name
    if base in COLLECTIVES:
        return base
    match = re.fullmatch(r"(\w+?)_perf\w*", base)
    key = match.group(1) if match else base
    if key in PROGRAM_OPS:
        return PROGRAM_OPS[key]
    known = ", ".join(f"{p}_perf" for p in PROGRAM_OPS)
    raise fail(
        where,
        f"{base} has no torchscale op: torchscale imports {known} (as {', '.join(COLLECTIVES)})",
    )
