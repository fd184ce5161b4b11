"""Synthetic multi-rank torch.profiler (Kineto) traces with a known straggler.

Why: real multi-rank traces whose straggler, phase and delay are *known* are rare, and the
shared real ones are a few MB. Tests, the parser benchmark and the analysis benchmark need
both: small traces with a planted answer, and traces of hundreds of MB per rank.

The files look like what Kineto writes (pretty-printed, one event per block, metadata before
and after `traceEvents`): per step a `ProfilerStep#N` range, `torchscale:<phase>` ranges with
the usual PyTorch ranges inside (DataLoader `__next__`, `DistributedDataParallel.forward`,
`Optimizer.step#SGD.step`), aten ops, and on GPU a `cudaLaunchKernel` per op with its kernel
(same correlation id, flow events), memcpys, and NCCL kernels (`ncclDevKernel_AllReduce_*`)
whose args carry `record_param_comms`-style metadata. On CPU the collectives are
`gloo:all_reduce` ranges on `pt_gloo_runloop` threads. Collectives end at the same global
instant on every rank (the last arrival plus the transfer), so a slow rank makes the others
wait inside the collective, exactly as in a real blocking all-reduce. Every rank's timestamps
are shifted by its own clock skew. Generation streams step by step: memory stays small
whatever the file size.
"""

from __future__ import annotations

import contextlib
import gzip
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from torchscale.contracts.step_phases import INJECTED_DELAY_RANGE, phase_range

PHASE_SHARE = {"data": 0.08, "forward": 0.32, "backward": 0.48, "optimizer": 0.12}
PHASE_US = {"data": 1500.0, "forward": 9000.0, "backward": 16000.0, "optimizer": 2500.0}
BASE_TS = 4_479_732_833_000.0  # Kineto-like "us since boot" origin
BASE_TIME_NS = 1_790_857_026_000_000_000
COMM_STREAM = 20
COMPUTE_STREAM = 7

_CPU_OPS = {
    "data": ("aten::to", "aten::_to_copy", "aten::copy_", "aten::empty_strided"),
    "forward": ("aten::linear", "aten::addmm", "aten::relu", "aten::layer_norm", "aten::matmul"),
    "backward": (
        "autograd::engine::evaluate_function: AddmmBackward0",
        "AddmmBackward0",
        "aten::mm",
        "aten::threshold_backward",
        "autograd::engine::evaluate_function: NativeLayerNormBackward0",
        "torch::distributed::reducer::mul_out",
    ),
    "optimizer": ("aten::add_", "aten::mul_", "aten::_foreach_add_", "aten::zero_"),
}
_KERNELS = (
    "ampere_sgemm_128x64_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)",
    "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
    "(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >",
)
_NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


@dataclass
class _Rank:
    """One rank's open file and its running counters."""

    rank: int
    out: IO[str]
    pid: int
    skew: float
    first: bool = True
    ext_id: int = 0
    correlation: int = 1000
    seq: int = 0
    comm_free: float = 0.0  # global time the comm stream is free again
    flows: list[str] = field(default_factory=list)


def write_synthetic_traces(
    out_dir: Path,
    *,
    ranks: int,
    steps: int,
    straggler: int | None = None,
    delay_us: float = 0.0,
    phase: str = "backward",
    skew_us: float | Sequence[float] | None = None,
    events_per_step: int = 240,
    gpu: bool = True,
    seed: int = 0,
    buckets: int = 4,
    first_step: int = 1,
    compress: bool = False,
) -> list[Path]:
    """Write `rank<k>.trace.json[.gz]` for k in 0..ranks-1 into `out_dir`; return the paths.

    `straggler` sleeps `delay_us` every step in `phase` (inside a `torchscale:injected_delay`
    range, as `--inject-delay` does). `skew_us`: per-rank clock offsets, or one number X to
    draw offsets uniformly in [-X, X] (rank 0 stays at 0), or None for no skew.
    `events_per_step` is the approximate number of complete events per rank and step.
    """
    if ranks < 1 or steps < 1:
        raise ValueError("ranks and steps must be >= 1")
    if phase not in PHASE_US:
        raise ValueError(f"phase must be one of {sorted(PHASE_US)}, not {phase!r}")
    if straggler is not None and not 0 <= straggler < ranks:
        raise ValueError(f"straggler {straggler} is not a rank of {ranks}")
    rng = random.Random(seed)  # noqa: S311 (test data, not cryptography)
    skews = _skews(ranks, skew_us, rng)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".trace.json.gz" if compress else ".trace.json"
    paths = [out_dir / f"rank{r}{suffix}" for r in range(ranks)]
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(_open_out(path, compress)) for path in paths]
        states = [_Rank(r, f, 20_000 + 97 * r, skews[r]) for r, f in enumerate(files)]
        for st in states:
            _write_header(st, ranks, gpu)
        ops_per_step = max(8, events_per_step // (3 if gpu else 1))
        starts = [100.0 + rng.uniform(0, 20) for _ in range(ranks)]
        for i in range(steps):
            starts = _write_step(
                states,
                first_step + i,
                starts,
                ops_per_step,
                gpu,
                buckets,
                rng,
                straggler,
                delay_us,
                phase,
            )
        for st in states:
            _write_footer(st, gpu)
    return paths


def _open_out(path: Path, compress: bool) -> IO[str]:
    if compress:
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=1)
    return path.open("w", encoding="utf-8")


def _skews(ranks: int, skew_us: float | Sequence[float] | None, rng: random.Random) -> list[float]:
    if skew_us is None:
        return [0.0] * ranks
    if isinstance(skew_us, (int, float)):
        return [0.0] + [rng.uniform(-skew_us, skew_us) for _ in range(ranks - 1)]
    if len(skew_us) != ranks:
        raise ValueError(f"skew_us has {len(skew_us)} values for {ranks} ranks")
    return [float(s) for s in skew_us]


def _write_header(st: _Rank, ranks: int, gpu: bool) -> None:
    backend = "nccl" if gpu else "gloo"
    cfg = "cuda:nccl" if gpu else "cpu:gloo,cuda:gloo"
    rank_list = ", ".join(str(r) for r in range(ranks))
    devices = ""
    if gpu:
        devices = ",\n".join(
            f'    {{"id": {d}, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072,'
            f' "computeMajor": 9, "computeMinor": 0, "numSms": 132}}'
            for d in range(min(ranks, 8))
        )
    st.out.write(
        "{\n"
        '  "schemaVersion": 1,\n'
        f'  "deviceProperties": [\n{devices}\n  ],\n'
        f'  "distributedInfo": {{"backend": "{backend}", "rank": {st.rank}, '
        f'"world_size": {ranks}, "pg_count": 1, "pg_config": [{{"pg_name": "0", '
        f'"pg_desc": "default_pg", "backend_config": "{cfg}", "pg_size": {ranks}, '
        f'"ranks": [{rank_list}]}}]}},\n'
        '  "record_shapes": 1,\n'
        '  "traceEvents": [\n'
    )
    meta = [
        ("process_name", st.pid, 0, '"name": "python3"'),
        ("process_labels", st.pid, 0, '"labels": "CPU"'),
        ("thread_name", st.pid, st.pid, f'"name": "thread {st.pid} (python3)"'),
    ]
    if gpu:
        for stream in (COMPUTE_STREAM, COMM_STREAM):
            meta.append(("thread_name", st.rank, stream, f'"name": "stream {stream} "'))
    else:
        for k in (1, 2):
            meta.append(
                (
                    "thread_name",
                    st.pid,
                    st.pid + k,
                    f'"name": "thread {st.pid + k} (pt_gloo_runloop)"',
                )
            )
    for name, pid, tid, args in meta:
        _emit(
            st,
            f'  {{\n    "name": "{name}", "ph": "M", "ts": {BASE_TS:.3f}, "pid": {pid}, '
            f'"tid": {tid},\n    "args": {{{args}}}\n  }}',
        )


def _write_footer(st: _Rank, gpu: bool) -> None:
    for line in st.flows:
        _emit(st, line)
    st.flows.clear()
    _emit(
        st,
        f'  {{\n    "name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",'
        f' "ts": {BASE_TS + st.skew + 1e9:.3f}\n  }}',
    )
    st.out.write(
        "\n  ],\n"
        f'  "traceName": "rank{st.rank}.trace.json",\n'
        '  "displayTimeUnit": "ms",\n'
        f'  "baseTimeNanoseconds": {BASE_TIME_NS}\n'
        "}\n"
    )


def _emit(st: _Rank, text: str) -> None:
    st.out.write(text if st.first else ",\n" + text)
    st.first = False


def _x(
    st: _Rank,
    name: str,
    cat: str,
    tid: int,
    ts: float,
    dur: float,
    args: str,
    pid: int | None = None,
) -> None:
    """One complete event, on this rank's own clock."""
    st.ext_id += 1
    pid = st.pid if pid is None else pid
    _emit(
        st,
        f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid},'
        f' "tid": {tid},\n    "ts": {BASE_TS + ts + st.skew:.3f}, "dur": {dur:.3f},\n'
        f'    "args": {{\n      "External id": {st.ext_id}, "Record function id": 0, '
        f'"Ev Idx": {st.ext_id}{args}\n    }}\n  }}',
    )


def _op(st: _Rank, name: str, ts: float, dur: float, gpu: bool, rng: random.Random) -> None:
    """An aten op; on GPU with its launch, its kernel and the flow arrows between them."""
    _x(
        st,
        name,
        "cpu_op",
        st.pid,
        ts,
        dur,
        ', "Input Dims": [[32, 256], [256, 256]], "Input type": ["float", "float"]',
    )
    if not gpu:
        return
    st.correlation += 1
    c = st.correlation
    launch_ts = ts + dur * 0.5
    _x(
        st,
        "cudaLaunchKernel",
        "cuda_runtime",
        st.pid,
        launch_ts,
        min(8.0, dur * 0.4),
        f', "cbid": 211, "correlation": {c}',
    )
    kernel = _KERNELS[rng.randrange(len(_KERNELS))]
    _x(
        st,
        kernel,
        "kernel",
        COMPUTE_STREAM,
        launch_ts + 6.0,
        dur * 0.8,
        f', "queued": 0, "device": {st.rank % 8}, "context": 1, "stream": {COMPUTE_STREAM}, '
        f'"correlation": {c}, "registers per thread": 64, "shared memory": 0, '
        f'"blocks per SM": 1.5, "warps per SM": 6.0, "grid": [264, 1, 1], "block": [256, 1, 1], '
        f'"est. achieved occupancy %": 50',
        pid=st.rank,
    )
    st.flows.append(
        f'  {{"ph": "s", "id": {c}, "pid": {st.pid}, "tid": {st.pid}, '
        f'"ts": {BASE_TS + launch_ts + st.skew:.3f}, "cat": "ac2g", "name": "ac2g"}}'
    )
    if len(st.flows) > 256:
        for line in st.flows:
            _emit(st, line)
        st.flows.clear()


def _ops(
    st: _Rank, phase: str, t0: float, total: float, n: int, gpu: bool, rng: random.Random
) -> float:
    """`n` back-to-back ops of `phase` filling `total` us from `t0`; returns the end."""
    names = _CPU_OPS[phase]
    each = total / max(n, 1)
    t = t0
    for _ in range(n):
        dur = each * rng.uniform(0.8, 0.95)
        _op(st, names[rng.randrange(len(names))], t, dur, gpu, rng)
        t += each
    return t


def _write_step(
    states: list[_Rank],
    step: int,
    starts: list[float],
    ops: int,
    gpu: bool,
    buckets: int,
    rng: random.Random,
    straggler: int | None,
    delay_us: float,
    phase: str,
) -> list[float]:
    """Write one step on every rank; return every rank's start of the next step."""
    n_ops = {p: max(1, round(ops * s)) for p, s in PHASE_SHARE.items()}
    ends = list(starts)
    bwd_begin: list[float] = []
    # data and forward: independent per rank
    for st, t in zip(states, starts, strict=True):
        slow = st.rank == straggler
        t = _phase(st, "data", t, n_ops, gpu, rng, slow and phase == "data", delay_us)
        t = _phase(st, "forward", t, n_ops, gpu, rng, slow and phase == "forward", delay_us)
        bwd_begin.append(t)
    # backward: bucket by bucket; each all-reduce ends together on every rank
    per_bucket = max(1, n_ops["backward"] // buckets)
    cpu_t = list(bwd_begin)
    jitter = [rng.uniform(0.97, 1.03) for _ in states]
    for b in range(buckets):
        arrive: list[float] = []
        for st, t in zip(states, cpu_t, strict=True):
            compute = PHASE_US["backward"] * jitter[st.rank] / buckets
            if b == 0 and st.rank == straggler and phase == "backward" and delay_us > 0:
                _x(st, INJECTED_DELAY_RANGE, "user_annotation", st.pid, t, delay_us, "")
                t += delay_us
            t = _ops(st, "backward", t, compute, per_bucket, gpu, rng)
            arrive.append(t)
        transfer = 400.0 * rng.uniform(0.95, 1.05)
        starts_k = [max(a + 12.0, st.comm_free) for a, st in zip(arrive, states, strict=True)]
        end = max(starts_k) + transfer
        nelems = 6_637_568 // (b + 1)
        for st, a, ks in zip(states, arrive, starts_k, strict=True):
            _collective(st, len(states), a, ks, end, nelems, gpu, b)
            st.comm_free = end
        cpu_t = [a + 40.0 for a in arrive]
    # backward range ends once the last all-reduce is done; then the optimizer
    for st in states:
        bwd_end = max(cpu_t[st.rank], st.comm_free) + 5.0
        _x(
            st,
            phase_range("backward"),
            "user_annotation",
            st.pid,
            bwd_begin[st.rank],
            bwd_end - bwd_begin[st.rank],
            "",
        )
        slow = st.rank == straggler and phase == "optimizer"
        t = _phase(st, "optimizer", bwd_end, n_ops, gpu, rng, slow, delay_us)
        _x(
            st,
            f"ProfilerStep#{step}",
            "user_annotation",
            st.pid,
            starts[st.rank],
            t - starts[st.rank],
            "",
        )
        ends[st.rank] = t + 15.0
    return ends


def _phase(
    st: _Rank,
    phase: str,
    t: float,
    n_ops: dict[str, int],
    gpu: bool,
    rng: random.Random,
    slow: bool,
    delay_us: float,
) -> float:
    """A `torchscale:<phase>` range with its usual PyTorch range and ops inside."""
    begin = t
    if slow and delay_us > 0:
        _x(st, INJECTED_DELAY_RANGE, "user_annotation", st.pid, t, delay_us, "")
        t += delay_us
    compute = PHASE_US[phase] * rng.uniform(0.97, 1.03)
    inner = {
        "data": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "forward": "DistributedDataParallel.forward",
        "optimizer": "Optimizer.step#SGD.step",
    }[phase]
    end = _ops(st, phase, t + 2.0, compute, n_ops[phase], gpu, rng)
    _x(st, inner, "user_annotation", st.pid, t + 1.0, end - t, "")
    if phase == "data" and gpu:
        st.correlation += 1
        _x(
            st,
            "Memcpy HtoD (Pinned -> Device)",
            "gpu_memcpy",
            COMPUTE_STREAM,
            end - 20.0,
            15.0,
            f', "device": {st.rank % 8}, "context": 1, "stream": {COMPUTE_STREAM}, '
            f'"correlation": {st.correlation}, "bytes": 3145728, "memory bandwidth (GB/s)": 21.0',
            pid=st.rank,
        )
    end += 2.0
    _x(st, phase_range(phase), "user_annotation", st.pid, begin, end - begin, "")
    return end


def _collective(
    st: _Rank,
    world: int,
    call: float,
    start: float,
    end: float,
    nelems: int,
    gpu: bool,
    bucket: int,
) -> None:
    """One all-reduce: host call and, on GPU, the NCCL kernel; on CPU the gloo op."""
    st.seq += 1
    ranks = ", ".join(str(r) for r in range(min(world, 30)))
    meta = (
        f', "Collective name": "allreduce", "In msg nelems": {nelems}, '
        f'"Out msg nelems": {nelems}, "Group size": {world}, "dtype": "Float", '
        f'"In split size": "[]", "Out split size": "[]", "Process Group Name": "0", '
        f'"Process Group Description": "default_pg", "Process Group Ranks": "[{ranks}]", '
        f'"Seq": {st.seq}'
    )
    _x(st, "c10d::allreduce_", "cpu_op", st.pid, call, 30.0, "")
    if gpu:
        _x(
            st,
            "record_param_comms",
            "cpu_op",
            st.pid,
            call + 2.0,
            25.0,
            meta + f', "Rank": {st.rank}',
        )
        _x(st, "nccl:all_reduce", "user_annotation", st.pid, call + 5.0, 20.0, "")
        st.correlation += 1
        _x(
            st,
            "cudaLaunchKernel",
            "cuda_runtime",
            st.pid,
            call + 8.0,
            10.0,
            f', "cbid": 211, "correlation": {st.correlation}',
        )
        _x(
            st,
            _NCCL_KERNEL,
            "kernel",
            COMM_STREAM,
            start,
            end - start,
            f', "queued": 0, "device": {st.rank % 8}, "context": 1, "stream": {COMM_STREAM}, '
            f'"correlation": {st.correlation}, "registers per thread": 96, "shared memory": 0, '
            f'"grid": [2, 1, 1], "block": [640, 1, 1]{meta}',
            pid=st.rank,
        )
    else:
        _x(
            st,
            "gloo:all_reduce",
            "user_annotation",
            st.pid + 1 + bucket % 2,
            start,
            end - start,
            "",
        )
