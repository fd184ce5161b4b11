"""Words for a cell's warnings (`CellWarning.finding`): each writer stores a code
and its figures; the sentence every surface shows is made here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.busy_machine import BUSY_NOTE
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import as_set, cv

TF32_HOW = (
    "for TF32 set launcher.env TORCH_ALLOW_TF32_CUBLAS_OVERRIDE: '1', or train in bf16 "
    "(precision: bf16)"
)


def _sync_variance(f: Mapping[str, Any]) -> str:
    # above 1 (other parts varying against the wait) a share would read as impossible; None:
    # not recorded
    share = f["share"]
    part = f"{min(share, 1.0) * 100:.0f} % of" if share is not None and share < 1.005 else "most of"
    return (
        f"High variance in gradient sync time: CV {cv(f['wait_cv'])}, {part} the step-time "
        f"variance (step CV {cv(f['step_cv'])} > {cv(f['threshold'])}): the network or "
        "waiting for peers, not compute"
    )


def _injected(f: Mapping[str, Any]) -> str:
    ms = as_set(f["ms"])
    return (
        f"Injected delay (--inject-delay {f['rank']}:{f['phase']}:{ms}): rank {f['rank']} "
        f"sleeps {ms} ms in its {f['phase']} phase every step: the straggler and load "
        "imbalance it causes are artificial"
    )


def _busy(f: Mapping[str, Any]) -> str:
    from torchscale.contracts import wording

    parts = []
    for host in f["hosts"]:
        said = wording.say(Finding(code=host["code"], figures=host["figures"]))
        peak = host.get("load_avg_max")
        load = f"; load average up to {peak:.1f}" if peak is not None else ""
        parts.append(f"on {host['host']}, {said}{load}")
    return f"busy machine: {'; '.join(parts)} during the measured windows; {BUSY_NOTE}"


def _gpu_shared(f: Mapping[str, Any]) -> str:
    shared = []
    for host in f["hosts"]:
        pids = host["pids"]
        which = f"PID {', '.join(map(str, pids))}" if pids else "PIDs of another PID namespace"
        shared.append(f"{host['host']}: {host['processes']} ({which})")
    total = sum(host["processes"] for host in f["hosts"])
    return (
        f"GPU shared: {total} other compute process(es) on the cell's GPUs during the "
        f"measured windows ({'; '.join(shared)}); their kernels time-share the GPU with the "
        f"cell's: {BUSY_NOTE}"
    )


def _throttled(f: Mapping[str, Any]) -> str:
    ranks = "; ".join(f"rank {r['rank']} ({r['gpu']})" for r in f["ranks"])
    return (
        f"GPU clocks throttled during the measured windows: {ranks} (the figures were measured "
        "below full clocks; each GPU's clock verdict says why)"
    )


def _compiled_in_windows(f: Mapping[str, Any]) -> str:
    what = (
        f"{f['frames']} frame(s), {f['compile_s']:.2f} s of compiling"
        + (f", {f['graph_breaks']} graph break(s)" if f["graph_breaks"] else "")
        + f" on rank(s) {', '.join(map(str, f['ranks']))}"
    )
    if f["first_compile"]:
        return (
            f"torch.compile compiled inside the measured windows ({what}): with "
            "measurement.warmup_steps 0 its first compile runs in the first window, whose "
            "steps are timed with the compile in them; give warmup_steps >= 1"
        )
    return (
        f"torch.compile recompiled inside the measured windows ({what}): a guard failed or a "
        "new code path ran after the warm-up, and those steps are timed with the compile in "
        "them (TORCH_LOGS=recompiles names the failed guard)"
    )


def _compile_off(f: Mapping[str, Any]) -> str:
    return (
        f"training.compile off: {f['parameters']:,} parameters, under "
        f"{f['min_parameters'] // 1_000_000} M, so its step is launch-bound and compiling "
        "(seconds per cell) would not pay back; set training.compile: true to compile it"
    )


def _exit_after_result(f: Mapping[str, Any]) -> str:
    return (
        f"{f.get('program', 'torchrun')} exited with {f['returncode']} after the result was "
        f"written (shutdown failure; measurement kept): see {f['log_dir']}"
    )


def _shared_gpu(f: Mapping[str, Any]) -> str:
    gpus = "one GPU" if f.get("gpus", 1) == 1 else f"each of {f['gpus']} GPUs"
    return (
        f"{f['ranks']} ranks shared {gpus} over {f.get('backend', 'gloo')} "
        "(launcher.ranks_per_gpu): it ran torchscale's multi-rank CUDA path, not a "
        "multi-GPU job (no NCCL, no NVLink, the ranks' kernels queued on one GPU); never "
        "ranked, compared or scaled with cells that had a GPU per rank"
    )


PHRASES: Phrases = {
    "warning.step_time_cv": "High variance in step time: CV {cv:cv} > {threshold:cv}",
    "warning.sync_variance": _sync_variance,
    "warning.injected_delay": _injected,
    "warning.busy_machine": _busy,
    "warning.gpu_shared": _gpu_shared,
    "warning.throttled": _throttled,
    "warning.compiled_in_windows": _compiled_in_windows,
    "warning.tf32_off": (
        (
            "fp32 matmuls with TF32 off (torch's default): slower than TF32 on this GPU (dense "
            "peak {fp32_tflops:set} against {tf32_tflops:set} TFLOP/s); "
        )
        + TF32_HOW
    ),
    "warning.cpu_amp": "amp (fp16 autocast) on CPU is slow and not representative of GPUs",
    "warning.cpu_oversubscribed": (
        "{ranks} CPU ranks on {cores} core(s): oversubscribed, timings include contention"
    ),
    "warning.compile_off_small_model": _compile_off,
    "warning.slurm_few_cpus": (
        "the Slurm step has {cpus} CPU(s) on {where} for {ranks} rank(s): ranks, torchrun and "
        "NCCL's threads share them and the figures are CPU-bound; set "
        "launcher.slurm.cpus_per_task (or exclusive: true)"
    ),
    "warning.killed_after_result": (
        "the ranks had not exited {grace_s:set} s after the result was written: killed in their "
        "shutdown; measurement kept: see {log_dir}"
    ),
    "warning.timed_out_after_result": (
        "the ranks had not exited {timeout_s:set} s after the launch (the cell timeout) although "
        "the result was written: killed in their shutdown; measurement kept: see {log_dir}"
    ),
    "warning.exit_after_result": _exit_after_result,
    "warning.shared_gpu": _shared_gpu,
}


def warning_words(warning: Any) -> str:
    """A `CellWarning` in words, by its finding."""
    from torchscale.contracts import wording

    return wording.say(warning.finding)
