"""What one trace event is: its KIND (see `rank_trace.py`), collective op, phase and step.

Pure functions of the event's name, category and (for collectives only) its args, so a reader
can classify each distinct (name, category) pair once instead of every event.

Decisions worth knowing:
- Collective names are normalised from the letters of the op part of the name, so NCCL's
  renames (`ncclKernel_AllReduce_RING_LL_Sum_float` -> `ncclDevKernel_AllReduce_Sum_f32_RING_LL`),
  lower-case variants, RCCL, HCCL, gloo, c10d ops and `record_param_comms` "Collective name"
  values all land on the same COLL_OPS member.
- A kernel's name is only the second source of its op: NCCL runs every op without a
  specialised kernel in a generic one, `ncclDevKernel_Generic` since 2.19 and, before,
  `ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t` (NCCL's own `ncclKernelGeneric`; the kept
  traces show it running all_reduce, all_gather and reduce_scatter). Both say "unknown" by
  name; the launch's metadata (`traces/kernel_ops.py`) names the op, and the kernel's own
  "Collective name" arg, where PyTorch writes one, comes first (`op_source` "metadata").
- The backward phase comes only from explicit ranges (`torchscale:backward`): PyTorch records
  no range around `loss.backward()`, only one `autograd::engine::evaluate_function: ...` per
  autograd node, on the autograd thread, interleaved with DDP/FSDP hooks and collectives. Their
  union is not a phase: the gaps between them (waiting for gradients, hooks) would be counted
  or lost by guesswork. Forward, data and optimizer have ranges PyTorch writes itself.
- A host op that only waits for a collective (`_c10d_functional::wait_tensor`, a
  `record_param_comms` "wait") is "comm_wait", not "cpu_op": on a CPU rank it would otherwise
  count as compute, and a thread blocked on a tensor-parallel all-reduce would read as
  communication hidden behind compute.
- Dropped (None): `python_function` (with_stack call frames: they duplicate the ops they wrap
  and nest around everything, so any "busy" sum would double count), `gpu_user_annotation`
  (the device-side shadow of CPU ranges, again double counting), `cuda_sync` (records of
  waits, neither host nor device work), `overhead` (the profiler's own time) and the profiler's
  own `Trace` span.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from torchscale.contracts.step_phases import OWN_WORK_PHASES, RANGE_PREFIX
from torchscale.offline.traces.rank_trace import UNKNOWN_OP

DROPPED_CATS = frozenset(
    {"python_function", "gpu_user_annotation", "cuda_sync", "overhead", "Trace", "trace"}
)
# categories of events that run on the accelerator (Kineto's, and MTIA's device events)
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events"})
MEMORY_CATS = frozenset({"gpu_memcpy", "gpu_memset"})

# communication kernels: NCCL (old and new names, any case), RCCL, HCCL, MSCCL
_COMM_KERNEL = re.compile(
    r"^(?:void\s+)?(?:nccl|rccl|hccl|hcom|msccl|oneccl)|nccl_?(?:dev)?_?kernel", re.IGNORECASE
)
# host annotations of backends that only enqueue (the device does the work later)
_CALL_PREFIXES = ("nccl:", "hccl:", "rccl:", "xccl:", "ucc:")
# host annotations of backends that run the collective on a CPU thread (wait included)
_CPU_COLLECTIVE_PREFIXES = ("gloo:", "mpi:")
_C10D_PREFIXES = ("c10d::", "_c10d_functional::", "c10d_functional::")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_FORWARD_RANGES = frozenset({"DistributedDataParallel.forward", "FullyShardedDataParallel.forward"})
# "Collective name" values of record_param_comms that are not collectives
_NOT_COLLECTIVE = frozenset({"init", "split", "comm_split", "destroy"})
# host ops that block until a collective's result is ready (functional collectives: DTensor,
# FSDP2, TP); their time is the thread waiting, not computing
_WAIT_OPS = frozenset({"_c10d_functional::wait_tensor", "c10d_functional::wait_tensor"})

# squashed (lower-case letters only) op text -> COLL_OPS member; first hit wins, so the longer
# names that contain shorter ones come first
_OP_KEYS = (
    ("sendrecv", "send_recv"),
    ("isendirecv", "send_recv"),
    ("reducescatter", "reduce_scatter"),
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("bcast", "broadcast"),
    ("barrier", "barrier"),
    ("scatter", "scatter"),
    ("gather", "gather"),
    ("reduce", "reduce"),
    ("send", "send"),
    ("recv", "recv"),
)
# NCCL < 2.19's generic kernel: named for send/recv, it runs any op without a kernel of its own
_OLD_GENERIC_KERNEL = re.compile(
    r"^(?:void\s+)?ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t\b", re.IGNORECASE
)
# metadata op -> the ops of the kernel names that run it: c10d builds all_to_all, scatter and
# gather from grouped send/recv, and a NCCL barrier is a one-element all_reduce
_RUN_AS = {
    "send": frozenset({"send_recv"}),
    "recv": frozenset({"send_recv"}),
    "all_to_all": frozenset({"send_recv"}),
    "scatter": frozenset({"send_recv"}),
    "gather": frozenset({"send_recv"}),
    "barrier": frozenset({"all_reduce"}),
}
OP_SOURCES = ("metadata", "name")  # where a row's coll_op came from (rank_trace.py)
_KERNEL_PREFIXES = ("nccldevkernel", "ncclkernel", "nccl", "rccl", "hccl", "hcom", "msccl")
_NOT_LETTER = re.compile(r"[^a-z]+")


class EventClass(NamedTuple):
    """Everything the reader stores about an event that depends on its name and category."""

    kind: str
    coll_op: str | None = None
    phase: str | None = None
    step: int | None = None
    device_side: bool = False
    op_source: str | None = None  # "metadata" | "name" on rows with a coll_op


def normalise_coll_op(text: str) -> str:
    """The COLL_OPS member that a collective's name or "Collective name" value stands for.

    Works on the op part only (after `::` or `:`, before a kernel signature's `(`), squashed to
    lower-case letters, so `AllReduce`, `all_reduce`, `allreduce_` and `_allgather_base` compare
    alike. "unknown" when nothing matches (e.g. `ncclDevKernel_Generic`, `nccl:coalesced`).
    """
    op = text.split("(", 1)[0]
    if "::" in op:
        op = op.rsplit("::", 1)[1]
    elif ":" in op:
        op = op.split(":", 1)[1]
    squashed = _NOT_LETTER.sub("", op.lower())
    for prefix in _KERNEL_PREFIXES:
        if squashed.startswith(prefix):
            squashed = squashed[len(prefix) :]
            break
    for key, member in _OP_KEYS:
        if key in squashed:
            return member
    return UNKNOWN_OP


def kernel_name_op(name: str) -> str:
    """The op a communication kernel's name alone says; "unknown" for the generic kernels."""
    return UNKNOWN_OP if _OLD_GENERIC_KERNEL.match(name) else normalise_coll_op(name)


def ops_agree(name_op: str, metadata_op: str) -> bool:
    """Whether a kernel named for `name_op` can run the collective the metadata calls
    `metadata_op` (the same op, or the primitive NCCL builds it from)."""
    return name_op == metadata_op or name_op in _RUN_AS.get(metadata_op, ())


def is_comm_kernel(name: str) -> bool:
    """A device kernel of a communication library (NCCL, RCCL, HCCL, MSCCL, oneCCL)."""
    return _COMM_KERNEL.search(name) is not None


def step_of(name: str) -> int | None:
    """N of a `ProfilerStep#N` range, else None."""
    m = _STEP.match(name)
    return int(m.group(1)) if m else None


def phase_of(name: str) -> str | None:
    """The training phase a host range marks: torchscale's own ranges and PyTorch's usual ones.

    `torchscale:injected_delay` is *not* a phase: it is work inside one (see `classify`).
    """
    if name.startswith(RANGE_PREFIX):
        phase = name[len(RANGE_PREFIX) :]
        return phase if phase in OWN_WORK_PHASES else None
    if name.startswith("enumerate(DataLoader)#") and name.endswith("__next__"):
        return "data"
    if name.startswith("Optimizer.step#"):
        return "optimizer"
    if name in _FORWARD_RANGES:
        return "forward"
    return None


def _args_op(args: Mapping[str, Any] | None) -> str | None:
    """The raw "Collective name" arg, when the event carries one."""
    if not args:
        return None
    value = args.get("Collective name")
    return value if isinstance(value, str) and value else None


def classify_event(name: str, cat: str, args: Mapping[str, Any] | None = None) -> EventClass | None:
    """Classify one complete event; None for events the table leaves out (see module doc)."""
    if cat in DROPPED_CATS:
        return None
    if cat in DEVICE_CATS or cat.startswith("gpu_"):
        return _device_event(name, cat, args)
    if cat == "cuda_runtime" or cat == "cuda_driver" or cat.endswith(("_runtime", "_driver")):
        return EventClass("runtime")
    return _host_event(name, args)


def _device_event(name: str, cat: str, args: Mapping[str, Any] | None) -> EventClass:
    if is_comm_kernel(name):
        arg_op = _args_op(args)
        op = normalise_coll_op(arg_op) if arg_op else UNKNOWN_OP
        if op != UNKNOWN_OP:  # the kernel's own collective args: metadata before name
            return EventClass("collective", coll_op=op, device_side=True, op_source="metadata")
        op = kernel_name_op(name)
        return EventClass("collective", coll_op=op, device_side=True, op_source="name")
    low = name.lower()
    if cat in MEMORY_CATS or low.startswith(("memcpy", "memset", "dma_")):
        return EventClass("memory", device_side=True)
    return EventClass("kernel", device_side=True)


def _host_event(name: str, args: Mapping[str, Any] | None) -> EventClass:
    if name.startswith("ProfilerStep#"):
        step = step_of(name)
        if step is not None:
            return EventClass("step", step=step)
    phase = phase_of(name)
    if phase is not None:
        return EventClass("phase", phase=phase)
    if name.startswith(_CPU_COLLECTIVE_PREFIXES):
        return EventClass("collective", coll_op=normalise_coll_op(name), op_source="name")
    if name.startswith(_CALL_PREFIXES):
        return EventClass("collective_call", coll_op=normalise_coll_op(name), op_source="name")
    if name in _WAIT_OPS:
        return EventClass("comm_wait")
    if name.startswith(_C10D_PREFIXES):
        op = normalise_coll_op(name)
        if op == UNKNOWN_OP:
            return EventClass("cpu_op")
        return EventClass("collective_call", coll_op=op, op_source="name")
    if name == "record_param_comms":
        arg_op = _args_op(args)
        if arg_op is None:
            return EventClass("collective_call", coll_op=UNKNOWN_OP, op_source="name")
        if arg_op.strip("_").lower() == "wait":
            return EventClass("comm_wait")
        if arg_op.strip("_").lower() in _NOT_COLLECTIVE:
            return EventClass("cpu_op")
        op = normalise_coll_op(arg_op)
        return EventClass("collective_call", coll_op=op, op_source="metadata")
    return EventClass("cpu_op")
