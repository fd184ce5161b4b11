"""The library API runs a whole collective sweep without the CLI: `run_comm` resolves
the options (device, backend, ranks, threads: as benchmark cells are resolved), launches the
ranks through the one launch path, stores the result, prints nothing and returns it with the
exit code `torchscale comm` would set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.processes import processes_mentioning
from torchscale.api import CommOptions, CommRun, run_comm
from torchscale.contracts.errors import UsageError
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.orchestration.comm.planning import CPU_RANKS, CommPlan, plan_comm
from torchscale.orchestration.plan.nodes import Machine

CPU_NODE = Machine(gpu_count=0, cpu_cores=8)
GPU_NODE = Machine(gpu_count=4, cpu_cores=32)


@pytest.mark.slow  # a real 2-rank comm sweep under torchrun
def test_a_comm_sweep_from_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    options = CommOptions(
        gpus=2,
        ops="all_reduce,all_gather",
        min_bytes="1K",
        max_bytes=4096,
        iters=2,
        warmup=1,
        device="cpu",
        name="api",
    )
    run = run_comm(
        options,
        tmp_path,
        on_plan=lambda plan: seen.append(f"plan {plan.request.ranks} {plan.notes}"),
        on_start=lambda plan: seen.append(f"start {len(plan.launch.spec.sizes)}"),
    )
    assert seen == ["plan 2 []", "start 3"]
    assert run.exit_code == 0
    result = run.result
    assert result is not None and result.status == "ok", result
    assert (result.world_size, result.device, result.backend) == (2, "cpu", "gloo")
    assert [(r.op, r.size_bytes, r.status, r.wrong) for r in result.rows] == [
        (op, size, "ok", 0) for op in ("all_reduce", "all_gather") for size in (1024, 2048, 4096)
    ]
    # stored where `torchscale comm -o OUT --name api` stores it, read back as it was returned
    assert run.stored == tmp_path / "api" / "comm" / f"{result.id}.json"
    assert CommResult.model_validate_json(run.stored.read_text()) == result
    assert result.launch["argv"][-4:-1] == ["torchscale.rank.programs", "comm", "--spec"]
    assert capsys.readouterr().out == ""  # the library prints nothing
    assert not processes_mentioning(str(tmp_path))


def test_a_dry_run_resolves_and_writes_nothing(tmp_path: Path) -> None:
    run = run_comm(CommOptions(device="cpu", pairs_bytes="64K"), tmp_path, dry_run=True)
    assert (run.result, run.stored, run.exit_code) == (None, None, 0)
    assert run.plan is not None
    request = run.plan.request
    assert (request.ranks, request.max_bytes, request.pairs_bytes) == (CPU_RANKS, 2**26, 2**16)
    assert not any(tmp_path.iterdir())  # not even the experiment directory


def _plan(options: CommOptions, machine: Machine, tmp_path: Path) -> CommPlan:
    return plan_comm(options, machine, tmp_path, {"PATH": "/usr/bin:/bin"})


def test_device_backend_and_threads_resolve_as_for_cells(tmp_path: Path) -> None:
    on_cpu = _plan(CommOptions(), CPU_NODE, tmp_path)
    assert (on_cpu.request.device, on_cpu.request.backend) == ("cpu", "gloo")
    assert (on_cpu.request.ranks, on_cpu.request.omp_num_threads) == (CPU_RANKS, 4)
    assert on_cpu.notes == ["no CUDA GPU visible: gloo processes on CPU (--device cpu to silence)"]
    on_gpus = _plan(CommOptions(gpus=2), GPU_NODE, tmp_path)
    assert (on_gpus.request.device, on_gpus.request.backend) == ("cuda", "nccl")
    assert (on_gpus.request.ranks, on_gpus.request.omp_num_threads) == (2, 16)
    assert on_gpus.request.max_bytes == 2**30 and on_gpus.notes == []
    every_gpu = _plan(CommOptions(), GPU_NODE, tmp_path)
    assert every_gpu.request.ranks == 4


@pytest.mark.parametrize(
    ("options", "machine", "expected"),
    [
        (CommOptions(device="cuda"), CPU_NODE, "no CUDA GPU is visible"),
        (CommOptions(gpus=8), GPU_NODE, "--gpus 8: only 4 CUDA GPU(s) visible"),
        (CommOptions(iters=0), CPU_NODE, "--iters 0: must be at least 1"),
        (CommOptions(ops="gossip"), CPU_NODE, "unknown op 'gossip'"),
        (CommOptions(min_bytes="1M", max_bytes="1K"), CPU_NODE, "larger than"),
    ],
)
def test_what_cannot_run_is_one_usage_error(
    options: CommOptions, machine: Machine, expected: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=re.escape(expected)):
        _plan(options, machine, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_op_goes_with_import(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--op goes with --import"):
        run_comm(CommOptions(op="all_reduce"), tmp_path)


def test_a_failed_result_sets_exit_code_one() -> None:
    failed = CommResult(
        id="x",
        world_size=2,
        device="cpu",
        backend="gloo",
        dtype="float32",
        warmup_iters=1,
        iters=2,
        check=True,
        status="timeout",
    )
    assert CommRun(failed, None, None).exit_code == 1
    assert CommRun(None, None, None).exit_code == 0  # a dry run
