"""The live smoke test: a real torchrun whose ranks run checked collectives.

The plan (which backend, how many processes, which device) is pure data; the command comes from
the one torchrun builder every launch uses (launch/torchrun.py), `run_smoke` runs it through the
one launch path (launch/attempt.py), and `judge_smoke` turns what it left (the exit, rank 0's
verdict, the root cause of a failure) into a check result.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.rank_programs import ENTRY, entry_args
from torchscale.contracts.versioned import read_json_object
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.launch.torchrun import LaunchCommand, torchrun_command
from torchscale.orchestration.validate.check_context import Device, ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    failed,
    passed,
    skipped,
)

SMOKE_ELEMENTS = 1 << 20  # 4 MiB of float32: big enough to leave the latency regime
SMOKE_ITERS = 10
CPU_RANKS = 2  # gloo ranks on the CPU: the fewest that prove multi-process rendezvous
WORKER_MODULE = ENTRY
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class SmokeSpec:
    backend: str  # "nccl" or "gloo"
    nproc: int
    device: Device

    @property
    def label(self) -> str:
        return self.backend + " x" + str(self.nproc) + " on " + self.device


def plan_smoke(device: Device, gpu_count: int) -> list[SmokeSpec]:
    """Which smoke runs prove the validated path works here (docs/validate.md, 'The smoke
    test'): a node is only ready when every GPU it offers works, and NCCL needs one GPU per
    rank, so one GPU adds 2 gloo ranks to prove multi-process rendezvous."""
    if device == "cuda" and gpu_count >= 2:
        return [SmokeSpec("nccl", gpu_count, "cuda")]
    if device == "cuda" and gpu_count == 1:
        return [SmokeSpec("nccl", 1, "cuda"), SmokeSpec("gloo", CPU_RANKS, "cpu")]
    return [SmokeSpec("gloo", CPU_RANKS, "cpu")]


def smoke_launch(spec: SmokeSpec, workdir: Path, base_env: dict[str, str]) -> LaunchCommand:
    """The torchrun of one smoke run: the shared builder, one OpenMP thread per rank, the
    worker's verdict written to `workdir/result.json`."""
    options = {
        "backend": spec.backend,
        "device": spec.device,
        "elements": SMOKE_ELEMENTS,
        "iters": SMOKE_ITERS,
        "out": workdir / RESULT_FILE,
    }
    worker_args = [arg for name, value in options.items() for arg in (f"--{name}", str(value))]
    return torchrun_command(
        WORKER_MODULE,
        entry_args("smoke", worker_args),
        nproc=spec.nproc,
        device=spec.device,
        log_dir=workdir,
        base_env=base_env,
        omp_num_threads=1,
    )


def judge_smoke(
    spec: SmokeSpec, outcome: ProcessOutcome, verdict: dict[str, Any] | None, root_cause: str | None
) -> CheckResult:
    """Turn one smoke run's exit status and JSON verdict into a check result."""
    title = f"Smoke test ({spec.label})"
    id = f"smoke_{spec.backend}_{spec.device}"
    data: dict[str, Any] = {
        "spec": {"backend": spec.backend, "nproc": spec.nproc, "device": spec.device},
        "wall_s": round(outcome.wall_s, 2),
    }
    tail = outcome.log_tail(8)
    logs = {"log": str(outcome.log_path), "ranks_dir": str(outcome.log_path.parent / "ranks")}
    if outcome.timed_out:
        hung = Finding(code="smoke.hung", figures={"wall_s": outcome.wall_s})
        return failed(id, title, hung, Finding(code="smoke.fix_hung", figures=logs), **data)
    if outcome.returncode != 0 or verdict is None:
        cause = root_cause or (tail.splitlines()[-1] if tail else "no output")
        exited = {"returncode": outcome.returncode, "cause": cause}
        return failed(
            id,
            title,
            Finding(code="smoke.exited", figures=exited),
            Finding(code="smoke.fix_logs", figures=logs),
            log_tail=tail,
            **data,
        )
    data["result"] = verdict
    if verdict.get("wrong_elements", 1) != 0 or not verdict.get("all_gather_ok", False):
        keys = ("wrong_elements", "expected_value", "all_gather_ranks")
        wrong = Finding(code="smoke.wrong_results", figures={k: verdict.get(k) for k in keys})
        return failed(id, title, wrong, Finding(code="smoke.fix_corrupt"), **data)
    world = verdict.get("world_size")
    if world != spec.nproc:  # a node is ready only if every planned rank (GPU) took part
        few = Finding(code="smoke.too_few_ranks", figures={"world": world, "planned": spec.nproc})
        return failed(id, title, few, Finding(code="smoke.fix_ranks", figures=logs), **data)
    # busbw = algbw x 2(n-1)/n measures the links between ranks; one rank crosses none
    figures = {
        "world": world,
        "bytes": verdict["bytes"],
        "seconds_per_all_reduce": verdict["seconds_per_all_reduce"],
        "busbw_gbps": verdict.get("busbw_gbps"),
        "wall_s": outcome.wall_s,
    }
    return passed(id, title, Finding(code="smoke.passed", figures=figures), **data)


def run_smoke(spec: SmokeSpec, timeout_s: float, base_env: dict[str, str]) -> CheckResult:
    """Run one smoke test for real; its logs are kept (and named) only when it fails."""
    workdir = Path(tempfile.mkdtemp(prefix="torchscale-validate-"))
    command = smoke_launch(spec, workdir, base_env)
    attempt = run_attempt(command, timeout_s, lambda: read_json_object(workdir / RESULT_FILE))
    failure = attempt.launch_failure
    root_cause = failure.exception if failure is not None else None
    result = judge_smoke(spec, attempt.outcome, attempt.written, root_cause)
    if result.status is CheckStatus.PASS:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def check_smoke(ctx: ValidateContext, base_env: dict[str, str]) -> list[CheckResult]:
    if ctx.quick:
        return [skipped("smoke", "Smoke test", Finding(code="smoke.quick"))]
    if ctx.torch.module is None:
        return [skipped("smoke", "Smoke test", Finding(code="smoke.no_torch"))]
    gpu_count = ctx.torch.cuda_gpu_count if ctx.device == "cuda" else 0
    return [
        run_smoke(spec, ctx.smoke_timeout_s, base_env) for spec in plan_smoke(ctx.device, gpu_count)
    ]
