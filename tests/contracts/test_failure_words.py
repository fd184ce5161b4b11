"""Why a cell measured nothing is stored as a code beside its evidence (`CellError.why`, the
rank, the exception, the signal, where each rank was) and worded when shown
(contracts/wording/cell_errors.py); the peaks' bases likewise (cell_reasons.py). The one-off
converter reads an older version's sentences back as the codes whose words they were."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, RankPlace, StackFrame
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_errors import hang_summary, place_line
from torchscale.contracts.wording.cell_reasons import peak_basis
from torchscale.orchestration.schedulers.slurm.driver import stop_reason

REPO = Path(__file__).resolve().parents[2]
OOM = "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"


def _converter() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "convert_results", REPO / "tools" / "convert_results.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("convert_results", module)
    spec.loader.exec_module(module)
    return module


def _error(code: str, **fields: Any) -> CellError:
    figures = fields.pop("figures", {})
    return CellError(why=Finding(code=code, figures=figures), **fields)


def _frame(function: str, file: str, line: int) -> StackFrame:
    return StackFrame(function=function, file=file, line=line)


FORWARD = RankPlace(rank=1, kind="code", frame=_frame("forward", "/m/fault_models.py", 39))
WAITING = RankPlace(
    rank=0,
    kind="collective",
    frame=_frame("all_reduce", "/t/distributed_c10d.py", 3252),
    caller=_frame("collective", "/m/hang_worker.py", 31),
)


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            _error("failure.raised", root_cause_rank=1, exception="RuntimeError: boom"),
            "rank 1 raised RuntimeError: boom",
        ),
        (
            _error("failure.raised", exception="RuntimeError: boom"),
            "a rank raised RuntimeError: boom",
        ),
        (_error("failure.oom", exception=OOM), f"out of memory: {OOM}"),
        (_error("failure.oom"), "out of memory: see log"),
        (
            _error(
                "failure.oom",
                exception=OOM,
                figures={
                    "torchrun_error": "JSONDecodeError: x",
                    "unparsed": True,
                    "unparsed_rank": 0,
                },
            ),
            f"out of memory: {OOM}; torchrun itself failed reading rank 0's error file, which "
            "did not parse (JSONDecodeError: x)",
        ),
        (
            _error("failure.torchrun", exception="ValueError: y"),
            "torchrun itself failed (ValueError: y); no rank left an error of its own",
        ),
        (
            _error(
                "failure.killed", root_cause_rank=1, exit_signal="SIGKILL", figures={"signum": 9}
            ),
            "rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg",
        ),
        (
            _error("failure.torchrun_killed", exit_signal="SIGUSR2", figures={"signum": 12}),
            "torchrun was killed by SIGUSR2 (signal 12)",
        ),
        (_error("failure.torchrun_exit", figures={"returncode": 2}), "torchrun exited with 2"),
        (
            _error("failure.timeout", places=[FORWARD, WAITING], figures={"limit_s": 40}),
            "killed after the 40 s cell timeout: rank 1 in forward (fault_models.py:39); "
            "rank 0 waiting in all_reduce",
        ),
        (
            _error(
                "failure.timeout",
                places=[RankPlace(rank=0, kind="unknown")],
                figures={"limit_s": 15},
            ),
            "killed after the 15 s cell timeout (hang or far slower than expected; no rank "
            "dumped its stack)",
        ),
    ],
)
def test_a_failure_is_worded_from_its_code_and_the_evidence_beside_it(
    error: CellError, words: str
) -> None:
    assert say(error.finding) == words
    # the evidence is stored once, beside the code, never among its figures
    assert not {"rank", "exception", "signal", "places"} & set(error.why.figures)


def test_the_finding_keeps_its_codes_own_figures_over_the_evidence() -> None:
    error = _error("slurm.stopped", exit_signal="SIGTERM", figures={"signal": "SIGTERM"})
    assert error.finding.figures == {"signal": "SIGTERM"}
    plain = _error("failure.torchrun_exit", figures={"returncode": 1})
    assert plain.finding == plain.why  # no evidence: the code as stored


def test_where_each_rank_was_is_worded_at_render() -> None:
    dumps = [p.model_dump() for p in (FORWARD, WAITING)]
    assert place_line(dumps[1]) == (
        "rank 0 waiting in all_reduce (distributed_c10d.py:3252), called from collective "
        "(hang_worker.py:31)"
    )
    library = RankPlace(rank=2, kind="library", frame=_frame("wait", "/usr/threading.py", 331))
    assert place_line(library.model_dump()) == (
        "rank 2 in wait (threading.py:331), no model or harness code on its stack"
    )
    assert place_line(RankPlace(rank=3, kind="library").model_dump()) == (
        "rank 3 dumped its stack, but no Python frame was running in it"
    )
    more = [*dumps, {**dumps[1], "rank": 2}, {**dumps[1], "rank": 4}]
    assert hang_summary(more) == (
        "rank 1 in forward (fault_models.py:39); ranks 0, 2, 4 waiting in all_reduce"
    )


def test_slurm_stops_and_ends_are_codes() -> None:
    assert say(stop_reason(10, 60)) == (
        "stopped before the Slurm job's time limit (SIGUSR1, the warning sent 60 s ahead): run "
        "again with torchscale benchmark --resume"
    )
    assert say(stop_reason(15)) == (
        "stopped by Slurm (SIGTERM): the job was cancelled, preempted or reached its time "
        "limit; run again with torchscale benchmark --resume"
    )
    ended = {"job_id": "7", "state": "TIMEOUT", "state_reason": "", "exit_code": "0:15"}
    during = Finding(code="slurm.ended_during", figures=ended)
    assert say(during) == "Slurm job 7 ended (TIMEOUT) while this cell ran (exit code 0:15)"
    stopped = stop_reason(10, None).model_dump()
    before = Finding(code="slurm.ended_before", figures={**ended, "stopped": stopped})
    assert say(before).startswith(
        "not run: Slurm job 7 ended (TIMEOUT) before this cell started: stopped before the "
        "Slurm job's time limit (SIGUSR1, the warning sent ? ahead)"
    )


def test_the_peaks_bases_are_worded_with_the_peak_beside_them() -> None:
    tf32 = [
        {"unit": "conv", "source": "c=True", "on": True},
        {"unit": "matmul", "source": "m=True", "on": True},
    ]
    spec = Finding(
        code="peak.spec",
        figures={"device": "Tesla V100", "row": "V100 SXM2", "dtype": "fp32", "tf32": tf32},
    )
    assert peak_basis(spec, 15.7) == (
        "Tesla V100 (as V100 SXM2): fp32 dense peak 15.7 TFLOP/s (cuDNN convolutions may use "
        "TF32: c=True; cuBLAS matmuls may use TF32: m=True; no TF32 units on this GPU)"
    )
    assert peak_basis(None, 15.7) is None


# sentences the kept fixtures' originals (005ce8bc) and older writers stored
OLD_REASONS = [
    ("rank 1 raised RuntimeError: injected failure on rank 1", "failure.raised"),
    ("device 'cuda' requested but no CUDA GPU is visible", "plan.no_gpu"),
    ("needs 2 GPUs; a node has 1", "plan.needs_gpus"),
    (f"out of memory: {OOM}", "failure.oom"),
    ("torchrun exited with 1", "failure.torchrun_exit"),
    (
        "rank 1 was killed by SIGKILL (signal 9), often the kernel's OOM killer: see dmesg",
        "failure.killed",
    ),
]


@pytest.mark.parametrize(("reason", "code"), OLD_REASONS)
def test_the_converter_reads_an_older_reason_as_the_code_it_said(reason: str, code: str) -> None:
    converted = _converter()._error({"reason": reason, "diagnosis": []}, 20)
    error = CellError.model_validate(converted)
    assert error.why.code == code
    words = say(error.finding)
    assert words == reason.replace("a node has", "this node has")  # today's words of it


def test_the_converter_reads_older_hang_lines_and_settings() -> None:
    converter = _converter()
    lines = [
        "rank 1 in forward (fault_models.py:39)",
        "rank 0 waiting in all_reduce (distributed_c10d.py:3252), called from collective "
        "(hang_worker.py:31)",
    ]
    old = {"reason": "killed after the 40 s cell timeout: ...", "diagnosis": lines}
    error = CellError.model_validate(converter._error(old, 20))
    assert [place_line(p.model_dump()) for p in error.places] == lines
    assert error.why == Finding(code="failure.timeout", figures={"limit_s": 40.0})
    settings = converter._settings(
        {
            "loss": "the model's loss compiled beside the model (inductor fuses ...)",
            "fsdp_units": "12 unit(s) + the root; ...",
            "cpu_binding": "local rank 0 bound to core(s) 0,1",
            "flop_count_step": "the cell's step ...",
            "model_parallel": {"tp_plan": "per transformer block: ...; sequence parallel: ..."},
        }
    )
    assert settings == {
        "loss": "compiled",
        "fsdp_units": 12,
        "cpu_binding": {"local_rank": 0, "cores": [0, 1]},
        "model_parallel": {"tp_plan": "transformer_blocks_sequence_parallel"},
    }


@pytest.mark.parametrize(
    "basis",
    [
        "NVIDIA H100 80GB HBM3 (as H100 SXM): bf16 dense peak 989 TFLOP/s",
        "NVIDIA H100 80GB HBM3: bf16 dense peak 989 TFLOP/s",
        "NVIDIA H100 80GB HBM3 (as H100 SXM): fp32 dense peak 67 TFLOP/s (no TF32: "
        "torch.backends.cuda.matmul.allow_tf32=False)",
    ],
)
def test_the_converter_reads_an_older_peak_basis_back_to_its_words(basis: str) -> None:
    peak = 67.0 if "fp32" in basis else 989.0
    coded = Finding.model_validate(_converter()._spec_peak(basis, 20))
    assert peak_basis(coded, peak) == basis
