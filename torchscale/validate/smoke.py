"""The live smoke test: a real torchrun with 2 processes doing checked collectives.

The plan (which backend, how many processes, which device) and the command (argv, env) are
pure data; `run_smoke` executes them and `judge_smoke` turns the outcome into a check result.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.launch.environment import child_environment
from torchscale.launch.process import ProcessOutcome, run_logged
from torchscale.validate.context import Device, ValidateContext
from torchscale.validate.model import CheckResult, Status, failed, passed, skipped

SMOKE_ELEMENTS = 1 << 20  # 4 MiB of float32: big enough to leave the latency regime
SMOKE_ITERS = 10
SMOKE_PROCESSES = 2


@dataclass(frozen=True)
class SmokeSpec:
    backend: str  # "nccl" or "gloo"
    nproc: int
    device: str  # "cuda" or "cpu"

    @property
    def label(self) -> str:
        return f"{self.backend} x{self.nproc} on {self.device}"


def plan_smoke(device: Device, gpu_count: int) -> list[SmokeSpec]:
    """Which smoke runs prove the path being validated works on this node.

    NCCL needs one GPU per rank: with >= 2 GPUs, 2 NCCL ranks; with exactly 1, a 1-rank NCCL
    run proves the library and kernels work and 2 gloo ranks prove multi-process rendezvous;
    without GPUs (or --device cpu), 2 gloo ranks on the CPU.
    """
    if device == "cuda" and gpu_count >= SMOKE_PROCESSES:
        return [SmokeSpec("nccl", SMOKE_PROCESSES, "cuda")]
    if device == "cuda" and gpu_count == 1:
        return [SmokeSpec("nccl", 1, "cuda"), SmokeSpec("gloo", SMOKE_PROCESSES, "cpu")]
    return [SmokeSpec("gloo", SMOKE_PROCESSES, "cpu")]


def smoke_command(
    spec: SmokeSpec, result_file: Path, base_env: dict[str, str], python: str = sys.executable
) -> tuple[list[str], dict[str, str]]:
    """argv and environment of one smoke run (torchrun via the current interpreter)."""
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={spec.nproc}",
        "--max-restarts=0",
        "-m",
        "torchscale.validate.smoke_worker",
        "--backend",
        spec.backend,
        "--device",
        spec.device,
        "--elements",
        str(SMOKE_ELEMENTS),
        "--iters",
        str(SMOKE_ITERS),
        "--out",
        str(result_file),
    ]
    env = child_environment(
        base_env,
        {
            "OMP_NUM_THREADS": "1",
            "TORCHELASTIC_ERROR_FILE": str(result_file.with_suffix(".error.json")),
            "PYTHONUNBUFFERED": "1",
        },
    )
    return argv, env


def _root_cause(error_file: Path) -> str | None:
    """The failing rank's message from torchrun's error file (written by @record)."""
    try:
        data = json.loads(error_file.read_text())
        message = data.get("message", {})
        if isinstance(message, dict):
            text = str(message.get("message", "")).strip()
        else:
            text = str(message)
        return text.splitlines()[-1] if text else None
    except (OSError, ValueError, AttributeError):
        return None


def judge_smoke(
    spec: SmokeSpec,
    outcome: ProcessOutcome,
    verdict: dict[str, Any] | None,
    root_cause: str | None,
) -> CheckResult:
    """Turn one smoke run's exit status and JSON verdict into a check result."""
    title = f"Smoke test ({spec.label})"
    id = f"smoke_{spec.backend}_{spec.device}"
    data: dict[str, Any] = {
        "spec": {"backend": spec.backend, "nproc": spec.nproc, "device": spec.device},
        "wall_s": round(outcome.wall_s, 2),
    }
    tail = outcome.log_tail(8)
    hint_logs = f"full log: {outcome.log_path}"
    if outcome.timed_out:
        return failed(
            id,
            title,
            f"no result after {outcome.wall_s:.0f} s (hung rendezvous or collective); killed",
            f"{hint_logs}; check firewall/loopback and NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME",
            **data,
        )
    if outcome.returncode != 0 or verdict is None:
        cause = root_cause or (tail.splitlines()[-1] if tail else "no output")
        return failed(
            id,
            title,
            f"torchrun exited with {outcome.returncode}: {cause}",
            hint_logs,
            log_tail=tail,
            **data,
        )
    data["result"] = verdict
    if verdict.get("wrong_elements", 1) != 0 or not verdict.get("all_gather_ok", False):
        return failed(
            id,
            title,
            f"WRONG RESULTS: {verdict.get('wrong_elements')} wrong all_reduce element(s) "
            f"(expected {verdict.get('expected_value')}), all_gather ranks "
            f"{verdict.get('all_gather_ranks')}",
            "the collective library returns corrupt data: check the GPU (ECC), driver "
            "and NCCL version before training on this node",
            **data,
        )
    ms = verdict["seconds_per_all_reduce"] * 1e3
    detail = (
        f"all_reduce of {verdict['bytes'] // 2**20} MiB correct on {spec.nproc} rank(s): "
        f"{ms:.2f} ms each, busbw {verdict['busbw_gbps']:.2f} GB/s; all_gather correct; "
        f"{outcome.wall_s:.1f} s wall"
    )
    return passed(id, title, detail, **data)


def run_smoke(spec: SmokeSpec, timeout_s: float, base_env: dict[str, str]) -> CheckResult:
    """Run one smoke test for real; its logs are kept (and named) only when it fails."""
    workdir = Path(tempfile.mkdtemp(prefix="torchscale-validate-"))
    result_file = workdir / "result.json"
    argv, env = smoke_command(spec, result_file, base_env)
    outcome = run_logged(argv, env, workdir / "torchrun.log", timeout_s)
    verdict: dict[str, Any] | None = None
    if result_file.exists():
        try:
            verdict = json.loads(result_file.read_text())
        except ValueError:
            verdict = None
    cause = _root_cause(result_file.with_suffix(".error.json"))
    result = judge_smoke(spec, outcome, verdict, cause)
    if result.status is Status.PASS:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def check_smoke(ctx: ValidateContext, base_env: dict[str, str]) -> list[CheckResult]:
    if ctx.quick:
        return [skipped("smoke", "Smoke test", "--quick: live torchrun test not run")]
    if ctx.torch.module is None:
        return [skipped("smoke", "Smoke test", "needs torch, which could not be imported")]
    gpu_count = ctx.torch.cuda_gpu_count if ctx.device == "cuda" else 0
    return [
        run_smoke(spec, ctx.smoke_timeout_s, base_env) for spec in plan_smoke(ctx.device, gpu_count)
    ]
